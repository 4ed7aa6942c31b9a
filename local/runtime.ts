/**
 * The local runtime behind `npm start` and the e2e tests: the stack's Lambda handlers, unchanged,
 * wired to in-process stand-ins that speak the real AWS protocols (DESIGN.md "Local runtime"):
 * dynalite (DynamoDB), fauxqs (SQS + DLQ), aws-local-stepfunctions running the ASL synthesized from
 * the CDK stack, the marketplace simulator, and a node:http API Gateway v2 emulation.
 *
 * The handlers find the stand-ins through the SDK's per-service endpoint variables
 * (AWS_ENDPOINT_URL_DYNAMODB / _SQS / _SFN), so no handler knows it runs locally.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { SQSClient } from '@aws-sdk/client-sqs';
import { EXECUTION_ENDED_ENTRY, FLEET_WATCH_ENTRY, JOB_WORKER_ENTRY, ROUTES } from '../contract/routes';
import { WATCH_TIMEOUT_SECONDS } from '../contract/resources';
import type { RouteDefinition } from '../contract/routes';
import { SERVICE_NAME } from '../contract/telemetry';
import { encodeSetting, SETTINGS } from '../contract/settings';
import type { Setting } from '../contract/settings';
import { lambdaContext, startApiGateway } from './api-gateway';
import type { LambdaHandler, LocalApiGateway } from './api-gateway';
import { startLocalDynamo } from './dynalite';
import type { LocalDynamo } from './dynalite';
import type { startLocalSqs as StartLocalSqs } from './fauxqs';
import type {
  MarketplaceSimulator,
  SimulatorOptions,
  startSimulator as StartSimulator,
} from './simulator/marketplace-simulator';
import { parseDialect } from './simulator/dialect';
import { LIVE_NATIVE_COIN } from './simulator/dialect-live';
import type { startSqsPoller as StartSqsPoller, SqsPollerOptions } from './sqs-poller';
import type { synthesizeStackModel as SynthesizeStackModel, StackModel } from './stack-model';
import type { loadStackModel as LoadStackModel } from './stack-model-cache';
import { functionOfEntry, parseIamMode, startIamChecks, type IamDenial, type IamMode } from './iam-checks';
import { queueArnFromUrl } from './sqs-poller';
import { startWatchTimer } from './watch-timer';
import { CALLBACK_SIGNING_SECRET_FILE, openStateDir, type StatePaths } from './state-dir';
import { createTtlSweeper, type TtlSweepResult } from './ttl-sweep';
import { captureSnapshot, type SnapshotLine } from './state-snapshot';
import { startStateControl } from './state-control';
import { applyEnv, definedEnv, withoutSecretArns } from './process-env';
import type { ExecutionStatusChangeEvent, LocalStepFunctions as LocalStepFunctionsClass } from './stepfunctions';

export type { SimulatorOptions } from './simulator/marketplace-simulator';

/** Repository root: handler entries in lib/routes.ts are repo-relative. */
export const REPO_ROOT = path.resolve(__dirname, '..');

/** Region and fake credentials the local stand-ins are addressed with. */
export const LOCAL_REGION = 'us-east-1';
const LOCAL_ACCOUNT = '000000000000';
/** The ARN the create-order handler is given; the local Step Functions server runs one machine. */
export const LOCAL_STATE_MACHINE_ARN = `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:relay-create-order`;

/**
 * The webhook secret used when none is configured. Public on purpose: start-up warns loudly, and
 * anyone who knows this value can sign requests.
 */
export const PLACEHOLDER_WEBHOOK_SECRET = 'change-me-placeholder-webhook-secret';

/**
 * A fresh callback signing secret in Standard Webhooks form (`whsec_` + base64 of 32 random bytes),
 * for a runtime started without CALLBACK_SIGNING_SECRET: `npm start` prints it, since receivers need it.
 */
export const generateCallbackSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The callback signing secret generated for a kept state (`callback-signing-secret`, mode 0600). */
const keptCallbackSigningSecret = (state: StatePaths): string => {
  const file = path.join(state.dir, CALLBACK_SIGNING_SECRET_FILE);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = generateCallbackSigningSecret();
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
};

