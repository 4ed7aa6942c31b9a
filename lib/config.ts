/**
 * Typed relay configuration with the spec's defaults (order-relay.md §2.1). The settings the
 * functions share are declared once in contract/settings.ts; this adds what only the stack uses.
 */
import * as z from 'zod';
import {
  idListProblem,
  parseIdList,
  SETTINGS,
  type DeployedSettingKey,
  type Setting,
  type SettingValueOf,
} from '../contract/settings';
import { PortsSchema } from '../contract/shapes';
import { isPublicKeyLineShape } from '../contract/ssh-keys';

/** The deploy-time schema of one setting (CDK context values may be strings: numbers are coerced). */
const deployedSchema = (key: string, s: Setting): z.ZodType => {
  switch (s.kind) {
    case 'url':
      return z.url();
    case 'text':
      return z.string().min(1);
    case 'ssh-key':
      // Its type and blob, one line, never a private key (the request rules parse the blob itself).
      return z
        .string()
        .refine(
          isPublicKeyLineShape,
          `${key} must be one OpenSSH public key line (the .pub file's), never a private key`,
        );
    case 'ports':
      // PortsSchema is zod/mini (shared with the bundled functions); the pipe gives it classic methods.
      return z.pipe(z.unknown(), PortsSchema);
    case 'bool':
      return z.boolean();
    case 'choice':
      return z.enum(s.choices ?? [''], `${key} must be one of ${(s.choices ?? []).join(', ')}`);
    case 'int': {
      const base = s.min === 0 ? z.coerce.number().int().nonnegative() : z.coerce.number().int().positive();
      return s.max ? base.max(s.max.value, `${key} must be at most ${s.max.value} (${s.max.reason})`) : base;
    }
    case 'amount': {
      const base = z.coerce.number().nonnegative();
      return s.max ? base.max(s.max.value, `${key} must be at most ${s.max.value} (${s.max.reason})`) : base;
    }
    case 'hours': {
      const base = z.coerce.number().positive();
      return s.max ? base.max(s.max.value, `${key} must be at most ${s.max.value} (${s.max.reason})`) : base;
    }
    case 'ids':
      // `-c key=T1,T2` (a string) or a JSON array in cdk.json.
      return z
        .union([z.string(), z.array(z.string())])
        .transform((value) => (typeof value === 'string' ? parseIdList(value) : value.map((id) => id.trim())))
        .superRefine((ids, ctx) => {
          const problem = idListProblem(key, ids);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        });
  }
};

type DeployedShape = {
  [K in DeployedSettingKey]: (typeof SETTINGS)[K] extends { readonly optional: true }
    ? z.ZodOptional<z.ZodType<SettingValueOf<K>>>
    : z.ZodDefault<z.ZodType<SettingValueOf<K>>>;
};

const deployedShape = (): DeployedShape => {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, s] of Object.entries(SETTINGS) as [string, Setting][]) {
    if (s.deployed === false) continue;
    if (s.optional) {
      shape[key] = deployedSchema(key, s).optional();
      continue;
    }
    const fallback = s.deployedDefault ?? s.default;
    if (fallback === undefined) throw new Error(`setting ${key} needs a deployed default`);
    shape[key] = deployedSchema(key, s).default(fallback);
  }
  return shape as unknown as DeployedShape;
};

export const RelayConfigSchema = z.object({
  ...deployedShape(),
  /** Optional e-mail subscribed to the alarm topic. */
  alarmEmail: z.email().optional(),
  /** API stage throttling: the outer guard in front of the per-address limit. */
  apiThrottle: z
    .object({ rateLimit: z.number().positive(), burstLimit: z.number().int().positive() })
    .default({ rateLimit: 50, burstLimit: 100 }),
  /** Days of CloudWatch log retention for every log group. */
  logRetentionDays: z.number().int().positive().default(30),
});

export type RelayConfig = z.infer<typeof RelayConfigSchema>;

/** Validates once and fills the spec's defaults; throws naming every bad field. */
export const relayConfig = (input: z.input<typeof RelayConfigSchema> = {}): RelayConfig =>
  RelayConfigSchema.parse(input);
