/**
 * A relay Lambda with the house defaults: nodejs24.x (contract/runtime.ts) on arm64,
 * esbuild-minified (no kept names, no source maps: see BENCHMARKS.md "Cold start"; `npm run stack`
 * reads a stack trace back to source), X-Ray, JSON logs, retention.
 */
import * as path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../contract/telemetry';
import {
  RELAY_BUNDLE_BANNER,
  RELAY_BUNDLE_EXTERNALS,
  RELAY_BUNDLE_KEEP_NAMES,
  RELAY_BUNDLE_TARGET,
  relayEsbuildAliases,
} from './relay-bundling';

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

export class RelayFunction extends Construct {
  public readonly fn: nodejs.NodejsFunction;
  public readonly logGroup: logs.LogGroup;

  public constructor(scope: Construct, id: string, props: RelayFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH });
    this.fn = new nodejs.NodejsFunction(this, 'Function', {
      entry: path.join(REPO_ROOT, props.entry),
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_MB,
      timeout: props.timeout ?? Duration.seconds(10),
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      environment: {
        // No NODE_OPTIONS=--enable-source-maps: measured, it doubles the cold start (module load +
        // first error stack: 74 → 148 ms) and adds 37 MB; `npm run stack` maps a stack trace back instead.
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...props.environment,
      },
      bundling: {
        minify: true,
        sourceMap: false,
        keepNames: RELAY_BUNDLE_KEEP_NAMES,
        target: RELAY_BUNDLE_TARGET,
        format: nodejs.OutputFormat.ESM,
        mainFields: ['module', 'main'],
        banner: RELAY_BUNDLE_BANNER,
        // Bundle everything (Powertools, middy, SDK v3) rather than rely on the runtime's copy.
        externalModules: [...RELAY_BUNDLE_EXTERNALS],
        esbuildArgs: Object.fromEntries(
          Object.entries(relayEsbuildAliases(REPO_ROOT)).map(([from, to]) => [`--alias:${from}`, to]),
        ),
      },
    });
  }
}
