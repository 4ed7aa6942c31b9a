/**
 * The command line: argv to { command, values, positionals }, and the value parsers every command
 * shares (numbers, hours, ORDER_ID, seconds, URLs). Every bad value is a usage error (exit 2).
 */
import { parseArgs } from 'node:util';
import { COMMANDS, OPTIONS, commandSpec, usageError } from './commands';
import { CliError } from './output';

const parseWithOptions = (args: string[]) =>
  parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });

/** The flags of one command line, typed by the option table. */
export type Values = ReturnType<typeof parseWithOptions>['values'];

export interface CommandLine {
  readonly command: string;
  readonly values: Values;
  readonly positionals: string[];
}

export const parsePositiveNumber = (command: string, flag: string, raw: string | undefined): number => {
  const value = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isFinite(value) || value <= 0) {
    throw usageError(command, `--${flag} must be a positive number, got '${raw}'`);
  }
  return value;
};

/** Lease hours: a number above 0 and at most 720 (30 days), fractions allowed; the relay checks the same. */
export const parseHours = (command: string, flag: string, raw: string | undefined): number => {
  const value = parsePositiveNumber(command, flag, raw);
  if (value > 720) throw usageError(command, `--${flag} must be at most 720 hours, got '${raw}'`);
  return value;
};

/** The one ORDER_ID positional of the order commands. */
export const parseOrderId = (command: string, positionals: readonly string[]): number => {
  if (positionals.length !== 1) throw usageError(command, 'expected exactly one ORDER_ID');
  const id = positionals[0];
  if (!/^\d{1,15}$/.test(id) || Number(id) <= 0)
    throw usageError(command, `ORDER_ID must be a positive integer, got '${id}'`);
  return Number(id);
};

export const parseSeconds = (command: string, flag: string, raw: string | undefined, fallback: number): number =>
  raw === undefined ? fallback : parsePositiveNumber(command, flag, raw);

export const parseUrl = (command: string, flag: string, raw: string): URL => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(command, `${flag} must be an absolute http(s) URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(command, `${flag} must be an http(s) URL, got '${raw}'`);
  }
  return url;
};

/**
 * node:util's "Option '--max-price' argument is ambiguous" (a value starting with a dash) in words:
 * a negative number is a bad value, anything else looks like a forgotten value.
 */
const ambiguousValue = (message: string, argv: readonly string[]): string | undefined => {
  const flag = /^Option '(--[a-z-]+)' argument is ambiguous/.exec(message)?.[1];
  if (!flag) return undefined;
  const value = argv[argv.indexOf(flag) + 1];
  if (value !== undefined && value.trim() !== '' && Number.isFinite(Number(value)))
    return `${flag} must be a positive number, got '${value}'`;
  return `${flag} needs a value, got the option '${value}' (write ${flag}=${value} if that is the value)`;
};

/** Parses argv into { command, values, positionals }; throws CliError (exit 2) on bad flags. */
export const parseCommandLine = (argv: string[]): CommandLine => {
  let parsed: ReturnType<typeof parseWithOptions>;
  try {
    parsed = parseWithOptions(argv);
  } catch (error) {
    const raw = String((error as Error).message);
    const message = ambiguousValue(raw, argv) ?? raw.split('\n')[0].replace(/\. To specify a positional.*$/, '');
    throw usageError(
      argv.find((a) => !a.startsWith('-')),
      message,
    );
  }
  const [command, ...rest] = parsed.positionals;
  if (!command) {
    if (parsed.values.help) return { command: 'help', values: {}, positionals: [] };
    throw new CliError(
      `missing command. Commands: ${Object.keys(COMMANDS).join(', ')}. Run 'gpu-relay help' for details.`,
    );
  }
  const spec = commandSpec(command);
  if (!spec) throw new CliError(`unknown command '${command}'. Commands: ${Object.keys(COMMANDS).join(', ')}`);
  for (const name of Object.keys(parsed.values)) {
    if (!spec.options.includes(name as keyof typeof OPTIONS))
      throw usageError(command, `${command} does not take --${name}`);
  }
  return { command, values: parsed.values, positionals: rest };
};
