/**
 * The Lambda environment contract, parsed once at cold start. The same names are used in AWS
 * (set by the CDK constructs) and locally (set by `npm start` from the shell or `.env`).
 * The settings are declared once in contract/settings.ts; resource names and secrets are added here.
 * Nothing local is assumed: TABLE_NAME and MARKETPLACE_URL must be set (the stack and the local
 * runtime set them), so a miswired function fails at cold start instead of calling the wrong place.
 * Secret values come either from `<NAME>_ARN` (Secrets Manager, AWS) or `<NAME>` (plain, local).
 */
import * as z from 'zod/mini';
import {
  idListProblem,
  parseIdList,
  SETTINGS,
  type Setting,
  type SettingKey,
  type SettingValueOf,
} from '../../contract/settings';
import { PortsSchema } from '../../contract/shapes';
import { isPublicKeyLineShape } from '../../contract/ssh-keys';
import { refuse } from '../http/refuse';
import { ENGLISH_TEXTS } from '../domain/zod-texts';

const bool = () =>
  z.pipe(
    z.enum(['true', 'false', '1', '0', '']),
    z.transform((v) => v === 'true' || v === '1'),
  );

const portsJson = (name: string) =>
  z.pipe(
    z.string(),
    z.transform((raw: string, ctx) => {
      try {
        return PortsSchema.parse(JSON.parse(raw));
      } catch {
        return refuse(ctx, `${name} must be a JSON object like {"22":"tcp","8888":"http"}`);
      }
    }),
  );

/** The env-string schema of one setting. */
const envSchema = (s: Setting): z.ZodMiniType => {
  const max = (base: z.ZodMiniNumber) =>
    s.max ? base.check(z.lte(s.max.value, `${s.env} must be at most ${s.max.value} (${s.max.reason})`)) : base;
  switch (s.kind) {
    case 'url':
      return z.url();
    case 'text':
      return z.string().check(z.minLength(1));
    case 'ssh-key':
      // Issue 37 §2: what orders carry as `ssh_key`; a private key pasted here would reach the marketplace.
      // The key's type and one line (the request rules' full parse stays out of every bundle).
      return z
        .string()
        .check(
          z.refine(
            (line: string) => isPublicKeyLineShape(line),
            `${s.env} must be one OpenSSH public key line (the .pub file's), never a private key`,
          ),
        );
    case 'ports':
      return portsJson(s.env);
    case 'bool':
      return bool();
    case 'choice':
      return z.enum(s.choices ?? [''], `${s.env} must be one of ${(s.choices ?? []).join(', ')}`);
    case 'int':
      return max(z.coerce.number().check(z.int(), s.min === 0 ? z.nonnegative() : z.positive()));
    case 'hours':
      return max(z.coerce.number().check(z.positive()));
    case 'amount':
      return max(z.coerce.number().check(z.nonnegative(`${s.env} must be zero or a positive number`)));
    case 'ids':
      return z.pipe(
        z.string(),
        z.transform((raw: string, ctx) => {
          const ids = parseIdList(raw);
          const problem = idListProblem(s.env, ids);
          return problem ? refuse(ctx, problem) : ids;
        }),
      );
  }
};

/** An optional setting: unset or empty = undefined (classic zod's `z.preprocess`). */
const optionalEnv = (schema: z.ZodMiniType): z.ZodMiniType =>
  z.pipe(
    z.transform((v: unknown) => (v === '' ? undefined : v)),
    z.optional(schema),
  );

type Settings = typeof SETTINGS;
type SettingsEnvShape = {
  [K in SettingKey as Settings[K]['env']]: Settings[K] extends { readonly default: unknown }
    ? z.ZodMiniDefault<z.ZodMiniType<SettingValueOf<K>>>
    : Settings[K] extends { readonly optional: true }
      ? z.ZodMiniOptional<z.ZodMiniType<SettingValueOf<K>>>
      : z.ZodMiniType<SettingValueOf<K>>;
};

const settingsEnvShape = (): SettingsEnvShape => {
  const shape: Record<string, z.ZodMiniType> = {};
  for (const s of Object.values(SETTINGS) as Setting[]) {
    shape[s.env] = s.optional
      ? optionalEnv(envSchema(s))
      : s.default === undefined
        ? envSchema(s)
        : z._default(envSchema(s), s.default);
  }
  return shape as unknown as SettingsEnvShape;
};

/**
 * The environment's schema, built on first use rather than at import: ~235 zod schema objects, which
 * cost every function 10–17 ms of CPU at module load (issue 40 §1, BENCHMARKS.md). A function builds it
 * once, when it first reads its environment ({@link relayEnv}), which the handlers do on first call.
 */
const buildRelayEnvSchema = () =>
  z.object({
    TABLE_NAME: z.string().check(z.minLength(1)),
    STATE_MACHINE_ARN: z.optional(z.string()),
    JOB_QUEUE_URL: z.optional(z.string()),
    ...settingsEnvShape(),
    // Secrets: ARN (AWS) or value (local).
    WEBHOOK_SECRET_ARN: z.optional(z.string()),
    WEBHOOK_SECRET: z.optional(z.string()),
    WEBHOOK_SECRET_PREVIOUS: z.optional(z.string()),
    MARKETPLACE_API_KEY_ARN: z.optional(z.string()),
    MARKETPLACE_API_KEY: z.optional(z.string()),
    /** JSON {"slack_webhook_url": "...", "discord_webhook_url": "..."} in Secrets Manager. */
    CHAT_WEBHOOKS_SECRET_ARN: z.optional(z.string()),
    SLACK_WEBHOOK_URL: z.optional(z.string()),
    DISCORD_WEBHOOK_URL: z.optional(z.string()),
    SLACK_SIGNING_SECRET_ARN: z.optional(z.string()),
    SLACK_SIGNING_SECRET: z.optional(z.string()),
    /** Standard Webhooks key (`whsec_…`) that signs callbacks and lifecycle events; never the webhook secret. */
    CALLBACK_SIGNING_SECRET_ARN: z.optional(z.string()),
    CALLBACK_SIGNING_SECRET: z.optional(z.string()),
    CALLBACK_SIGNING_SECRET_PREVIOUS: z.optional(z.string()),
    /** Caller keys (issue 24): the secret their stored secrets are encrypted under (AWS: ARN; locally: value, else derived from WEBHOOK_SECRET). */
    CALLER_KEYS_SECRET_ARN: z.optional(z.string()),
    CALLER_KEYS_SECRET: z.optional(z.string()),
    /**
     * The key of the relay's own root password of each order (issue 38 §4; AWS: ARN; locally: value,
     * else derived from WEBHOOK_SECRET), and locally its previous value during a rotation.
     */
    SSH_PASSWORD_SECRET_ARN: z.optional(z.string()),
    SSH_PASSWORD_SECRET: z.optional(z.string()),
    SSH_PASSWORD_SECRET_PREVIOUS: z.optional(z.string()),
  });

let schema: ReturnType<typeof buildRelayEnvSchema> | undefined;

/** The environment's zod schema (built once, on first use). */
export const relayEnvSchema = (): ReturnType<typeof buildRelayEnvSchema> => (schema ??= buildRelayEnvSchema());

export type RelayEnv = z.infer<ReturnType<typeof buildRelayEnvSchema>>;

let cached: RelayEnv | undefined;

/** Parses `process.env` once; throws naming every bad variable. `reset` is for tests. */
export const relayEnv = (options: { reset?: boolean } = {}): RelayEnv => {
  if (!cached || options.reset) cached = relayEnvSchema().parse(process.env, ENGLISH_TEXTS);
  return cached;
};
