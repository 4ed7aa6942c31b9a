/**
 * Caller keys (issue 24): who may call the relay, with which scopes and limits. A request names its
 * key with X-Webhook-Key-Id and is signed with that key's secret; without the header it is signed
 * with the shared webhook secret and acts as the implicit `default` key, which has every scope and
 * sees every order (the spec's single caller). Pure rules: storage and encryption are ports.
 */
import * as z from 'zod/mini';
import { builtOnFirstUse } from '../zod-texts';
import { SCOPES, type Scope } from '../../../contract/scopes';

export type { Scope } from '../../../contract/scopes';

/** The implicit key of requests without X-Webhook-Key-Id (the shared webhook secret). */
export const DEFAULT_KEY_NAME = 'default';

/** A key name: what X-Webhook-Key-Id carries and the ledger groups by. */
export const KEY_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** How many keys one relay keeps (all in one DynamoDB item, well under its 400 KB limit). */
export const MAX_CALLER_KEYS = 200;

/** A key as stored. `secret` is sealed (encrypted); nothing else is secret. Times are Unix seconds. */
export interface CallerKeyRecord {
  readonly name: string;
  readonly scopes: readonly Scope[];
  /** The key's secret, encrypted by the key sealer (never stored or logged in clear). */
  readonly secret: string;
  readonly created_at: number;
  /** The key stops working at this instant (the end of its `--expires` day, UTC). */
  readonly expires_at?: number;
  readonly revoked_at?: number;
  /** Orders this key may place per rolling hour, beside MAX_ORDERS_PER_HOUR. */
  readonly orders_per_hour?: number;
  /** USD this key may reserve per UTC day. */
  readonly budget_usd_per_day?: number;
  /** A Slack user (`U123`) whose commands act as this key. */
  readonly slack_user?: string;
}

/**
 * Who a verified request is, as the task carries it (`origin.caller`) into the workflow and jobs.
 * Absent on a task = the default key.
 */
export const TaskCallerSchema = builtOnFirstUse(() =>
  z.object({
    key: z.string().check(z.minLength(1), z.maxLength(64)),
    /** The default key and keys with scope `admin` see, cancel and extend every order. */
    sees_all: z.optional(z.boolean()),
    orders_per_hour: z.optional(z.int().check(z.positive())),
    budget_usd_per_day: z.optional(z.number().check(z.positive())),
  }),
);
export type TaskCaller = Readonly<z.infer<ReturnType<typeof TaskCallerSchema>>>;

/** A verified caller: its task identity and its scopes. */
export interface Caller extends TaskCaller {
  readonly scopes: readonly Scope[];
}

export const DEFAULT_CALLER: Caller = { key: DEFAULT_KEY_NAME, sees_all: true, scopes: SCOPES };

/** The caller a usable key record stands for. */
export const callerOf = (record: CallerKeyRecord): Caller => ({
  key: record.name,
  scopes: record.scopes,
  sees_all: record.scopes.includes('admin'),
  ...(record.orders_per_hour !== undefined ? { orders_per_hour: record.orders_per_hour } : {}),
  ...(record.budget_usd_per_day !== undefined ? { budget_usd_per_day: record.budget_usd_per_day } : {}),
});

/** What a task records of its caller: nothing for the default key (so spec-mode tasks are unchanged). */
export const taskCallerOf = (caller: Caller): TaskCaller | undefined => {
  if (caller.key === DEFAULT_KEY_NAME) return undefined;
  const { scopes: _scopes, ...rest } = caller;
  return rest;
};

/** The name of the key a task ran as. */
export const keyNameOf = (caller: TaskCaller | undefined): string => caller?.key ?? DEFAULT_KEY_NAME;

/** True when the task's caller may act on every order (default or admin key). */
export const seesAllOrders = (caller: TaskCaller | undefined): boolean =>
  caller === undefined || caller.sees_all === true;

