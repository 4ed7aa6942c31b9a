/** Typed relay configuration with the spec's defaults (order-relay.md §2.1, DESIGN.md contract). */
import * as z from 'zod';

const PortsSchema = z.record(z.string().regex(/^\d{1,5}$/), z.enum(['tcp', 'http']));

export const RelayConfigSchema = z.object({
  marketplaceUrl: z.url().default('https://marketplace.example.invalid'),
  defaultImage: z.string().min(1).default('nvidia/cuda:12.4.1-base-ubuntu22.04'),
  defaultCurrency: z.string().min(1).default('NATIVE-Blockchain'),
  defaultPorts: PortsSchema.default({ '22': 'tcp', '8888': 'http' }),
  maxOrdersPerHour: z.coerce.number().int().positive().default(10),
  /** Capped at 600 like MAX_REQUESTS_PER_MINUTE: the exact window keeps every in-window event in one DynamoDB item. */
  maxRequestsPerMinute: z.coerce.number().int().positive().max(600, 'maxRequestsPerMinute must be at most 600 (the exact window keeps every in-window request in one DynamoDB item)').default(60),
  orderReadyTimeoutSeconds: z.coerce.number().int().positive().default(120),
  orderPollIntervalSeconds: z.coerce.number().int().positive().default(5),
  allowPrivateCallbacks: z.boolean().default(false),
  /**
   * REQUIRE_WEBHOOK_TIMESTAMP of the deployed functions. On by default in AWS (a public endpoint: a
   * captured untimestamped request could be replayed forever); `-c requireWebhookTimestamp=false`
   * relaxes it. `npm start` keeps the spec's optional timestamp.
   */
  requireWebhookTimestamp: z.boolean().default(true),
  /**
   * ALLOW_UNSIGNED_SLACK of the deployed functions: with no Slack signing secret, /slack/command is
   * refused (403) unless the operator opts in with `-c allowUnsignedSlack=true`.
   */
  allowUnsignedSlack: z.boolean().default(false),
  /** Optional e-mail subscribed to the alarm topic. */
  alarmEmail: z.email().optional(),
  /** API stage throttling: the outer guard in front of the per-address limit. */
  apiThrottle: z.object({ rateLimit: z.number().positive(), burstLimit: z.number().int().positive() }).default({ rateLimit: 50, burstLimit: 100 }),
  /** Days of CloudWatch log retention for every log group. */
  logRetentionDays: z.number().int().positive().default(30),
});

export type RelayConfig = z.infer<typeof RelayConfigSchema>;

/** Validates once and fills the spec's defaults; throws naming every bad field. */
export const relayConfig = (input: z.input<typeof RelayConfigSchema> = {}): RelayConfig => RelayConfigSchema.parse(input);
