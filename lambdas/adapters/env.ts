/**
 * The Lambda environment contract, parsed once at cold start. The same names are used in AWS
 * (set by the CDK constructs) and locally (set by `npm start` from the shell or `.env`).
 * The settings are declared once in contract/settings.ts; resource names and secrets are added here.
 * Nothing local is assumed: TABLE_NAME and MARKETPLACE_URL must be set (the stack and the local
 * runtime set them), so a miswired function fails at cold start instead of calling the wrong place.
 * Secret values come either from `<NAME>_ARN` (Secrets Manager, AWS) or `<NAME>` (plain, local).
 */
import * as z from 'zod';
import { SETTINGS, type Setting, type SettingKey, type SettingValueOf } from '../../contract/settings';
import { PortsSchema } from '../../contract/shapes';

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .transform((v) => v === 'true' || v === '1');

const portsJson = (name: string) => z.string().transform((raw, ctx) => {
  try {
    return PortsSchema.parse(JSON.parse(raw));
  } catch {
    ctx.addIssue({ code: 'custom', message: `${name} must be a JSON object like {"22":"tcp","8888":"http"}` });
    return z.NEVER;
  }
});

/** The env-string schema of one setting. */
const envSchema = (s: Setting): z.ZodType => {
  switch (s.kind) {
    case 'url':
      return z.url();
    case 'text':
      return z.string().min(1);
    case 'ports':
      return portsJson(s.env);
    case 'bool':
      return bool;
    case 'int': {
      const base = s.min === 0 ? z.coerce.number().int().nonnegative() : z.coerce.number().int().positive();
      return s.max ? base.max(s.max.value, `${s.env} must be at most ${s.max.value} (${s.max.reason})`) : base;
    }
    case 'hours': {
      const base = z.coerce.number().positive();
      return s.max ? base.max(s.max.value, `${s.env} must be at most ${s.max.value} (${s.max.reason})`) : base;
    }
  }
};

/** An optional setting: unset or empty = undefined. */
const optionalEnv = (schema: z.ZodType): z.ZodType => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

type Settings = typeof SETTINGS;
type SettingsEnvShape = {
  [K in SettingKey as Settings[K]['env']]: Settings[K] extends { readonly default: unknown }
    ? z.ZodDefault<z.ZodType<SettingValueOf<K>>>
    : Settings[K] extends { readonly optional: true }
      ? z.ZodOptional<z.ZodType<SettingValueOf<K>>>
      : z.ZodType<SettingValueOf<K>>;
};

const settingsEnvShape = (): SettingsEnvShape => {
  const shape: Record<string, z.ZodType> = {};
  for (const s of Object.values(SETTINGS) as Setting[]) {
    shape[s.env] = s.optional ? optionalEnv(envSchema(s)) : s.default === undefined ? envSchema(s) : envSchema(s).default(s.default);
  }
  return shape as unknown as SettingsEnvShape;
};

export const RelayEnvSchema = z.object({
  TABLE_NAME: z.string().min(1),
  STATE_MACHINE_ARN: z.string().optional(),
  JOB_QUEUE_URL: z.string().optional(),
  ...settingsEnvShape(),
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