/** True when a task of `caller` may see or act on an order its key `owner` placed (undefined: not placed by a relay task with a key). */
export const mayTouchOrder = (caller: TaskCaller | undefined, owner: string | undefined): boolean =>
  seesAllOrders(caller) || (owner !== undefined && owner === caller?.key);

/** The failure result text of a job on an order that another key placed. */
export const notYourOrderText = (orderId: number, key: string): string =>
  `order ${orderId} is not an order of key ${key}`;

/** The failure result text of a cancel-task on a task another key made (or no task at all, seen by such a key). */
export const notYourTaskText = (taskId: string, key: string): string => `task ${taskId} is not a task of key ${key}`;

/** Why a key cannot be used now, or undefined when it can. Never shown to the caller (all answer 401). */
export const keyUnusableReason = (
  record: CallerKeyRecord | undefined,
  nowSeconds: number,
): 'unknown' | 'revoked' | 'expired' | undefined => {
  if (!record) return 'unknown';
  if (record.revoked_at !== undefined) return 'revoked';
  if (record.expires_at !== undefined && nowSeconds >= record.expires_at) return 'expired';
  return undefined;
};

/**
 * Why work a key started that has not spent yet stops (issue 29 §4), or undefined while the key is
 * usable: `key ci revoked` (also for a key deleted after its revocation), `key ci expired`. The
 * waiting standing orders of the key fail with it; its outbid replacement rounds stop with it.
 */
export const keyStoppedText = (
  name: string,
  records: readonly CallerKeyRecord[],
  nowSeconds: number,
): string | undefined => {
  const reason = keyUnusableReason(
    records.find((r) => r.name === name),
    nowSeconds,
  );
  if (reason === undefined) return undefined;
  return reason === 'expired' ? `key ${name} expired` : `key ${name} revoked`;
};

/** The stop text of a key (see keyStoppedText) from the store the function has; undefined = usable. */
export type KeyCheck = (name: string, nowSeconds: number) => Promise<string | undefined>;

/** The KeyCheck of a caller key store (its per-instance cache applies: CALLER_KEY_CACHE_SECONDS). */
export const keyCheckOf =
  (store: Pick<CallerKeyStore, 'list'>): KeyCheck =>
  async (name, nowSeconds) =>
    keyStoppedText(name, await store.list(), nowSeconds);

/** The 403 text of a missing scope, or undefined when the caller has it. */
export const scopeRefusal = (caller: Caller, scope: Scope): string | undefined =>
  caller.scopes.includes(scope) ? undefined : `key ${caller.key} may not ${scope}`;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The end of a UTC day `YYYY-MM-DD` (the first second of the next day), or undefined when it is no date. */
export const endOfUtcDay = (date: string): number | undefined => {
  const match = DATE.exec(date);
  if (!match) return undefined;
  const ms = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  if (new Date(ms).toISOString().slice(0, 10) !== date) return undefined;
  return ms / 1000 + 86_400;
};

/** POST /admin/keys body, once its schema (CreateKeyBodySchema, lambdas/http/requests.ts) accepted it. */
export interface CreateKeyBody {
  readonly name: string;
  readonly scopes: readonly Scope[];
  readonly orders_per_hour?: number;
  readonly budget_usd_per_day?: number;
  readonly expires?: string;
  readonly slack_user?: string;
}

/** The key record of a valid create body (the sealed secret from the caller), or the 400 text. */
export const newKeyRecord = (
  body: CreateKeyBody,
  sealedSecret: string,
  nowSeconds: number,
): { readonly ok: true; readonly record: CallerKeyRecord } | { readonly ok: false; readonly error: string } => {
  const expiresAt = body.expires === undefined ? undefined : endOfUtcDay(body.expires);
  if (expiresAt !== undefined && expiresAt <= nowSeconds)
    return { ok: false, error: 'expires must be today or later (UTC)' };
  return {
    ok: true,
    record: {
      name: body.name,
      scopes: [...new Set(body.scopes)],
      secret: sealedSecret,
      created_at: nowSeconds,
      ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
      ...(body.orders_per_hour !== undefined ? { orders_per_hour: body.orders_per_hour } : {}),
      ...(body.budget_usd_per_day !== undefined ? { budget_usd_per_day: body.budget_usd_per_day } : {}),
      ...(body.slack_user !== undefined ? { slack_user: body.slack_user } : {}),
    },
  };
};

