/**
 * esbuild options and plugins of the relay's Lambda bundles, in one place for RelayFunction
 * (lib/constructs/build-relay-bundle.ts), the bundle bench (bench/bundles.ts) and the stack reader
 * (scripts/stack.ts), so the bench measures what is deployed.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Plugin } from 'esbuild';
import {
  EXECUTION_ENDED_ENTRY,
  FLEET_WATCH_ENTRY,
  JOB_WORKER_ENTRY,
  ROUTES,
  WORKFLOW_TASKS,
} from '../../contract/routes';
import { NODE_BUNDLE_TARGET } from '../../contract/runtime';

/**
 * Import path → replacement module. The default credential chain is replaced by the environment
 * provider (lambdas/adapters/env-credentials.ts): Lambda always hands the role's credentials to the
 * function in its environment, and the full chain costs ~70 KB and a few ms of load per bundle.
 * Smithy's event-stream codec (~15 KB, loaded only for event-stream operations, which none of the
 * relay's clients has) is replaced by a module that throws (lambdas/adapters/no-event-streams.ts),
 * and the DynamoDB client's endpoint-discovery config (its EndpointCache with mnemonist's LRU cache:
 * ~2 KB after an earlier Map-based stand-in; no command the relay sends uses discovery) by one with
 * discovery off (lambdas/adapters/no-endpoint-discovery.ts).
 */
export const relayEsbuildAliases = (repoRoot: string): Readonly<Record<string, string>> => ({
  '@aws-sdk/credential-provider-node': path.join(repoRoot, 'lambdas', 'adapters', 'env-credentials.ts'),
  '@smithy/core/event-streams': path.join(repoRoot, 'lambdas', 'adapters', 'no-event-streams.ts'),
  '@aws-sdk/middleware-endpoint-discovery': path.join(repoRoot, 'lambdas', 'adapters', 'no-endpoint-discovery.ts'),
  // standardwebhooks' hash and base64 primitives, answered by node:crypto and Buffer (~12 KB less).
  'fast-sha256': path.join(repoRoot, 'lambdas', 'adapters', 'native-webhook-crypto.ts'),
  '@stablelib/base64': path.join(repoRoot, 'lambdas', 'adapters', 'native-webhook-crypto.ts'),
});

/**
 * Left out of every bundle: ssh2's optional native parts (its `sshcrypto.node` binding and
 * `cpu-features`), which it requires inside try/catch and replaces with pure JavaScript when absent.
 * ssh2 itself is imported by the CheckOrder handler only (READINESS_PROBE=ssh-login, issue 31 §4).
 * And `bowser`, the browser user-agent parser @aws-sdk/core imports with `import()` in browsers only:
 * with code splitting it became a 34 KB chunk in every function, never loaded in Node.js.
 */
export const RELAY_BUNDLE_EXTERNALS: readonly string[] = ['*.node', 'cpu-features', 'bowser'];

/**
 * ESM bundles need a real `require` for the CommonJS parts of the SDK, and `__dirname` for ssh2
 * (its poly1305 module reads it at load: without it the CheckOrder bundle fails to load with
 * "__dirname is not defined in ES module scope").
 */
export const RELAY_BUNDLE_BANNER =
  "import{createRequire}from'module';const require=createRequire(import.meta.url),__dirname=import.meta.dirname;";

/**
 * Minified without `keepNames` (BENCHMARKS.md §7, "Names"): keeping every function's and class's
 * name costs 24–28 KB per bundle (the job worker: 398 → 426 KB) and is not needed for behaviour
 * (every error class sets `name` itself; nothing reads `constructor.name`). A minified stack trace
 * is read back to source lines with `npm run stack` (scripts/stack.ts), which rebuilds the same
 * bundle with a source map.
 */
export const RELAY_BUNDLE_KEEP_NAMES = false;