/** TRUSTED_PROXIES: comma-separated addresses whose X-Forwarded-For the API believes. */
export const parseTrustedProxies = (text: string | undefined): string[] =>
  (text ?? '')
    .split(',')
    .map((address) => address.trim())
    .filter((address) => address !== '');

/** Lambda timeout of the workflow task functions locally (the worker's context comes from the poller). */
const TASK_TIMEOUT_MS = 600_000;

export interface LocalRuntimeOptions {
  /** API port; 0 picks a free one (tests). @default Number(env PORT) or 5000 */
  readonly port?: number;
  /** Overrides applied last, over the shell environment and the runtime's defaults. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The embedded marketplace simulator. Default: started unless MARKETPLACE_URL is set.
   * `true` or options force it on (options are passed through); `false` forces it off.
   * Its dialect is `options.dialect`, else MARKETPLACE_DIALECT (`spec` | `live`, default `spec`).
   */
  readonly simulator?: boolean | SimulatorOptions;
  /** No runtime log lines (tests). */
  readonly quiet?: boolean;
  /** The API Gateway emulation's integration timeout (tests of time budgets). @default 30 000, as HTTP APIs */
  readonly integrationTimeoutMs?: number;
  /**
   * A folder to keep the state in across restarts (local/state-dir.ts): the table, the job queue and
   * the workflow executions; a restart carries on what had not ended. `npm start` passes STATE_DIR.
   * @default - memory: everything is gone when the runtime closes (tests)
   */
  readonly stateDir?: string;
  /** Empty `stateDir` before starting (`npm start -- --fresh`). */
  readonly fresh?: boolean;
  /** The bind address of the API. @default env HOST or 127.0.0.1 */
  readonly host?: string;
}

/** What a runtime started on a kept state found and carried on. */
export interface LocalStateInfo {
  readonly dir: string;
  /** True when the folder held no state (first start, --fresh, after state:reset). */
  readonly created: boolean;
  /** Jobs sent again from the queue's journal. */
  readonly restoredJobs: number;
  /** Workflow executions run again from their start under their task id. */
  readonly resumedExecutions: readonly string[];
  /** Executions past their deadline while stopped, ended through the ExecutionEnded path. */
  readonly timedOutExecutions: readonly string[];
  /** One TTL sweep now (it also runs every TTL_SWEEP_INTERVAL_SECONDS). */
  sweepTtl(): Promise<TtlSweepResult>;
  /**
   * A snapshot of the state at one instant, taken while running (local/state-snapshot.ts); also
   * offered to `npm run state:snapshot` on the loopback control (local/state-control.ts).
   */
  snapshot(): Promise<SnapshotLine[]>;
}

/** The permission checks of a runtime (local/iam-checks.ts; docs/local-runtime.md "Permission checks"). */
export interface LocalIamChecks {
  /** IAM_CHECKS: `enforce`, `report` (the default) or `off`. */
  readonly mode: IamMode;
  /** Calls the synthesized policies refuse, so far (refused in `enforce`, only logged in `report`). */
  readonly denials: () => readonly IamDenial[];
}

export interface LocalRuntime {
  /** Base URL of the API, e.g. `http://127.0.0.1:5000`. */
  readonly url: string;
  readonly port: number;
  /** The embedded simulator, when started (tests steer it through `control`). */
  readonly simulator?: MarketplaceSimulator;
  readonly sqs: { readonly endpoint: string; readonly queueUrl: string; readonly dlqUrl: string };
  readonly dynamo: { readonly endpoint: string; readonly tableName: string };
  /** The environment the handlers run with (secret values included: never print it). */
  readonly env: Readonly<Record<string, string>>;
  /** Milliseconds each start-up phase took, for the banner and for measuring the 15 s goal. */
  readonly timings: Readonly<Record<string, number>>;
  /** The fleet watch's timer: sweeps started and ended so far (tests wait for sweeps instead of sleeping). */
  readonly watch: { readonly sweeps: () => number; readonly completed: () => number };
  readonly iam: LocalIamChecks;
  /** Present when the runtime keeps its state on disk. */
  readonly state?: LocalStateInfo;
  close(): Promise<void>;
}