/** A key as listed (never its secret). */
export interface KeyView {
  readonly name: string;
  readonly scopes: readonly Scope[];
  readonly status: 'active' | 'revoked' | 'expired';
  readonly created_at: string;
  readonly expires_at?: string;
  readonly revoked_at?: string;
  readonly orders_per_hour?: number;
  readonly budget_usd_per_day?: number;
  readonly slack_user?: string;
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();

export const keyView = (record: CallerKeyRecord, nowSeconds: number): KeyView => {
  const reason = keyUnusableReason(record, nowSeconds);
  return {
    name: record.name,
    scopes: record.scopes,
    status: reason === 'revoked' ? 'revoked' : reason === 'expired' ? 'expired' : 'active',
    created_at: iso(record.created_at),
    ...(record.expires_at !== undefined ? { expires_at: iso(record.expires_at) } : {}),
    ...(record.revoked_at !== undefined ? { revoked_at: iso(record.revoked_at) } : {}),
    ...(record.orders_per_hour !== undefined ? { orders_per_hour: record.orders_per_hour } : {}),
    ...(record.budget_usd_per_day !== undefined ? { budget_usd_per_day: record.budget_usd_per_day } : {}),
    ...(record.slack_user !== undefined ? { slack_user: record.slack_user } : {}),
  };
};

/** Where caller keys are kept (one item; conditional writes). */
export interface CallerKeyStore {
  /** Every key, revoked ones included. `fresh` reads past any cache. */
  list(options?: { readonly fresh?: boolean }): Promise<readonly CallerKeyRecord[]>;
  /** Adds a key; false when a key of that name exists (revoked keys keep their name; deleted ones for 30 days). */
  add(record: CallerKeyRecord): Promise<boolean>;
  /** Marks a key revoked; 'unknown' when there is none, 'already' when it was revoked before. */
  revoke(name: string, nowSeconds: number): Promise<'revoked' | 'already' | 'unknown'>;
  /**
   * Deletes a revoked key (issue 29 §7): it stops counting against MAX_CALLER_KEYS; its name stays
   * taken for 30 days (issue 38 §5). 'active' when the key is not revoked (nothing deleted), 'unknown' when there is none.
   */
  remove(name: string, nowSeconds: number): Promise<'deleted' | 'active' | 'unknown'>;
}

/** The 409 text of a create past MAX_CALLER_KEYS (issue 29 §7). */
export const keyLimitText = (max: number = MAX_CALLER_KEYS): string => `key limit reached (${max})`;

/** A create past MAX_CALLER_KEYS: the admin route answers 409 keyLimitText. */
export class KeyLimitReachedError extends Error {
  public constructor(max: number = MAX_CALLER_KEYS) {
    super(keyLimitText(max));
    this.name = 'KeyLimitReachedError';
  }
}

/** Encrypts key secrets for storage and decrypts them to verify a signature. */
export interface KeySealer {
  seal(secret: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

/**
 * The usable key of a name with its secret opened, or undefined (unknown, revoked, expired). A name
 * the store's cache does not know is looked up once more past the cache (a key just created).
 */
export const resolveCallerKey = async (
  deps: { readonly store: CallerKeyStore; readonly sealer: KeySealer },
  name: string,
  nowSeconds: number,
): Promise<{ readonly caller: Caller; readonly secret: string } | undefined> => {
  let record = (await deps.store.list()).find((r) => r.name === name);
  record ??= (await deps.store.list({ fresh: true })).find((r) => r.name === name);
  if (record === undefined || keyUnusableReason(record, nowSeconds) !== undefined) return undefined;
  return { caller: callerOf(record), secret: await deps.sealer.open(record.secret) };
};
