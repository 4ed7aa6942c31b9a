/**
 * Bench 1: what a cold start pays, per function.
 *
 * - Bundle size (esbuild, minified, the same options as RelayFunction) and, from the metafile, the
 *   ten heaviest modules in the output (node_modules grouped by package, our code by folder).
 * - Module load: in a fresh Node process that has loaded what the Lambda runtime loads before a
 *   handler (LAMBDA_RUNTIME_BUILTINS), the time to `import()` the bundle; median of LOAD_RUNS
 *   processes (wall time, and the CPU time of the same import), and its CPU time's ratio to the
 *   reference bundle's measured in the same run
 *   (bench/reference-handler.ts: DocumentClient and Powertools Logger only, built the same way; an
 *   empty handler loads in under a millisecond on Node 24, so a ratio to it measured nothing).
 *   Processes of the reference and the functions alternate, so a busy moment of the machine falls
 *   on both.
 * - Lazy chunks: after that first call, in the same process, the CPU time of importing every chunk of
 *   a dynamic import the call did not load (outbid recovery, the ledger's settlement, ssh2, …): what
 *   the first call that takes a rare path adds to its cold start, beside the load it was taken out of.
 * - First invocation after load, in the same fresh process: the handler called once with a
 *   representative event (bench/cold-start-events.ts), its clients created on the way and pointed
 *   at in-process fakes: Secrets Manager and Step Functions (bench/fake-aws.ts), DynamoDB
 *   (dynalite), SQS (fauxqs), the marketplace (simulator), callbacks (the fake's `/callback`).
 *
 * The child runs Lambda-like (AWS_EXECUTION_ENV, LAMBDA_TASK_ROOT, a trace header, the X-Ray daemon
 * address on a local UDP socket), so anything that would send X-Ray segment documents from inside the
 * function does so as in AWS, and they are counted (0 since the functions rely on Lambda active
 * tracing alone). BENCH_TRACING=off runs the children as a local process instead.
 * BENCH_ENTRIES=create-order,openapi limits the functions (substring match on the entry).
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { LAMBDA_NODE_RUNTIME } from '../contract/runtime';
import {
  RELAY_BUNDLE_BUDGETS,
  relayBundleBudget,
  relayBundleBytes,
  relayBundleOptions,
  relayFunctionKind,
  type RelayFunctionKind,
} from '../lib/constructs/relay-bundling';
import { HANDLER_ENTRIES } from '../lib/routes';
import { startLocalDynamo } from '../local/dynalite';
import { startLocalSqs } from '../local/fauxqs';
import { startSimulator } from '../local/simulator/marketplace-simulator';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbTaskRepository } from '../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { firstInvocation, type EventContext, type FirstInvocation } from './cold-start-events';
import { startFakeAws } from './fake-aws';

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'bench', 'out', 'bundles');

/**
 * What Lambda puts in a function's environment (credentials are fake; nothing reaches AWS) for a
 * bundle in `taskRoot`; with an X-Ray daemon address, the variables of an active-tracing function too.
 */
export const lambdaEnv = (taskRoot: string, xrayDaemonAddress?: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'AKIDBENCH',
  AWS_SECRET_ACCESS_KEY: 'bench-secret-key',
  AWS_SESSION_TOKEN: 'bench-session-token',
  AWS_LAMBDA_FUNCTION_NAME: 'bench',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
  ...(xrayDaemonAddress !== undefined
    ? {
        AWS_EXECUTION_ENV: `AWS_Lambda_${LAMBDA_NODE_RUNTIME}`,
        LAMBDA_TASK_ROOT: taskRoot,
        _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
        AWS_XRAY_DAEMON_ADDRESS: xrayDaemonAddress,
        AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
      }
    : {}),
});
const LOAD_RUNS = 5;
/** Reference processes before the first function and after each one. */
const REFERENCE_RUNS_BETWEEN = 2;
const REFERENCE_ENTRY = 'bench/reference-handler.ts';
const TOP_MODULES = 10;
const KB = 1024;

export interface ModuleShare {
  /** An npm package (`@smithy/core`, `zod`) or a folder of ours (`lambdas/adapters`). */
  readonly module: string;
  readonly bytes: number;
}

