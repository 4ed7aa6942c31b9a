/**
 * `.env` support for `npm start`. Values already in the environment win over the file (the same
 * precedence as `node --env-file`), and the caller learns where each variable came from, so the
 * banner can say "WEBHOOK_SECRET from .env" without ever printing the value.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as util from 'node:util';

export type EnvSource = 'environment' | '.env' | 'default';

export interface LoadedEnv {
  /** Path of the file read, or undefined when there was none. */
  readonly file: string | undefined;
  /** Variables set from the file (not already in the environment). */
  readonly applied: readonly string[];
}

/**
 * Parses dotenv text: `KEY=value`, optional `export `, `#` comments, single/double quotes,
 * `\n` escapes inside double quotes. Used when Node lacks `util.parseEnv` (before 20.12).
 */
export const parseDotenv = (text: string): Record<string, string> => {
  const builtin = (util as { parseEnv?: (content: string) => Record<string, string> }).parseEnv;
  if (typeof builtin === 'function') return builtin(text);
  const out: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2];
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === '`') && value.indexOf(quote, 1) > 0) {
      value = value.slice(1, value.indexOf(quote, 1));
      if (quote === '"') value = value.replace(/\\n/g, '\n');
    } else {
      value = value.replace(/\s+#.*$/, '').trim();
    }
    out[match[1]] = value;
  }
  return out;
};

/** Reads `file` (if it exists) into `env`, never overriding a variable that is already set. */
export const loadDotenv = (file: string, env: NodeJS.ProcessEnv = process.env): LoadedEnv => {
  if (!existsSync(file)) return { file: undefined, applied: [] };
  const parsed = parseDotenv(readFileSync(file, 'utf8'));
  const applied: string[] = [];
  for (const [key, value] of Object.entries(parsed)) {
    if (env[key] === undefined) {
      env[key] = value;
      applied.push(key);
    }
  }
  return { file, applied };
};
