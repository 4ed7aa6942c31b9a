/**
 * `npm start`: the whole relay on one machine, no AWS account and no Docker. Reads the shell
 * environment and `.env`, starts the local runtime, prints a banner and stops cleanly on Ctrl-C.
 */
import * as path from 'node:path';
import { loadDotenv } from './dotenv';
import { publishLocalRelay } from './local-relay-file';
import type { EnvSource } from './dotenv';
import { nodeRuntimeMismatch } from './node-runtime';
import { PLACEHOLDER_WEBHOOK_SECRET, startLocalRuntime } from './runtime';
import { DEFAULT_STATE_DIR, StateVersionError } from './state-dir';
import { isLoopbackUrl } from '../contract/local-relay-file';
import { parseDialect } from './simulator/dialect';
import type { LocalRuntime } from './runtime';

const sourceOf = (key: string, before: ReadonlySet<string>, fromFile: ReadonlySet<string>): EnvSource =>
  before.has(key) ? 'environment' : fromFile.has(key) ? '.env' : 'default';

/** A folder relative to the working directory when inside it, else absolute. */
const shortPath = (dir: string): string => {
  const relative = path.relative(process.cwd(), dir);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : dir;
};

/** Where a setting came from, in words; never the value. */
const describe = (key: string, source: EnvSource, fallback: string): string =>
  source === 'default' ? fallback : `${key} from ${source === '.env' ? '.env' : 'the environment'}`;

/**
 * The start-up banner. Exported for tests; it never contains a configured secret value. The one
 * exception is a callback signing secret the runtime generated itself (CALLBACK_SIGNING_SECRET unset):
 * it exists nowhere else and receivers need it to verify callbacks, so it is shown once, here.
 */
export const banner = (runtime: LocalRuntime, sources: Readonly<Record<string, EnvSource>>): string => {
  const placeholder = runtime.env.WEBHOOK_SECRET === PLACEHOLDER_WEBHOOK_SECRET;
  const generatedCallbackSecret =
    (sources.CALLBACK_SIGNING_SECRET ?? 'default') === 'default' ? runtime.env.CALLBACK_SIGNING_SECRET : undefined;
  // A runtime built by hand (tests) may carry a simulator without a dialect: that is the spec's.
  const dialect = (runtime.simulator as { dialect?: string } | undefined)?.dialect ?? 'spec';
  const dialectSource = sources.MARKETPLACE_DIALECT ?? 'default';
  const marketplace = runtime.simulator
    ? `embedded simulator at ${runtime.simulator.url}, dialect ${dialect}${dialectSource === 'default' ? '' : ` (${describe('MARKETPLACE_DIALECT', dialectSource, '')})`}`
    : isLoopbackUrl(runtime.env.MARKETPLACE_URL)
      ? `${new URL(runtime.env.MARKETPLACE_URL).origin} (MARKETPLACE_URL, on this machine)`
      : `PRODUCTION ${new URL(runtime.env.MARKETPLACE_URL).origin} (MARKETPLACE_URL): orders are real and billed`;
  const state = runtime.state
    ? `kept in ${shortPath(runtime.state.dir)} (STATE_DIR)${runtime.state.created ? ', new' : `, carried on: ${runtime.state.resumedExecutions.length} workflow(s), ${runtime.state.restoredJobs} job(s)`}`
    : 'in memory: gone when the relay stops';
  const bound = runtime.env.HOST && runtime.env.HOST !== '127.0.0.1' ? `  (bound to ${runtime.env.HOST}, HOST)` : '';
  const chat = (key: string, name: string) =>
    runtime.env[key]
      ? `${name}: ${describe(key, sources[key] ?? 'default', 'set')}`
      : `${name}: not set (notifications skipped)`;
  const lines = [
    '',
    '  GPU Order Relay — local runtime',
    `  API          ${runtime.url}  (try ${runtime.url}/health)${bound}`,
    `  Marketplace  ${marketplace}`,
    `  State        ${state}`,
    `  Secrets      webhook secret: ${placeholder ? 'PLACEHOLDER (built-in default)' : describe('WEBHOOK_SECRET', sources.WEBHOOK_SECRET ?? 'default', 'set')}`,
    `               marketplace API key: ${runtime.simulator && (sources.MARKETPLACE_API_KEY ?? 'default') === 'default' ? "the simulator's key" : describe('MARKETPLACE_API_KEY', sources.MARKETPLACE_API_KEY ?? 'default', 'set')}`,
    `               callback signing secret: ${generatedCallbackSecret ? (runtime.state ? 'GENERATED and kept with the state (below)' : 'GENERATED for this run (below)') : describe('CALLBACK_SIGNING_SECRET', sources.CALLBACK_SIGNING_SECRET ?? 'default', 'set')}`,
    `               ${chat('SLACK_WEBHOOK_URL', 'Slack')}; ${chat('DISCORD_WEBHOOK_URL', 'Discord')}`,
    `  Stand-ins    DynamoDB ${runtime.dynamo.endpoint} (dynalite) · SQS ${runtime.sqs.endpoint} (fauxqs) · Step Functions (local ASL)`,
    `  IAM checks   ${runtime.iam.mode === 'enforce' ? 'enforce: calls the stack would refuse fail with AccessDeniedException' : runtime.iam.mode === 'report' ? 'report: calls the stack would refuse are logged ([iam]), not refused (IAM_CHECKS=enforce refuses them)' : 'off (IAM_CHECKS=off)'}`,
    `  Started in   ${runtime.timings.total} ms. Ctrl-C stops everything.`,
    '',
  ];
  if (generatedCallbackSecret) {
    lines.push(
      ...(runtime.state
        ? [
            '  Callbacks are signed per Standard Webhooks with a key generated with this state; verify them with',
            `    CALLBACK_SIGNING_SECRET=${generatedCallbackSecret}`,
            '  (kept in the state folder until it is reset: put a value of your own in .env to choose it)',
          ]
        : [
            '  Callbacks are signed per Standard Webhooks with a key generated for this run; verify them with',
            `    CALLBACK_SIGNING_SECRET=${generatedCallbackSecret}`,
            '  (it changes on every start: put a value of your own in .env to keep it, e.g.',
            '   echo "CALLBACK_SIGNING_SECRET=whsec_$(openssl rand -base64 32)" >> .env)',
          ]),
      '',
    );
  }
  if (placeholder) {
    lines.push(
      '  ############################################################################',
      '  #  WARNING: WEBHOOK_SECRET is the built-in PLACEHOLDER. Anyone can sign     #',
      '  #  requests with it. Set WEBHOOK_SECRET in the environment or in .env.      #',
      '  ############################################################################',
      '',
    );
  }
  return lines.join('\n');
};