export interface BundleFigure {
  readonly entry: string;
  /** Its kind (RelayFunctionKind), which sets its budgets. */
  readonly kind: RelayFunctionKind;
  /** What its cold start loads: index.mjs and the chunks it imports statically. */
  readonly bytes: number;
  /** Chunks of dynamic imports, loaded only when the code importing them runs (CheckOrder's ssh2). */
  readonly lazyBytes: number;
  readonly usesAwsSdk: boolean;
  readonly loadMsMedian: number;
  /** The CPU time (user + system) of the same `import()`s, median. */
  readonly loadCpuMsMedian: number;
  /**
   * loadCpuMsMedian ÷ the reference bundle's, same run. CPU time rather than wall time: on a machine
   * shared with other jobs the wall time of a load measures the wait for a core as much as the load
   * (one shared run measured 377 ms of wall time for the reference's 30 ms load).
   */
  readonly loadRatio: number;
  /** The first handler call after load, median over the same fresh processes. */
  readonly firstInvocationMsMedian: number;
  /** CPU time of importing, after the first call, the lazy chunks it did not load; median; 0 without lazy chunks. */
  readonly lazyChunksCpuMsMedian: number;
  /** What that call answered (HTTP status, step result keys, or the error): a sanity check, not a figure. */
  readonly firstInvocationOutcome: string;
  /** X-Ray segment documents sent during load + first call (0 when tracing is off). */
  readonly traceDocuments: number;
  /** Its kind's size budget (RELAY_BUNDLE_BUDGETS). */
  readonly budgetBytes: number;
  /** Its kind's load budget, × the reference's; absent for `static`. */
  readonly budgetLoadRatio?: number;
  /** Size within its kind's budget and load ≤ its kind's ratio × the reference's. */
  readonly withinBudget: boolean;
  readonly topModules: readonly ModuleShare[];
}