/**
 * Loads one of the local modules another part of the project provides, naming the missing piece
 * instead of failing with a bare "Cannot find module".
 */
const loadLocal = async <T>(relative: string, exportName: string, what: string): Promise<T> => {
  const file = path.join(__dirname, relative);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(file)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(
        `local runtime: ${what} is missing (${path.relative(REPO_ROOT, file)}.ts could not be loaded): ${(error as Error).message}`,
        { cause: error },
      );
    }
    throw error;
  }
  const value = mod[exportName];
  if (value === undefined)
    throw new Error(`local runtime: ${path.relative(REPO_ROOT, file)} does not export ${exportName} (${what})`);
  return value as T;
};

/** Imports a handler file by its repo-relative entry and returns its `handler` export. */
export const loadHandler = async (entry: string): Promise<LambdaHandler> => {
  const file = path.join(REPO_ROOT, entry);
  let mod: { handler?: unknown };
  try {
    mod = (await import(file)) as { handler?: unknown };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error(`local runtime: handler ${entry} could not be loaded: ${(error as Error).message}`, {
        cause: error,
      });
    }
    throw new Error(`local runtime: handler ${entry} failed to load: ${(error as Error).message}`, { cause: error });
  }
  if (typeof mod.handler !== 'function') throw new Error(`local runtime: ${entry} does not export a handler function`);
  return mod.handler as LambdaHandler;
};

/**
 * A route whose handler file does not exist (yet) answers 501 naming the file, and start-up says
 * so, instead of the whole runtime refusing to start. Import errors of existing files still fail.
 */
const missingRoute = (route: RouteDefinition, log: (message: string) => void): LambdaHandler => {
  log(`WARNING: ${route.method} ${route.path} has no handler (${route.entry} is missing); it answers 501`);
  return async () => ({
    statusCode: 501,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: `Not implemented: ${route.entry} is missing` }),
  });
};

/** Wraps a handler as a Lambda invocation with a fresh context, the way the Lambda service calls it. */
const invoker =
  (handler: LambdaHandler, functionName: string) =>
  (event: unknown): Promise<unknown> =>
    handler(event, lambdaContext(functionName, randomUUID(), TASK_TIMEOUT_MS));

const functionNameOf = (entry: string): string => `local-${path.basename(entry).replace(/\.[cm]?[jt]s$/, '')}`;

/** Local defaults (DESIGN.md configuration contract); the shell, `.env` and `opts.env` override them. */
const localDefaults = (): Record<string, string> => ({
  PORT: '5000',
  // Settings whose `npm start` default differs from the functions' (contract/settings.ts `localDefault`):
  // ALLOW_PRIVATE_CALLBACKS, ALLOW_PRIVATE_SSH_PROBE (the simulator's servers listen on 127.0.0.1), and
  // ALLOW_UNSIGNED_SLACK (the spec's single-host relay: /slack/command without a signing secret is not
  // verified locally; AWS refuses it).
  ...Object.fromEntries(
    (Object.values(SETTINGS) as Setting[])
      .filter((s) => s.localDefault !== undefined)
      .map((s) => [s.env, encodeSetting(s.kind, s.localDefault)]),
  ),
  // Handlers log JSON through Powertools; metrics would only print EMF blobs locally and X-Ray has no daemon.
  POWERTOOLS_METRICS_DISABLED: 'true',
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
});

/**
 * Starts everything and resolves once the API answers. Sets `process.env` for the handlers (they
 * parse it at their first invocation), so run at most one runtime per process (per jest test file).
 */