const main = async (): Promise<void> => {
  const before = new Set(Object.keys(process.env));
  const dotenv = loadDotenv(path.resolve(process.cwd(), '.env'));
  const fromFile = new Set(dotenv.applied);
  const keys = [
    'WEBHOOK_SECRET',
    'CALLBACK_SIGNING_SECRET',
    'MARKETPLACE_API_KEY',
    'SLACK_WEBHOOK_URL',
    'DISCORD_WEBHOOK_URL',
    'MARKETPLACE_URL',
    'PORT',
    'MARKETPLACE_DIALECT',
    'STATE_DIR',
  ];
  const sources = Object.fromEntries(keys.map((k) => [k, sourceOf(k, before, fromFile)]));

  const port = Number(process.env.PORT || '5000');
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be an integer 0-65535, got ${process.env.PORT}`);
  parseDialect(process.env.MARKETPLACE_DIALECT);
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--fresh');
  if (unknown.length > 0) throw new Error(`unknown option ${unknown[0]} (npm start accepts --fresh)`);

  // The embedded simulator (no MARKETPLACE_URL) lists the servers the docs' examples rent (issue 28).
  const runtime = await startLocalRuntime({
    port,
    stateDir: path.resolve(process.cwd(), process.env.STATE_DIR || DEFAULT_STATE_DIR),
    fresh: args.includes('--fresh'),
    ...(process.env.MARKETPLACE_URL ? {} : { simulator: { docsServers: true } }),
  });
  // The CLI's quick path: `npx gpu-relay …` with nothing set reads the URL and secrets from this card
  // (on this machine only: a relay bound to another address is reached with --url).
  const card = isLoopbackUrl(runtime.url) ? publishLocalRelay(runtime, process.cwd()) : undefined;
  process.on('exit', () => card?.remove());
  console.log(banner(runtime, sources));
  console.log(
    card
      ? `  CLI          npx gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait\n               (URL and secrets from ${path.relative(process.cwd(), card.file)}, mode 0600, removed on stop)\n`
      : `  CLI          npx gpu-relay --url ${runtime.url} create-order --gpu "RTX 4090" --max-price 0.5 --wait\n`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      console.error(`\n${signal} again: exiting without waiting.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`\n${signal}: stopping…`);
    card?.remove();
    runtime.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('stop failed:', error instanceof Error ? error.message : error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
};

if (require.main === module) {
  const mismatch = nodeRuntimeMismatch(process.versions.node);
  if (mismatch) {
    console.error(`npm start refused: ${mismatch}`);
    process.exit(1);
  }
  main().catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`npm start failed: ${message}`);
    if (/EADDRINUSE/.test(message)) console.error('The port is taken: set PORT to another value.');
    if (error instanceof StateVersionError) console.error('Nothing was changed in the state folder.');
    process.exit(1);
  });
}