/**
 * The kinds of function the bundle budgets are set per (issue 40 §1): `api`, the signed accept routes
 * and every API function a caller waits on; `workflow`, the Step Functions tasks and execution-ended;
 * `worker-watch-slack`, the job worker, the fleet watch and the Slack command (the functions with the
 * most dependencies: every store, Secrets Manager, SQS, Step Functions); `static`, the functions without
 * AWS SDK clients (`/health`, `/openapi.json`).
 */
export type RelayFunctionKind = 'api' | 'workflow' | 'worker-watch-slack' | 'static';

/** One kind's budget: what its cold start may load, and its module load as a multiple of the reference's. */
export interface RelayBundleBudget {
  /** Minified bytes of `index.mjs` and the chunks it imports statically (lazy chunks not counted). */
  readonly bytes: number;
  /** Module load (CPU, median of fresh processes) ÷ the reference bundle's, same run; none for `static`. */
  readonly loadRatio?: number;
}

/**
 * Bundle budgets per kind of function (issue 40 §1, restated on loads measured as Lambda loads them;
 * BENCHMARKS.md "Last run"). The reference (bench/reference-handler.ts) is a handler importing only the
 * DynamoDB DocumentClient and Powertools Logger, built and loaded the same way in the same run. Sizes
 * are checked by test/infra/relay-function-bundle.test.ts, sizes and loads by `npm run bench -- bundles`.
 */
export const RELAY_BUNDLE_BUDGETS: Readonly<Record<RelayFunctionKind, RelayBundleBudget>> = {
  api: { bytes: 330 * 1024, loadRatio: 1.8 },
  workflow: { bytes: 350 * 1024, loadRatio: 2.0 },
  'worker-watch-slack': { bytes: 360 * 1024, loadRatio: 2.2 },
  static: { bytes: 50 * 1024 },
};

const STATIC_ENTRIES = new Set(['health', 'openapi'].map((name) => `lambdas/handlers/api/${name}.ts`));
const WORKER_WATCH_SLACK_ENTRIES = new Set([
  JOB_WORKER_ENTRY,
  FLEET_WATCH_ENTRY,
  'lambdas/handlers/api/slack-command.ts',
]);
const WORKFLOW_ENTRIES = new Set([...Object.values(WORKFLOW_TASKS), EXECUTION_ENDED_ENTRY]);
const API_ENTRIES = new Set(ROUTES.map((route) => route.entry));

/** The kind of a deployed function by its handler entry; throws on an entry no table lists. */
export const relayFunctionKind = (entry: string): RelayFunctionKind => {
  if (STATIC_ENTRIES.has(entry)) return 'static';
  if (WORKER_WATCH_SLACK_ENTRIES.has(entry)) return 'worker-watch-slack';
  if (WORKFLOW_ENTRIES.has(entry)) return 'workflow';
  if (API_ENTRIES.has(entry)) return 'api';
  throw new Error(`${entry} is no deployed function: add it to contract/routes.ts`);
};

/** The budget of a deployed function by its handler entry. */
export const relayBundleBudget = (entry: string): RelayBundleBudget => RELAY_BUNDLE_BUDGETS[relayFunctionKind(entry)];

/**
 * The functions still over their kind's size, each with a ceiling a little above its measured size so
 * that it cannot grow unnoticed. Meant to stay empty: a function over its budget gets a seam (a lazy
 * chunk, a function of its own) rather than an entry here.
 */
export const OVER_BUDGET_CEILING_BYTES: Readonly<Record<string, number>> = {};

/** The size a function's start may weigh: its recorded ceiling while it is over budget, else its kind's budget. */
export const allowedStartBytes = (entry: string): number =>
  OVER_BUDGET_CEILING_BYTES[entry] ?? relayBundleBudget(entry).bytes;

/**
 * The modelled AWS SDK errors the relay tells apart by class (`instanceof`): their registrations are
 * kept (lambdas/adapters/aws-clients.ts, lambdas/adapters/secrets.ts; test/infra/sdk-errors-bundle.test.ts
 * fails on an `instanceof` of any other). The relay tells every other error by `name` or not at all.
 */
