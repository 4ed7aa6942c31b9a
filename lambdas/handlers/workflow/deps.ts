/**
 * The workflow tasks' dependencies, each built once per Lambda instance on first use. Lazy and per
 * port, so a module import (tests, local runtime) reads no environment, and a function only builds
 * the adapters it uses (ReserveQuota never needs the marketplace key). The notifier lives in
 * ./notifier-deps.ts: only ReportResult and ExecutionEnded deliver results, so only their bundles
 * carry the HTTP transport and SSRF guard.
 */
import type { PlaceOrderDeps } from '../../domain/create-order/place-order';
import type {
  MarketplaceClient,
  PlacementIntents,
  ServerClaims,
  SlidingWindow,
  SshLoginProbe,
  SshProbe,
  TaskRepository,
  WaitingTasks,
} from '../../domain/ports';
import { relayEnv } from '../../adapters/env';
import {
  feesFromEnv,
  avoidedHostsFromEnv,
  hostRecordsFromEnv,
  placementIntentsFromEnv,
  serverClaimsFromEnv,
  slidingWindowFromEnv,
  spendStoreFromEnv,
  taskRepositoryFromEnv,
  keySshKeysFromEnv,
  waitingTasksFromEnv,
} from '../../adapters/from-env';
import { lazy } from '../../adapters/lazy';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import { sshProbeFromEnv } from '../../adapters/ssh-banner-probe';
import { marketplaceApiKey, sshPasswordSecrets } from '../../adapters/secrets';
import { relaySshPasswords, type RelaySshPasswords } from '../../domain/hosts/ssh-password';
import { orderAccessSealerFromEnv, replacementEnvSealerFromEnv } from '../../adapters/caller-key-sealer';
import { DEFAULT_KEY_NAME } from '../../domain/teams/caller-keys';

/** The shared adapters, built on first use (also used by ./notifier-deps.ts). */
export const marketplace = /* @__PURE__ */ lazy<MarketplaceClient>(() => marketplaceFromEnv(relayEnv()));
/**
 * Task records, with the sealer of their access secrets (issue 37 §3: PlaceOrder sends them, CheckOrder
 * logs in, ReportResult shows the token) and of a standing order's env (issue 38 §7: PlaceOrder opens it).
 */
export const tasks = /* @__PURE__ */ lazy<TaskRepository>(() =>
  taskRepositoryFromEnv(relayEnv(), replacementEnvSealerFromEnv(relayEnv()), orderAccessSealerFromEnv(relayEnv())),
);
/** The caller keys' SSH public keys (issue 37 §2), and DEFAULT_SSH_PUBLIC_KEY for the shared secret's. */
const sshKeys = /* @__PURE__ */ lazy(() => keySshKeysFromEnv(relayEnv()));
const sshKeyOf = async (keyName: string): Promise<string | undefined> =>
  keyName === DEFAULT_KEY_NAME ? relayEnv().DEFAULT_SSH_PUBLIC_KEY : sshKeys().get(keyName);
export const quota = /* @__PURE__ */ lazy<SlidingWindow>(() => slidingWindowFromEnv(relayEnv()));
export const claims = /* @__PURE__ */ lazy<ServerClaims>(() => serverClaimsFromEnv(relayEnv()));
/** READINESS_PROBE=ssh: the banner probe, under its own SSRF policy (ALLOW_PRIVATE_SSH_PROBE, issue 29 §7); otherwise none here. */
const sshProbe = /* @__PURE__ */ lazy<SshProbe | undefined>(() => sshProbeFromEnv(relayEnv()));
/**
 * READINESS_PROBE=ssh-login (issue 31 §4): the relay's own password for an order, derived from the
 * task id with the ssh password secret (issue 38 §4), which only PlaceOrder and CheckOrder may read.
 * Orders placed before that secret existed were sent HMAC(API key, task id): their placement names
 * no `password_key`, and CheckOrder (which reads the API key to call my_orders anyway) logs in to them
 * with that derivation, so the tasks in flight at the deploy still become ready. The API-key path
 * serves only those: every order placed since names its key.
 */