export interface BundlesResult {
  readonly tracing: boolean;
  /** The reference bundle (bench/reference-handler.ts): size, and load and first call medians. */
  readonly reference: {
    readonly bytes: number;
    readonly loadMsMedian: number;
    readonly loadCpuMsMedian: number;
    readonly firstInvocationMsMedian: number;
  };
  readonly budgets: typeof RELAY_BUNDLE_BUDGETS;
  readonly bundles: BundleFigure[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The package (or our folder) an esbuild input path belongs to. */
export const moduleOf = (input: string): string => {
  const at = input.lastIndexOf('node_modules/');
  if (at >= 0) {
    const parts = input.slice(at + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const parts = input.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0];
};

/** The heaviest modules of one output, by bytes they contribute to it (after tree-shaking and minifying). */
export const topModules = (output: Metafile['outputs'][string], n = TOP_MODULES): ModuleShare[] => {
  const bytes = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const m = moduleOf(input);
    bytes.set(m, (bytes.get(m) ?? 0) + bytesInOutput);
  }
  return [...bytes]
    .map(([module, b]) => ({ module, bytes: b }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, n);
};

/** Built as RelayFunction builds it (relayBundleOptions): `<outdir>/index.mjs` and its chunks. */
const bundle = async (
  entry: string,
  outdir: string,
): Promise<{
  bytes: number;
  lazyBytes: number;
  lazyFiles: string[];
  usesAwsSdk: boolean;
  topModules: ModuleShare[];
}> => {
  const result = await build({
    // Lambda's target (node24) is also the Node running the bench (test/unit/node-runtime.test.ts).
    ...relayBundleOptions(ROOT, entry, outdir),
    sourcemap: false,
    metafile: true,
    logLevel: 'silent',
  });
  const index = Object.entries(result.metafile.outputs).find(([file]) => path.basename(file) === 'index.mjs');
  if (!index) throw new Error(`no index.mjs built for ${entry}`);
  const usesAwsSdk = Object.keys(result.metafile.inputs).some((p) => p.includes('@aws-sdk/client-'));
  const { startBytes, lazyBytes, lazyFiles } = relayBundleBytes(result.metafile.outputs);
  return {
    bytes: startBytes,
    lazyBytes,
    lazyFiles: lazyFiles.map((file) => path.resolve(ROOT, file)),
    usesAwsSdk,
    topModules: topModules(index[1]),
  };
};

/**
 * Node's own modules the Lambda runtime has loaded before it imports a handler: the runtime
 * interface client requires them at start (aws/aws-lambda-nodejs-runtime-interface-client, src/*.js
 * at da5777a: RAPIDClient.js `http`, ResponseStream.js `net`, InvokeContext.js `assert`, Errors.js
 * and LogPatch.js `util` and `fs`, UserFunction.js `path` and `module`). A fresh process loads them
 * first too, untimed, so a bundle that imports one is not charged for it: node:http alone is
 * ~35 ms of CPU in a process that has not loaded it (measured on Node 24 here), and nothing in Lambda.
 */
export const LAMBDA_RUNTIME_BUILTINS: readonly string[] = ['assert', 'fs', 'http', 'module', 'net', 'path', 'util'];

/**
 * The fresh process: loads what the Lambda runtime has loaded (LAMBDA_RUNTIME_BUILTINS), imports
 * the bundle (timed), then calls `handler` once with BENCH_EVENT (timed), prints one BENCH_RESULT
 * line. It waits a moment before exiting so the UDP segment documents leave.
 */
const CHILD = `
await Promise.all(${JSON.stringify(LAMBDA_RUNTIME_BUILTINS)}.map((name) => import('node:' + name)));
const c0 = process.cpuUsage();
const t0 = performance.now();
const mod = await import(process.env.BENCH_BUNDLE);
const loadMs = performance.now() - t0;
const c1 = process.cpuUsage(c0);
const loadCpuMs = (c1.user + c1.system) / 1000;
const context = { callbackWaitsForEmptyEventLoop: true, functionName: 'bench', functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench', memoryLimitInMB: '512',
  awsRequestId: 'bench-request', logGroupName: '/aws/lambda/bench', logStreamName: 'bench',
  getRemainingTimeInMillis: () => 10000, done() {}, fail() {}, succeed() {} };
const event = JSON.parse(process.env.BENCH_EVENT);
let outcome;
const t1 = performance.now();
try {
  const r = await mod.handler(event, context);
  if (r && typeof r === 'object' && 'statusCode' in r) outcome = 'HTTP ' + r.statusCode + (r.statusCode >= 400 ? ' ' + String(r.body).slice(0, 100) : '');
  else if (r && typeof r === 'object' && Array.isArray(r.batchItemFailures)) outcome = 'batchItemFailures ' + r.batchItemFailures.length;
  else outcome = JSON.stringify(r).slice(0, 100);
} catch (e) {
  outcome = 'threw ' + (e && e.name) + ': ' + String(e && e.message).slice(0, 100);
}
const firstMs = performance.now() - t1;
const c2 = process.cpuUsage();
for (const chunk of JSON.parse(process.env.BENCH_CHUNKS ?? '[]')) await import(chunk);
const c3 = process.cpuUsage(c2);
const lazyChunksCpuMs = (c3.user + c3.system) / 1000;
await new Promise((r) => setTimeout(r, 30));
console.log('BENCH_RESULT ' + JSON.stringify({ loadMs, loadCpuMs, firstMs, lazyChunksCpuMs, outcome }));
process.exit(0);
`;

interface ChildResult {
  loadMs: number;
  loadCpuMs: number;
  firstMs: number;
  lazyChunksCpuMs: number;
  outcome: string;
}

const run = promisify(execFile);

const coldStart = async (
  file: string,
  event: unknown,
  env: NodeJS.ProcessEnv,
  lazyChunks: readonly string[] = [],
): Promise<ChildResult> => {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHILD], {
    env: { ...env, BENCH_BUNDLE: file, BENCH_EVENT: JSON.stringify(event), BENCH_CHUNKS: JSON.stringify(lazyChunks) },
    maxBuffer: 16 * KB * KB,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
  if (!line) throw new Error(`no result from ${file}: ${stdout.slice(-500)}`);
  return JSON.parse(line.slice('BENCH_RESULT '.length)) as ChildResult;
};

const SECRET_ARN = (name: string) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/${name}-AbCdEf`;

export const benchBundles = async (): Promise<BundlesResult> => {
  mkdirSync(OUT, { recursive: true });
  const tracing = process.env.BENCH_TRACING !== 'off';
  const only = process.env.BENCH_ENTRIES?.split(',').filter(Boolean);
  const entries = HANDLER_ENTRIES.filter((e) => !only || only.some((o) => e.includes(o)));
  const outdirOf = (entry: string) => path.join(OUT, entry.replace(/[\\/]/g, '_').replace(/\.ts$/, ''));
  const outfileOf = (entry: string) => path.join(outdirOf(entry), 'index.mjs');
  // esbuild runs the builds concurrently; only the timed processes below run one at a time.
  const referenceFile = outfileOf(REFERENCE_ENTRY);
  const [reference, ...built] = await Promise.all([
    bundle(REFERENCE_ENTRY, outdirOf(REFERENCE_ENTRY)),
    ...entries.map((entry) => bundle(entry, outdirOf(entry))),
  ]);

  const secrets = { webhook: 'bench-webhook-secret', slack: 'bench-slack-secret' };
  const [dynamo, sqs, sim] = await Promise.all([
    startLocalDynamo(),
    startLocalSqs(),
    startSimulator({ rateLimit: false, readyDelayMs: 0 }),
  ]);
  // Read by the fake per request, so the chat secret can name the fake's own address below.
  const secretValues: Record<string, string> = {
    [SECRET_ARN('webhook')]: secrets.webhook,
    [SECRET_ARN('marketplace')]: sim.apiKey,
    [SECRET_ARN('slack')]: secrets.slack,
    // The stack gives every signed route the caller-keys secret (it seals a task's access secrets and
    // kept env), and PlaceOrder / CheckOrder the root-password key; without them the first call of
    // create-order and price-alert measured a 503 hand-off failure instead of the accepted request.
    [SECRET_ARN('callerKeys')]: 'bench-caller-keys-secret',
    [SECRET_ARN('sshPassword')]: 'bench-ssh-password-secret',
    [SECRET_ARN('callback')]: `whsec_${Buffer.from('bench-callback-signing-secret-32b').toString('base64')}`,
  };
  const fake = await startFakeAws(secretValues);
  try {
    const callbackUrl = `${fake.endpoint}/callback`;
    secretValues[SECRET_ARN('chat')] = JSON.stringify({ slack_webhook_url: callbackUrl });
    const server =
      sim.control.servers().find((s) => s.online && !s.rented && s.gpu_array.some((g) => g.includes('RTX'))) ??
      sim.control.servers()[0];
    const ctx: EventContext = {
      webhookSecret: secrets.webhook,
      slackSigningSecret: secrets.slack,
      callbackUrl,
      server: { id: server.id, gpu_array: server.gpu_array, price_usd: server.price.usd.on_demand_native ?? null },
      queueArn: sqs.queueArn,
    };
    const env: NodeJS.ProcessEnv = {
      ...lambdaEnv(OUT, tracing ? fake.daemonAddress : undefined),
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      AWS_ENDPOINT_URL_SFN: fake.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: fake.endpoint,
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
      // The relay's environment contract, secrets by ARN as deployed.
      TABLE_NAME: dynamo.tableName,
      STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:CreateOrder',
      JOB_QUEUE_URL: sqs.queueUrl,
      MARKETPLACE_URL: sim.url,
      MARKETPLACE_MIN_INTERVAL_MS: '0',
      MARKETPLACE_CREATE_INTERVAL_MS: '0',
      MAX_REQUESTS_PER_MINUTE: '600',
      ALLOW_PRIVATE_CALLBACKS: 'true',
      WEBHOOK_SECRET_ARN: SECRET_ARN('webhook'),
      MARKETPLACE_API_KEY_ARN: SECRET_ARN('marketplace'),
      CHAT_WEBHOOKS_SECRET_ARN: SECRET_ARN('chat'),
      SLACK_SIGNING_SECRET_ARN: SECRET_ARN('slack'),
      CALLER_KEYS_SECRET_ARN: SECRET_ARN('callerKeys'),
      SSH_PASSWORD_SECRET_ARN: SECRET_ARN('sshPassword'),
      CALLBACK_SIGNING_SECRET_ARN: SECRET_ARN('callback'),
    };

    // Workflow steps and jobs work on a task the API recorded: seed it as the API would.
    const tasks = new DynamoDbTaskRepository(
      DynamoDBDocumentClient.from(
        new DynamoDBClient({
          endpoint: dynamo.endpoint,
          region: 'us-east-1',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }),
      ),
      dynamo.tableName,
    );
    const measure = async (
      file: string,
      lazyChunks: readonly string[],
      invocationOf: (run: number) => FirstInvocation,
    ) => {
      const runs: ChildResult[] = [];
      let documents = 0;
      for (let i = 0; i < LOAD_RUNS; i += 1) {
        const { event, existingTask } = invocationOf(i);
        if (existingTask) {
          const at = new Date().toISOString();
          await tasks.create({
            ...existingTask,
            state: 'queued',
            request: { gpu_type: 'RTX' },
            origin: { source: 'webhook' },
            created_at: at,
            updated_at: at,
          });
        }
        fake.takeSegments();
        runs.push(await coldStart(file, event, env, lazyChunks));
        documents = fake.takeSegments();
      }
      return {
        loadMs: median(runs.map((r) => r.loadMs)),
        loadCpuMs: median(runs.map((r) => r.loadCpuMs)),
        firstMs: median(runs.map((r) => r.firstMs)),
        lazyChunksCpuMs: median(runs.map((r) => r.lazyChunksCpuMs)),
        outcome: runs[runs.length - 1].outcome,
        documents,
      };
    };

    // The reference is measured between every two functions and its load is the median of all
    // those processes: a stretch of the run the machine spends on something else moves both.
    const referenceRuns: ChildResult[] = [];
    const measureReference = async () => {
      for (let i = 0; i < REFERENCE_RUNS_BETWEEN; i += 1) referenceRuns.push(await coldStart(referenceFile, {}, env));
    };
    await measureReference();
    const measured: (Awaited<ReturnType<typeof measure>> & { entry: string })[] = [];
    for (const [i, entry] of entries.entries()) {
      measured.push({
        entry,
        ...(await measure(outfileOf(entry), built[i].lazyFiles, (r) => firstInvocation(entry, r, ctx))),
      });
      await measureReference();
    }
    const referenceLoadMs = median(referenceRuns.map((r) => r.loadMs));
    const referenceLoadCpuMs = median(referenceRuns.map((r) => r.loadCpuMs));

    const bundles: BundleFigure[] = [];
    for (const [i, m] of measured.entries()) {
      const { entry } = m;
      const { bytes, lazyBytes, usesAwsSdk, topModules: top } = built[i];
      const kind = relayFunctionKind(entry);
      const { bytes: budgetBytes, loadRatio: budgetLoadRatio } = relayBundleBudget(entry);
      const loadRatio = m.loadCpuMs / referenceLoadCpuMs;
      bundles.push({
        entry,
        kind,
        bytes,
        lazyBytes,
        usesAwsSdk,
        loadMsMedian: m.loadMs,
        loadCpuMsMedian: m.loadCpuMs,
        loadRatio,
        firstInvocationMsMedian: m.firstMs,
        lazyChunksCpuMsMedian: m.lazyChunksCpuMs,
        firstInvocationOutcome: m.outcome,
        traceDocuments: m.documents,
        budgetBytes,
        budgetLoadRatio,
        withinBudget: bytes <= budgetBytes && (budgetLoadRatio === undefined || loadRatio <= budgetLoadRatio),
        topModules: top,
      });
    }
    return {
      tracing,
      reference: {
        bytes: reference.bytes,
        loadMsMedian: referenceLoadMs,
        loadCpuMsMedian: referenceLoadCpuMs,
        firstInvocationMsMedian: median(referenceRuns.map((r) => r.firstMs)),
      },
      budgets: RELAY_BUNDLE_BUDGETS,
      bundles,
    };
  } finally {
    await Promise.all([fake.close(), dynamo.close(), sqs.close(), sim.close()]);
  }
};
