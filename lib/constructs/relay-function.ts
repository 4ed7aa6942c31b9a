/**
 * A relay Lambda with the house defaults: nodejs24.x (contract/runtime.ts) on arm64,
 * esbuild-minified (no kept names, no source maps: see BENCHMARKS.md "Cold start"; `npm run stack`
 * reads a stack trace back to source), X-Ray, JSON logs, retention.
 *
 * Bundled by lib/constructs/build-relay-bundle.ts (relay-bundling.ts's options and plugins) in a
 * child process, as NodejsFunction's esbuild command line cannot run esbuild plugins. The asset is
 * `index.mjs` (the handler) and its chunks, hashed by its output as NodejsFunction's was.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { AssetHashType, DockerImage, Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../contract/telemetry';

/** Repository root, so entries are written as repo-relative paths like `lambdas/handlers/api/health.ts`. */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export interface RelayFunctionProps {
  /** Repo-relative path of the handler file; it must export `handler`. */
  readonly entry: string;
  readonly description?: string;
  readonly environment?: Readonly<Record<string, string>>;
  /** @default 10 seconds */
  readonly timeout?: Duration;
  /** @default DEFAULT_MEMORY_MB (256) */
  readonly memorySize?: number;
  /** @default - unreserved */
  readonly reservedConcurrentExecutions?: number;
  /** @default 30 days */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * Memory of the functions nobody waits on interactively (workflow steps, worker): they wait on the
 * paced marketplace, not on CPU. Measured: about 60 MB resident after the first call (BENCHMARKS.md).
 */
export const DEFAULT_MEMORY_MB = 256;

/** Builds `entry`'s bundle into `outputDir` (index.mjs); throws, naming the entry, when esbuild fails. */
const buildBundle = (entry: string, outputDir: string): void => {
  const script = path.join(REPO_ROOT, 'lib', 'constructs', 'build-relay-bundle.ts');
  const run = spawnSync(process.execPath, ['--import', 'tsx', script, entry, outputDir], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (run.status !== 0) throw new Error(`bundling ${entry} failed (exit ${run.status ?? run.signal})`);
};

/** The function's code: its bundle, built locally at synth, hashed by its output (as NodejsFunction did). */
const relayBundle = (entry: string): lambda.Code =>
  lambda.Code.fromAsset(REPO_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: `local` always builds the bundle or throws.
      image: DockerImage.fromRegistry('relay-bundles-locally'),
      // Names the entry in the asset's cache key (a function in `local` is not part of it).
      command: ['build-relay-bundle', entry],
      local: {
        tryBundle: (outputDir) => {
          buildBundle(entry, outputDir);
          return true;
        },
      },
    },
  });

export class RelayFunction extends Construct {
  public readonly fn: lambda.Function;
  public readonly logGroup: logs.LogGroup;

  public constructor(scope: Construct, id: string, props: RelayFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH });
    this.fn = new lambda.Function(this, 'Function', {
      code: relayBundle(props.entry),
      handler: 'index.handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_MB,
      timeout: props.timeout ?? Duration.seconds(10),
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      environment: {
        // No NODE_OPTIONS=--enable-source-maps: measured, it doubles the cold start (module load +
        // first error stack: 74 → 148 ms) and adds 37 MB; `npm run stack` maps a stack trace back instead.
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...props.environment,
      },
    });
  }
}