const relayPasswords = (): RelaySshPasswords | undefined => {
  const env = relayEnv();
  if (env.READINESS_PROBE !== 'ssh-login') return undefined;
  return relaySshPasswords(
    () => sshPasswordSecrets(env),
    () => marketplaceApiKey(env),
  );
};
/** The password the readiness login uses (issue 37 §1): the caller's when it gave one, else the relay's own. */
const loginPassword = (): ((taskId: string, passwordKey: string | undefined) => Promise<string>) | undefined => {
  const own = relayPasswords();
  if (!own) return undefined;
  return async (taskId, passwordKey) =>
    (await tasks().orderAccess?.(taskId))?.ssh_password ?? own.forLogin(taskId, passwordKey);
};

export const waiting = /* @__PURE__ */ lazy<WaitingTasks>(() => waitingTasksFromEnv(relayEnv()));

/** The relay's host records (issue 31 §2): FindServer leaves avoided hosts out, ReportResult records outcomes. */
export const hosts = /* @__PURE__ */ lazy(() => hostRecordsFromEnv(relayEnv()));

/** What FindServer reads of them: the avoided hosts only. */
const avoidedHosts = /* @__PURE__ */ lazy(() => avoidedHostsFromEnv(relayEnv()));

export const findServerDeps = async () => {
  const limit = relayEnv().SPEND_LIMIT_USD_PER_DAY;
  return {
    hosts: avoidedHosts(),
    marketplace: marketplace(),
    claims: claims(),
    tasks: tasks(),
    waiting: waiting(),
    ...(limit !== undefined ? { spendLimitUsdPerDay: limit } : {}),
    fees: feesFromEnv(relayEnv()),
  };
};
/** Spending budgets and the ledger (issue 24): ReserveQuota reserves, ReportResult and ExecutionEnded settle. */
export const spend = /* @__PURE__ */ lazy(() => spendStoreFromEnv(relayEnv()));
export const reserveQuotaDeps = async () => {
  const env = relayEnv();
  return {
    quota: quota(),
    spend: spend(),
    maxOrdersPerHour: env.MAX_ORDERS_PER_HOUR,
    // A standing order the cap or a budget refuses goes back to waiting (issue 23, create-order/wait-for-quota.ts).
    standing: { waiting: waiting(), tasks: tasks(), claims: claims() },
    ...(env.SPEND_LIMIT_USD_PER_DAY !== undefined ? { spendLimitUsdPerDay: env.SPEND_LIMIT_USD_PER_DAY } : {}),
    fees: feesFromEnv(env),
  };
};
export const intents = /* @__PURE__ */ lazy<PlacementIntents>(() => placementIntentsFromEnv(relayEnv()));

export const placeOrderDeps = async (): Promise<PlaceOrderDeps> => {
  const own = relayPasswords();
  return {
    marketplace: marketplace(),
    tasks: tasks(),
    claims: claims(),
    intents: intents(),
    visibleTimeoutMs: relayEnv().ORDER_VISIBLE_TIMEOUT_SECONDS * 1000,
    clock: Date.now,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    ...(own ? { sshPassword: (taskId: string) => own.forOrder(taskId) } : {}),
    access: tasks(),
    sshKeyOf,
  };
};
/**
 * CheckOrder's deps. `loginProbe` (READINESS_PROBE=ssh-login) is passed in by check-order.ts, the
 * one handler that imports ssh2, so no other function's bundle carries it.
 */
export const checkOrderDeps = async (loginProbe?: () => SshLoginProbe) => {
  const probe = sshProbe();
  const password = loginPassword();
  return {
    marketplace: marketplace(),
    ...(probe ? { sshProbe: probe } : {}),
    ...(password && loginProbe ? { sshLogin: { probe: loginProbe(), password } } : {}),
  };
};
export const cancelOrderDeps = async () => ({ marketplace: marketplace(), tasks: tasks(), intents: intents() });