export const KEPT_SDK_ERRORS: readonly string[] = ['ConditionalCheckFailedException', 'ResourceNotFoundException'];

/** One error registration line of a generated client's schemas module: `n0_registry.registerError(X$, X);`. */
const ERROR_REGISTRATION = /^n0_registry\.registerError\((\w+)\$, \1\);$/gm;

/**
 * Drops the registration of every modelled error but KEPT_SDK_ERRORS from each AWS SDK client's
 * schemas module. A registration is a module-level call, so esbuild kept every error class and
 * error schema of a client in every bundle that sent one command (DynamoDB: 35 classes, ~13 KB).
 * An error the client does not know is what the SDK does with an error a newer service version
 * added: the client's ServiceException with `name` set to the error code, the message, `$fault` and
 * `$metadata`, and the answer's fields copied on (@aws-sdk/core ProtocolLib
 * `getErrorSchemaOrThrowBaseException`). Retries classify errors by name and status, so they are
 * unchanged. A schemas module with no registration matched fails the build: the SDK changed shape.
 */
const sdkErrorsUnregistered = (kept: ReadonlySet<string>): Plugin => ({
  name: 'relay-sdk-errors-unregistered',
  setup(build) {
    build.onLoad(
      { filter: /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_0\.js$/ },
      async (args) => {
        const source = await readFile(args.path, 'utf8');
        let matched = 0;
        const contents = source.replace(ERROR_REGISTRATION, (line, name: string) => {
          matched += 1;
          return kept.has(name) ? line : '';
        });
        if (matched === 0) {
          return { errors: [{ text: `no error registration found in ${args.path}: update relay-bundling.ts` }] };
        }
        return { contents, loader: 'js' };
      },
    );
  },
});

/**
 * Reads an AWS SDK package's package.json as its `version` alone: each client imports its
 * package.json for the version in its user agent, and esbuild inlined the whole file (~2 KB each).
 */
const sdkPackageVersionOnly: Plugin = {
  name: 'relay-sdk-package-version-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]@aws-sdk[\\/][^\\/]+[\\/]package\.json$/ }, async (args) => {
      const { version } = JSON.parse(await readFile(args.path, 'utf8')) as { version?: unknown };
      return { contents: JSON.stringify({ version }), loader: 'json' };
    });
  },
};

/** The import of @middy/core's index.js that middyWebStreamsOnUse replaces. */
const MIDDY_WEB_STREAMS_IMPORT = 'import { ReadableStream } from "node:stream/web";';

/**
 * @middy/core imports `ReadableStream` from `node:stream/web` for one `instanceof` in its response
 * streaming path (`streamifyResponse`, which no relay function uses), and that import loads Node's
 * web streams (stream/web and six internal modules, none of which the Lambda runtime has loaded):
 * ~3.7 M instructions of every function's module load (BENCHMARKS.md §15, "Third pass"). The import
 * becomes an object whose `instanceof` asks Node's global `ReadableStream` (the same class, defined
 * lazily), so the web streams load only if a streamed response is ever checked. A middy whose
 * index.js lacks that exact import fails the build: middy changed shape.
 */
const middyWebStreamsOnUse: Plugin = {
  name: 'relay-middy-web-streams-on-use',
  setup(build) {
    build.onLoad({ filter: /[\\/]@middy[\\/]core[\\/]index\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes(MIDDY_WEB_STREAMS_IMPORT)) {
        return { errors: [{ text: `no node:stream/web import found in ${args.path}: update relay-bundling.ts` }] };
      }
      const contents = source.replace(
        MIDDY_WEB_STREAMS_IMPORT,
        'const ReadableStream = { [Symbol.hasInstance]: (value) => value instanceof globalThis.ReadableStream };',
      );
      return { contents, loader: 'js' };
    });
  },
};

