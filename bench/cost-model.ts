/**
 * Bench 5: AWS cost per 1,000 orders and per 1M accepted webhooks, from counted usage.
 * Prices: us-east-1 list prices (on-demand), written out so anyone can redo the sums.
 */
export const PRICES_USD = {
  /** Step Functions Standard, per state transition. */
  sfnTransition: 0.000025,
  /** Lambda arm64, per GB-second and per request. */
  lambdaGbSecondArm: 0.0000133334,
  lambdaRequest: 0.0000002,
  /** HTTP API, per request (first 300M/month). */
  httpApiRequest: 0.000001,
  /** DynamoDB on-demand, per write and read request unit. */
  ddbWrite: 0.000000625,
  ddbRead: 0.000000125,
  /** SQS standard, per 64 KB request chunk. */
  sqsRequest: 0.0000004,
  /** CloudWatch Logs ingestion per GB. */
  logsIngestGb: 0.5,
  /** Secrets Manager API calls, per 10,000 (cached 5 minutes, so negligible per request). */
  secretsPer10k: 0.05,
} as const;

export interface UsagePerUnit {
  /** Step Functions state transitions. */
  readonly transitions: number;
  /** Lambda invocations and their total billed duration (ms) at the given memory. */
  readonly lambdaInvocations: number;
  readonly lambdaBilledMs: number;
  readonly lambdaMemoryMb: number;
  readonly apiRequests: number;
  readonly ddbWrites: number;
  readonly ddbReads: number;
  readonly sqsRequests: number;
  /** Bytes of log lines written. */
  readonly logBytes: number;
}

export interface CostBreakdown {
  readonly stepFunctions: number;
  readonly lambda: number;
  readonly apiGateway: number;
  readonly dynamodb: number;
  readonly sqs: number;
  readonly logs: number;
  readonly total: number;
}

/** Cost of `units` repetitions of `usage`. */
export const costOf = (usage: UsagePerUnit, units: number): CostBreakdown => {
  const p = PRICES_USD;
  const stepFunctions = usage.transitions * p.sfnTransition * units;
  const gbSeconds = (usage.lambdaBilledMs / 1000) * (usage.lambdaMemoryMb / 1024);
  const lambda = (gbSeconds * p.lambdaGbSecondArm + usage.lambdaInvocations * p.lambdaRequest) * units;
  const apiGateway = usage.apiRequests * p.httpApiRequest * units;
  const dynamodb = (usage.ddbWrites * p.ddbWrite + usage.ddbReads * p.ddbRead) * units;
  const sqs = usage.sqsRequests * p.sqsRequest * units;
  const logs = (usage.logBytes / 1024 ** 3) * p.logsIngestGb * units;
  const total = stepFunctions + lambda + apiGateway + dynamodb + sqs + logs;
  return { stepFunctions, lambda, apiGateway, dynamodb, sqs, logs, total };
};
