/**
 * The Lambda environment contract, parsed once at cold start. The same names are used in AWS
 * (set by the CDK constructs) and locally (set by `npm start` from the shell or `.env`).
 * Secret values come either from `<NAME>_ARN` (Secrets Manager, AWS) or `<NAME>` (plain, local).
 */
import * as z from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .transform((v) => v === 'true' || v === '1');

const PortsJson = z.string().transform((raw, ctx) => {
  try {
    const parsed = z.record(z.string().regex(/^\d{1,5}$/), z.enum(['tcp', 'http'])).parse(JSON.parse(raw));
    return parsed;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'DEFAULT_PORTS must be a JSON object like {"22":"tcp","8888":"http"}' });
    return z.NEVER;
  }
});

export const RelayEnvSchema = z.object({
  TABLE_NAME: z.string().min(1).default('relay'),
  STATE_MACHINE_ARN: z.string().optional(),
  JOB_QUEUE_URL: z.string().optional(),
  MARKETPLACE_URL: z.string().url().default('http://127.0.0.1:5001'),
  MARKETPLACE_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Minimum spacing of marketplace calls per API key (1 req/s); the pacing gate adds its own lateness margin. */
  MARKETPLACE_MIN_INTERVAL_MS: z.coerce.number().int().nonnegative().default(1_000),
  /** Minimum spacing of create_order calls per API key (production: 1 per 5 s), on top of the interval above. */
  MARKETPLACE_CREATE_INTERVAL_MS: z.coerce.number().int().nonnegative().default(5_000),
  DEFAULT_IMAGE: z.string().min(1).default('nvidia/cuda:12.4.1-base-ubuntu22.04'),
  DEFAULT_CURRENCY: z.string().min(1).default('NATIVE-Blockchain'),
  DEFAULT_PORTS: PortsJson.default({ '22': 'tcp', '8888': 'http' }),
  MAX_ORDERS_PER_HOUR: z.coerce.number().int().positive().default(10),
  /** Capped at 600: the exact window stores every in-window event in one item; at 600 it is ≤ 54 KB (dynamodb-sliding-window test). */
  MAX_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().max(600, 'MAX_REQUESTS_PER_MINUTE must be at most 600 (the exact window keeps every in-window request in one DynamoDB item)').default(60),
  ORDER_READY_TIMEOUT_SECONDS: z.coerce.number().int().positive().default(120),
  ORDER_POLL_INTERVAL_SECONDS: z.coerce.number().int().positive().default(5),
  ALLOW_PRIVATE_CALLBACKS: bool.default(false),
  REQUIRE_WEBHOOK_TIMESTAMP: bool.default(false),
  /** Without a Slack signing secret: true = commands pass unverified (the spec, `npm start`), false = refused (403). */
  ALLOW_UNSIGNED_SLACK: bool.default(false),
  /** Delay unit of job retries (2^retry × this, in ms); 1000 in production, smaller in tests. */
  JOB_RETRY_BASE_MS: z.coerce.number().int().positive().default(1_000),
  // Secrets: ARN (AWS) or value (local).
  WEBHOOK_SECRET_ARN: z.string().optional(),
  WEBHOOK_SECRET: z.string().optional(),
  WEBHOOK_SECRET_PREVIOUS: z.string().optional(),
  MARKETPLACE_API_KEY_ARN: z.string().optional(),
  MARKETPLACE_API_KEY: z.string().optional(),
  /** JSON {"slack_webhook_url": "...", "discord_webhook_url": "..."} in Secrets Manager. */
  CHAT_WEBHOOKS_SECRET_ARN: z.string().optional(),
  SLACK_WEBHOOK_URL: z.string().optional(),
  DISCORD_WEBHOOK_URL: z.string().optional(),
  SLACK_SIGNING_SECRET_ARN: z.string().optional(),
  SLACK_SIGNING_SECRET: z.string().optional(),
});

export type RelayEnv = z.infer<typeof RelayEnvSchema>;

let cached: RelayEnv | undefined;

/** Parses `process.env` once; throws naming every bad variable. `reset` is for tests. */
export const relayEnv = (options: { reset?: boolean } = {}): RelayEnv => {
  if (!cached || options.reset) cached = RelayEnvSchema.parse(process.env);
  return cached;
};