/**
 * The bundles' esbuild plugins (BENCHMARKS.md §14). Plugins need esbuild's JavaScript API, which is
 * why RelayFunction bundles through lib/constructs/build-relay-bundle.ts rather than NodejsFunction's
 * esbuild command line.
 */
export const relayEsbuildPlugins = (): Plugin[] => [
  sdkErrorsUnregistered(new Set(KEPT_SDK_ERRORS)),
  sdkPackageVersionOnly,
  middyWebStreamsOnUse,
];

/** The Node.js version Lambda runs the bundles on (RelayFunction's runtime), as an esbuild target. */
export const RELAY_BUNDLE_TARGET = NODE_BUNDLE_TARGET;

/**
 * RelayFunction's bundling as esbuild API options, for the tools that must build what is deployed:
 * the bundle bench (bench/bundles.ts, run on the same Node major) and the stack reader
 * (scripts/stack.ts), and for RelayFunction itself (lib/constructs/build-relay-bundle.ts).
 * Everything is bundled (Powertools, middy, the AWS SDK v3) rather than the runtime's copy used.
 */
export const relayBuildOptions = (repoRoot: string) => ({
  bundle: true,
  minify: true,
  keepNames: RELAY_BUNDLE_KEEP_NAMES,
  platform: 'node' as const,
  target: RELAY_BUNDLE_TARGET,
  format: 'esm' as const,
  mainFields: ['module', 'main'],
  banner: { js: RELAY_BUNDLE_BANNER },
  alias: { ...relayEsbuildAliases(repoRoot) },
  external: [...RELAY_BUNDLE_EXTERNALS],
  plugins: relayEsbuildPlugins(),
});

/** A built function: the modules Lambda loads at start, and what it imports later (dynamic `import()`). */
export interface RelayBundleBytes {
  /** `index.mjs` and the chunks it imports statically: what every cold start loads; the budget applies to it. */
  readonly startBytes: number;
  /** The chunks of dynamic imports (CheckOrder's ssh2), loaded only when the code that imports them runs. */
  readonly lazyBytes: number;
  /** Those chunks' output paths, as esbuild's metafile names them. */
  readonly lazyFiles: readonly string[];
}

/**
 * The options that build one function's bundle as deployed: `<outdir>/index.mjs`, plus a chunk per
 * dynamic `import()` (esbuild code splitting), so a module the function loads only on a rare path
 * (CheckOrder's ssh2, READINESS_PROBE=ssh-login) is not parsed at every cold start. Used by
 * RelayFunction (build-relay-bundle.ts), the bench and the stack reader.
 */
export const relayBundleOptions = (repoRoot: string, entry: string, outdir: string) => ({
  ...relayBuildOptions(repoRoot),
  entryPoints: [path.join(repoRoot, entry)],
  outdir,
  splitting: true,
  entryNames: 'index',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
});

type BundleOutputs = Readonly<
  Record<
    string,
    { readonly bytes: number; readonly imports: readonly { path: string; kind: string; external?: boolean }[] }
  >
>;

/** Start and lazy bytes of a bundle from its esbuild metafile outputs (source maps left out). */
export const relayBundleBytes = (outputs: BundleOutputs): RelayBundleBytes => {
  const files = Object.keys(outputs).filter((file) => file.endsWith('.mjs'));
  const index = files.find((file) => path.basename(file) === 'index.mjs');
  const start = new Set<string>();
  const visit = (file: string): void => {
    if (start.has(file) || !outputs[file]) return;
    start.add(file);
    for (const i of outputs[file].imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  if (index) visit(index);
  let startBytes = 0;
  let lazyBytes = 0;
  const lazyFiles: string[] = [];
  for (const file of files) {
    if (start.has(file)) startBytes += outputs[file].bytes;
    else {
      lazyBytes += outputs[file].bytes;
      lazyFiles.push(file);
    }
  }
  return { startBytes, lazyBytes, lazyFiles };
};