export const startLocalRuntime = async (opts: LocalRuntimeOptions = {}): Promise<LocalRuntime> => {
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  const mark = (phase: string, since: number) => {
    timings[phase] = Date.now() - since;
  };
  const log = opts.quiet ? () => undefined : (message: string) => console.log(`[local] ${message}`);
  const closers: { name: string; close: () => Promise<void> }[] = [];
  const closeAll = async () => {
    // Reverse start order: the API stops taking requests before anything it depends on goes away.
    for (const { name, close } of closers.splice(0).reverse()) {
      await close().catch((error: unknown) => {
        if (!opts.quiet) console.error(`[local] stopping ${name} failed: ${(error as Error).message}`);
      });
    }
  };

  const requested = { ...localDefaults(), ...definedEnv(process.env), ...(opts.env ?? {}) };
  const useSimulator = opts.simulator === undefined ? !requested.MARKETPLACE_URL : opts.simulator !== false;
  // Checked before anything starts: a misspelt dialect is a start-up error, not a silent `spec`.
  const dialect = parseDialect(requested.MARKETPLACE_DIALECT);
  const iamMode = parseIamMode(requested.IAM_CHECKS);
  if (!useSimulator && !requested.MARKETPLACE_URL) {
    throw new Error('local runtime: MARKETPLACE_URL must be set when the simulator is disabled');
  }
  // Refused before anything starts: a state of another format is never read half-way.
  const state: StatePaths | undefined = opts.stateDir
    ? openStateDir(opts.stateDir, { fresh: opts.fresh === true })
    : undefined;

  try {
    // Independent pieces start concurrently; the CDK synthesis behind the ASL dominates start-up.
    const [dynamo, sqs, simulator, stackModel] = await Promise.all([
      (async () => {
        const t = Date.now();
        const d: LocalDynamo = await startLocalDynamo({
          tableName: requested.TABLE_NAME || undefined,
          ...(state ? { path: state.table } : {}),
        });
        closers.push({ name: 'dynalite', close: d.close });
        mark('dynalite', t);
        return d;
      })(),
      (async () => {
        const t = Date.now();
        const start = await loadLocal<typeof StartLocalSqs>(
          'fauxqs',
          'startLocalSqs',
          'the local SQS (fauxqs) wrapper',
        );
        const s = await start(state ? { journalFile: state.queue } : {});
        closers.push({ name: 'fauxqs', close: s.close });
        mark('fauxqs', t);
        return s;
      })(),
      (async () => {
        if (!useSimulator) return undefined;
        const t = Date.now();
        const start = await loadLocal<typeof StartSimulator>(
          'simulator/marketplace-simulator',
          'startSimulator',
          'the marketplace simulator',
        );
        const simOptions: SimulatorOptions = typeof opts.simulator === 'object' ? { ...opts.simulator } : {};
        const sim = await start({
          ...(requested.MARKETPLACE_API_KEY ? { apiKey: requested.MARKETPLACE_API_KEY } : {}),
          ...simOptions,
          dialect: simOptions.dialect ?? dialect,
        });
        closers.push({ name: 'simulator', close: sim.close });
        mark('simulator', t);
        return sim;
      })(),
      (async () => {
        const t = Date.now();
        // The whole stack as `cdk deploy` would send it: the ASL the local Step Functions runs and
        // the policies the IAM checks enforce come from this one template.
        // Kept on disk under a hash of the stack's source (local/stack-model-cache.ts): a start on an
        // unchanged checkout skips the synthesis and never loads aws-cdk-lib.
        const load = await loadLocal<typeof LoadStackModel>(
          'stack-model-cache',
          'loadStackModel',
          'the stack model cache',
        );
        let source = 'synth';
        const model: StackModel = await load(
          async () =>
            (
              await loadLocal<typeof SynthesizeStackModel>(
                'stack-model',
                'synthesizeStackModel',
                'the stack synthesizer',
              )
            )(),
          { onSource: (s) => (source = s) },
        );
        mark(source === 'cache' ? 'stack model (cached)' : 'synth', t);
        return model;
      })(),
    ]);

    // The handlers' environment. Infrastructure endpoints always win over the shell: a stray
    // AWS_ENDPOINT_URL or *_ARN from a real deployment must not send local traffic to AWS.
    const simulatorOptions = typeof opts.simulator === 'object' ? opts.simulator : undefined;
    // A live-dialect simulator knows only CLORE-Blockchain and spaces create_order: tell the relay,
    // unless the caller chose otherwise (the shell, .env and opts.env come later and win).
    const live = simulator?.dialect === 'live';
    const env: Record<string, string> = {
      ...localDefaults(),
      ...(simulator ? { MARKETPLACE_API_KEY: simulator.apiKey } : {}),
      ...(simulatorOptions?.minIntervalMs !== undefined
        ? { MARKETPLACE_MIN_INTERVAL_MS: String(simulatorOptions.minIntervalMs) }
        : {}),
      // The embedded simulator's create_order spacing (0 in the spec dialect, which has none; 5 s live).
      ...(simulator ? { MARKETPLACE_CREATE_INTERVAL_MS: String(simulator.createIntervalMs) } : {}),
      ...(live ? { DEFAULT_CURRENCY: LIVE_NATIVE_COIN } : {}),
      // The spec dialect's simulator charges no fees (the live one charges production's: issue 29 §3).
      ...(simulator && !live ? { RENTER_FEE_PERCENT: '0', ORDER_CREATION_FEE_USD: '0' } : {}),
      ...withoutSecretArns(definedEnv(process.env)),
      ...(simulator ? { MARKETPLACE_URL: simulator.url, MARKETPLACE_API_KEY: simulator.apiKey } : {}),
      TABLE_NAME: dynamo.tableName,
      JOB_QUEUE_URL: sqs.queueUrl,
      STATE_MACHINE_ARN: LOCAL_STATE_MACHINE_ARN,
      AWS_REGION: LOCAL_REGION,
      AWS_DEFAULT_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      ...withoutSecretArns(opts.env ?? {}),
    };
    env.WEBHOOK_SECRET ||= PLACEHOLDER_WEBHOOK_SECRET;
    // Callbacks are signed with their own key, never the webhook secret; unset, one is made per run.
    // On a kept state the generated one is kept with it: receivers verify deliveries across restarts.
    env.CALLBACK_SIGNING_SECRET ||= state ? keptCallbackSigningSecret(state) : generateCallbackSigningSecret();
    if (!simulator && !env.MARKETPLACE_API_KEY)
      log('WARNING: MARKETPLACE_URL is set but MARKETPLACE_API_KEY is not; marketplace calls will fail');

    // Step Functions needs its endpoint in the env before any handler builds an SFN client.
    const tSfn = Date.now();
    const LocalStepFunctions = await loadLocal<typeof LocalStepFunctionsClass>(
      'stepfunctions',
      'LocalStepFunctions',
      'the local Step Functions server',
    );
    const stateHandlers: Record<string, (input: unknown) => Promise<unknown>> = {};
    const late: { ended?: (event: unknown) => Promise<unknown> } = {};
    const asl = stackModel.asl;
    const iam = startIamChecks(stackModel, iamMode, {
      tableName: dynamo.tableName,
      jobQueueUrl: sqs.queueUrl,
      jobQueueArn: sqs.queueArn,
      deadLetterQueueUrl: sqs.dlqUrl,
      deadLetterQueueArn: queueArnFromUrl(sqs.dlqUrl, LOCAL_REGION),
      stateMachineArn: LOCAL_STATE_MACHINE_ARN,
      countsFile: requested.IAM_CHECKS_COUNTS,
      log: (message) => (opts.quiet && iamMode === 'report' ? undefined : console.warn(`[iam] ${message}`)),
    });
    closers.push({ name: 'iam checks', close: iam.close });
    const sfn = new LocalStepFunctions({
      asl: asl.asl,
      // Resolved lazily: the handler modules are imported below, after the environment is set.
      handlers: Object.fromEntries(
        Object.keys(asl.functionForState).map((state) => [state, (input: unknown) => stateHandlers[state](input)]),
      ),
      onExecutionEnded: (event: ExecutionStatusChangeEvent) =>
        late.ended ? late.ended(event) : Promise.resolve(undefined),
      stateMachineArn: LOCAL_STATE_MACHINE_ARN,
      onError: (message, error) =>
        log(`step functions: ${message}: ${error instanceof Error ? error.message : String(error)}`),
      ...(state ? { journalFile: state.executions } : {}),
    });
    const sfnServer = await sfn.listen(0);
    closers.push({ name: 'step functions', close: sfnServer.close });
    env.AWS_ENDPOINT_URL_SFN = sfnServer.endpoint;
    mark('stepfunctions', tSfn);

    const restoreEnv = applyEnv(env);
    closers.unshift({ name: 'environment', close: async () => restoreEnv() });

    // Import every handler now (cold start up front), so a broken module fails start-up, not a request.
    const tHandlers = Date.now();
    const apiHandlers = new Map<RouteDefinition, LambdaHandler>();
    const [worker, ended, watch] = await Promise.all([
      loadHandler(JOB_WORKER_ENTRY),
      loadHandler(EXECUTION_ENDED_ENTRY),
      loadHandler(FLEET_WATCH_ENTRY),
      ...Object.entries(asl.functionForState).map(async ([state, entry]) => {
        stateHandlers[state] = iam.task(
          functionOfEntry(stackModel, entry),
          invoker(await loadHandler(entry), functionNameOf(entry)),
        );
      }),
      ...ROUTES.map(async (route) => {
        apiHandlers.set(
          route,
          existsSync(path.join(REPO_ROOT, route.entry))
            ? iam.route(route, await loadHandler(route.entry))
            : missingRoute(route, log),
        );
      }),
    ]);
    late.ended = iam.rule(
      functionOfEntry(stackModel, EXECUTION_ENDED_ENTRY),
      invoker(ended as LambdaHandler, functionNameOf(EXECUTION_ENDED_ENTRY)),
    );
    mark('handlers', tHandlers);

    const startPoller = await loadLocal<typeof StartSqsPoller>('sqs-poller', 'startSqsPoller', 'the SQS poller');
    const sqsClient = new SQSClient({
      endpoint: sqs.endpoint,
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    iam.attachTo(sqsClient);
    // Lambda's event source mapping polls with the worker's role: its calls are the worker's.
    const poller = iam.runAs(functionOfEntry(stackModel, JOB_WORKER_ENTRY), () =>
      startPoller({
        client: sqsClient,
        queueUrl: sqs.queueUrl,
        handler: worker as SqsPollerOptions['handler'],
        queueArn: sqs.queueArn,
        functionName: functionNameOf(JOB_WORKER_ENTRY),
        onError: (message, error) =>
          log(`sqs poller: ${message}: ${error instanceof Error ? error.message : String(error)}`),
      }),
    );
    closers.push({
      name: 'sqs poller',
      close: async () => {
        await poller.stop();
        sqsClient.destroy();
      },
    });

    const port = opts.port ?? Number(env.PORT || '5000');
    const api: LocalApiGateway = await startApiGateway({
      routes: ROUTES,
      loadHandler: async (route) => apiHandlers.get(route) as LambdaHandler,
      port,
      host: opts.host ?? (env.HOST || '127.0.0.1'),
      trustedProxies: parseTrustedProxies(env.TRUSTED_PROXIES),
      ...(opts.integrationTimeoutMs !== undefined ? { integrationTimeoutMs: opts.integrationTimeoutMs } : {}),
      log: opts.quiet
        ? undefined
        : (level, message, fields) =>
            (level === 'error' ? console.error : console.log)(`[api] ${message}`, fields ? JSON.stringify(fields) : ''),
    });
    closers.push({ name: 'api', close: api.close });
    // The fleet watch's schedule: the same handler on a timer, once everything it calls is up.
    const watchName = functionNameOf(FLEET_WATCH_ENTRY);
    const scheduled = iam.rule(functionOfEntry(stackModel, FLEET_WATCH_ENTRY), (event: unknown) =>
      watch(event, lambdaContext(watchName, randomUUID(), WATCH_TIMEOUT_SECONDS * 1_000)),
    );
    const watchTimer = startWatchTimer({
      run: () => scheduled({ source: 'local.timer', 'detail-type': 'Scheduled Event' }),
      intervalMs: Number(env.WATCH_INTERVAL_SECONDS || '60') * 1_000,
      onError: (error) => log(`fleet watch: sweep failed: ${error instanceof Error ? error.message : String(error)}`),
      // On a kept state the watch catches up at once: leases that ended while the relay was stopped.
      runAtStart: state !== undefined && !state.created,
    });
    closers.push({ name: 'fleet watch', close: watchTimer.stop });

    // Closed first (closers run in reverse): executions are aborted while everything they call is still up,
    // and an execution aborted by the stop is not recorded as ended (the next start carries it on).
    closers.push({ name: 'workflow executions', close: () => sfn.close() });

    let stateInfo: LocalStateInfo | undefined;
    if (state) {
      // Everything a previous run left running, now that every handler it calls is up.
      const outcome = sfn.resume();
      if (outcome.resumed.length + outcome.timedOut.length + sqs.restored > 0)
        log(
          `state: carried on ${outcome.resumed.length} workflow execution(s), ended ${outcome.timedOut.length} past their deadline, re-queued ${sqs.restored} job(s)`,
        );
      const sweeper = createTtlSweeper({
        endpoint: dynamo.endpoint,
        tableName: dynamo.tableName,
        region: LOCAL_REGION,
      });
      let sweeping: Promise<TtlSweepResult> | undefined;
      const sweepTtl = (): Promise<TtlSweepResult> => {
        sweeping ??= sweeper.sweep().finally(() => {
          sweeping = undefined;
          sqs.journal?.compact();
        });
        return sweeping;
      };
      const ttlTimer = setInterval(
        () => void sweepTtl().catch((error: unknown) => log(`ttl sweep failed: ${(error as Error).message}`)),
        Number(env.TTL_SWEEP_INTERVAL_SECONDS || '3600') * 1_000,
      );
      ttlTimer.unref();
      // The first sweep runs in the background: start-up does not wait for a scan of the table.
      void sweepTtl().catch((error: unknown) => log(`ttl sweep failed: ${(error as Error).message}`));
      closers.push({
        name: 'ttl sweep',
        close: async () => {
          clearInterval(ttlTimer);
          await sweeping?.catch(() => undefined);
          sweeper.close();
        },
      });
      const snapshot = () =>
        captureSnapshot({
          dir: state.dir,
          dynamoEndpoint: dynamo.endpoint,
          tableName: dynamo.tableName,
          holdWrites: dynamo.holdWrites,
          journals: () => ({ queue: sqs.journal?.text() ?? '', executions: sfn.journalText() }),
        });
      // Closed first (pushed last): no snapshot starts while the pieces it reads stop.
      const control = await startStateControl({
        dir: state.dir,
        snapshot,
        onError: (message, error) => log(`state control: ${message}: ${(error as Error).message}`),
      });
      closers.push({ name: 'state control', close: control.close });
      stateInfo = {
        dir: state.dir,
        created: state.created,
        restoredJobs: sqs.restored,
        resumedExecutions: outcome.resumed,
        timedOutExecutions: outcome.timedOut,
        sweepTtl,
        snapshot,
      };
    }
    timings.total = Date.now() - t0;
    log(`ready in ${timings.total} ms`);

    let closed = false;
    return {
      url: api.url,
      port: api.port,
      simulator,
      sqs: { endpoint: sqs.endpoint, queueUrl: sqs.queueUrl, dlqUrl: sqs.dlqUrl },
      dynamo: { endpoint: dynamo.endpoint, tableName: dynamo.tableName },
      env,
      timings,
      watch: { sweeps: watchTimer.sweeps, completed: watchTimer.completed },
      iam: { mode: iamMode, denials: iam.denials },
      ...(stateInfo ? { state: stateInfo } : {}),
      close: async () => {
        if (closed) return;
        closed = true;
        await closeAll();
      },
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
};
