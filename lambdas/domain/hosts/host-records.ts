/**
 * The relay's own record of each host (issue 31 §2): every outcome the relay sees on a server, one
 * record per host (kept 30 days after its last outcome), and the avoidance of hosts that failed to
 * start: a host that failed readiness or login HOST_AVOID_AFTER_FAILURES times within 24 h is avoided
 * for HOST_AVOID_HOURS.
 *
 * The record is the relay's evidence, not one caller's (issue 38 §3): a caller's image or command can
 * make any start fail (no sshd, a refused login), so a host is avoided by every search only when its
 * failed starts come from at least two caller keys, or from causes no image can produce (the order
 * never ran: a readiness timeout). Failures from one key alone avoid the host for that key alone.
 * Each key's own counts are kept beside the relay's, so a `read` key sees its own outcomes only.
 *
 * Pure rules and the store's port; the DynamoDB adapter is
 * lambdas/adapters/dynamodb/dynamodb-host-records.ts. Times are epoch milliseconds unless named `_at` (seconds).
 */
import type { WorkflowState } from '../create-order/workflow-state';
import { DEFAULT_KEY_NAME } from '../teams/caller-keys';

/** How long a host's record is kept after its last outcome (DynamoDB TTL). */
export const HOST_RECORD_DAYS = 30;
/** The window failures are counted in for avoidance. */
export const HOST_FAILURE_WINDOW_HOURS = 24;
/** Times to ready kept per host (the latest), for the median. */
export const READY_SAMPLE_SIZE = 25;
/** Failure times kept per host (the latest): enough for any sensible HOST_AVOID_AFTER_FAILURES. */
export const FAILURE_SAMPLE_SIZE = 20;
/** Keys whose own counts a record keeps (the latest seen, within HOST_RECORD_DAYS): bounds the item. */
export const MAX_KEYS_PER_HOST = 100;

/** One outcome the relay saw on a server. */
export type HostOutcome =
  | { readonly kind: 'placed' }
  | { readonly kind: 'ready'; readonly seconds: number }
  /** The order never became ready in the window (the ssh probe's cause, if any, is its own kind). */
  | { readonly kind: 'readiness_timeout' }
  | { readonly kind: 'ssh_never_answered' }
  | { readonly kind: 'login_refused' }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'outbid' };

/** The outcomes that are failed starts. */
export type FailedStartKind = 'readiness_timeout' | 'ssh_never_answered' | 'login_refused';

/** Outcomes that count towards avoidance: the host failed to start (readiness or login). */
export const isFailedStart = (outcome: HostOutcome): outcome is { readonly kind: FailedStartKind } =>
  outcome.kind === 'readiness_timeout' || outcome.kind === 'ssh_never_answered' || outcome.kind === 'login_refused';

/**
 * A failed start no caller's image or command can produce: the order never ran (the marketplace
 * never showed it running, or showed no usable ssh endpoint). An ssh endpoint that never answers or
 * refuses the login is the image's doing as much as the host's.
 */
export const isHostOnlyFailure = (kind: FailedStartKind): boolean => kind === 'readiness_timeout';

/** One failed start: when, on whose order, and how. */
export interface HostFailure {
  /** Epoch seconds. */
  readonly at: number;
  /** The caller key whose order failed (`default` for the shared secret). */
  readonly key: string;
  readonly kind: FailedStartKind;
}

export interface HostAvoidance {
  /** Epoch seconds. */
  readonly until: number;
  readonly reason: string;
  /** `auto` (failed starts) or `operator`. */
  readonly by: 'auto' | 'operator';
}

/** An avoidance an outcome started: relay-wide, or (with `key`) for that caller key alone. */
export interface StartedAvoidance extends HostAvoidance {
  readonly key?: string;
}

/** One key's own counts on a host (what that key is shown). */
export interface KeyHostCounts {
  readonly placed: number;
  readonly ready: number;
  readonly readiness_timeouts: number;
  readonly ssh_never_answered: number;
  readonly login_refused: number;
  readonly outbids: number;
  /** Epoch seconds of the key's last outcome here. */
  readonly updated_at: number;
}

/** What a host's record counts, as stored and as listed: its outcomes, by kind. */
export interface HostCounts {
  readonly placed: number;
  readonly ready: number;
  readonly readiness_timeouts: number;
  readonly ssh_never_answered: number;
  readonly login_refused: number;
  /** Create-order refusals on this host, by the refusal's text. */
  readonly refusals: Readonly<Record<string, number>>;
  readonly outbids: number;
}

export interface HostRecord extends HostCounts {
  readonly server_id: number;
  /** Seconds from placement to ready, the latest READY_SAMPLE_SIZE. */
  readonly ready_seconds: readonly number[];
  /** The latest failed starts (readiness or login), with their keys. */
  readonly failures: readonly HostFailure[];
  /** The relay-wide avoidance (every search), automatic or an operator's. */
  readonly avoided?: HostAvoidance;
  /** Automatic avoidances for one key alone: key → epoch seconds until. */
  readonly avoided_for?: Readonly<Record<string, number>>;
  /** Each key's own counts (at most MAX_KEYS_PER_HOST keys, the latest). */
  readonly by_key?: Readonly<Record<string, KeyHostCounts>>;
  /** Epoch seconds of the last outcome. */
  readonly updated_at: number;
}

export const emptyHostRecord = (serverId: number, nowSeconds: number): HostRecord => ({
  server_id: serverId,
  placed: 0,
  ready: 0,
  readiness_timeouts: 0,
  ssh_never_answered: 0,
  login_refused: 0,
  refusals: {},
  outbids: 0,
  ready_seconds: [],
  failures: [],
  updated_at: nowSeconds,
});

export interface AvoidPolicy {
  /** HOST_AVOID_AFTER_FAILURES. */
  readonly afterFailures: number;
  /** HOST_AVOID_HOURS. */
  readonly hours: number;
}

export const DEFAULT_AVOID_POLICY: AvoidPolicy = { afterFailures: 2, hours: 24 };

const kindText = (kind: FailedStartKind): string => kind.replace(/_/g, ' ');

/** The reason avoidance names for failed starts: `2 failed starts in 24 h (login refused)`, `… by 2 keys (…)`. */
const failedStartsReason = (count: number, keys: number, last: FailedStartKind): string =>
  `${count} failed starts in ${HOST_FAILURE_WINDOW_HOURS} h${keys > 1 ? ` by ${keys} keys` : ''} (${kindText(last)})`;

const emptyKeyCounts = (now: number): KeyHostCounts => ({
  placed: 0,
  ready: 0,
  readiness_timeouts: 0,
  ssh_never_answered: 0,
  login_refused: 0,
  outbids: 0,
  updated_at: now,
});

/** The counter an outcome adds one to (none for `ready`'s sample or a refusal's text). */
const COUNTER: Partial<Record<HostOutcome['kind'], keyof KeyHostCounts & keyof HostCounts>> = {
  placed: 'placed',
  ready: 'ready',
  readiness_timeout: 'readiness_timeouts',
  ssh_never_answered: 'ssh_never_answered',
  login_refused: 'login_refused',
  outbid: 'outbids',
};

/** The key's counts with one more outcome; keys older than HOST_RECORD_DAYS and beyond MAX_KEYS_PER_HOST go. */
const withKeyOutcome = (
  byKey: Readonly<Record<string, KeyHostCounts>> | undefined,
  key: string,
  outcome: HostOutcome,
  now: number,
): Record<string, KeyHostCounts> => {
  const counter = COUNTER[outcome.kind];
  const own = { ...(byKey?.[key] ?? emptyKeyCounts(now)), updated_at: now };
  const next = counter ? { ...own, [counter]: own[counter] + 1 } : own;
  const since = now - HOST_RECORD_DAYS * 86_400;
  const kept = Object.entries({ ...byKey, [key]: next })
    .filter(([, c]) => c.updated_at > since)
    .sort(([, a], [, b]) => b.updated_at - a.updated_at)
    .slice(0, MAX_KEYS_PER_HOST);
  return Object.fromEntries(kept);
};

/** The per-key avoidances still running at `now`. */
const runningFor = (avoidedFor: Readonly<Record<string, number>> | undefined, now: number): Record<string, number> =>
  Object.fromEntries(Object.entries(avoidedFor ?? {}).filter(([, until]) => until > now));

/**
 * A record with one more outcome of `key`'s order, and the avoidance it starts (`avoided`: only when
 * it starts now). Within 24 h, HOST_AVOID_AFTER_FAILURES failed starts avoid the host relay-wide when
 * they come from at least two keys or are all of a kind no image produces (HOST_AVOID_AFTER_FAILURES
 * readiness timeouts); from one key alone they avoid it for that key (`avoided.key`).
 */
export const withOutcome = (
  record: HostRecord,
  outcome: HostOutcome,
  nowMs: number,
  policy: AvoidPolicy = DEFAULT_AVOID_POLICY,
  key: string = DEFAULT_KEY_NAME,
): { readonly record: HostRecord; readonly avoided?: StartedAvoidance } => {
  const now = Math.floor(nowMs / 1000);
  let next: HostRecord = { ...record, updated_at: now, by_key: withKeyOutcome(record.by_key, key, outcome, now) };
  const counter = COUNTER[outcome.kind];
  if (counter) next = { ...next, [counter]: next[counter] + 1 };
  if (outcome.kind === 'ready')
    next = {
      ...next,
      ready_seconds: [...next.ready_seconds, Math.max(0, Math.round(outcome.seconds))].slice(-READY_SAMPLE_SIZE),
    };
  if (outcome.kind === 'refused') {
    const reason = outcome.reason.slice(0, 100) || 'refused';
    next = { ...next, refusals: { ...next.refusals, [reason]: (next.refusals[reason] ?? 0) + 1 } };
  }
  const avoidedFor = runningFor(next.avoided_for, now);
  next = { ...next, avoided_for: avoidedFor };
  if (!isFailedStart(outcome)) return { record: next };
  const since = now - HOST_FAILURE_WINDOW_HOURS * 3600;
  const failures = [...next.failures.filter((f) => f.at > since), { at: now, key, kind: outcome.kind }].slice(
    -FAILURE_SAMPLE_SIZE,
  );
  next = { ...next, failures };
  if (next.avoided !== undefined && next.avoided.until > now) return { record: next };
  const until = now + Math.round(policy.hours * 3600);
  const keys = new Set(failures.map((f) => f.key)).size;
  const hostOnly = failures.filter((f) => isHostOnlyFailure(f.kind)).length;
  if (failures.length >= policy.afterFailures && (keys > 1 || hostOnly >= policy.afterFailures)) {
    const avoided: HostAvoidance = {
      until,
      reason: failedStartsReason(failures.length, keys, outcome.kind),
      by: 'auto',
    };
    return { record: { ...next, avoided }, avoided };
  }
  const own = failures.filter((f) => f.key === key).length;
  if (own < policy.afterFailures || avoidedFor[key] !== undefined) return { record: next };
  const avoided: StartedAvoidance = { until, reason: failedStartsReason(own, 1, outcome.kind), by: 'auto', key };
  return { record: { ...next, avoided_for: { ...avoidedFor, [key]: until } }, avoided };
};

/** Whether a record's host is avoided at `nowMs`. */
export const isAvoided = (avoided: Pick<HostAvoidance, 'until'> | undefined, nowMs: number): boolean =>
  avoided !== undefined && avoided.until * 1000 > nowMs;

/** Whether `key`'s searches leave the host out at `nowMs`: avoided relay-wide, or for that key. */
export const isAvoidedFor = (record: HostRecord, key: string, nowMs: number): boolean =>
  isAvoided(record.avoided, nowMs) || (record.avoided_for?.[key] ?? 0) * 1000 > nowMs;

/** The median of a sample, undefined when empty. */
export const median = (values: readonly number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * A host's score, 0–1: the share of its placed orders that became ready, with one success and one
 * failure assumed before any evidence ((ready + 1) / (placed + 2)), so a new host scores 0.5 and one
 * order says little; halved while the host is avoided. Three decimals.
 */
export const hostScore = (record: HostRecord, nowMs: number): number => {
  const base = (record.ready + 1) / (Math.max(record.placed, record.ready) + 2);
  const score = isAvoided(record.avoided, nowMs) ? base / 2 : base;
  return Math.round(score * 1000) / 1000;
};

/** Who reads a record: a key that sees every key's outcomes (the default key, admin keys) or only its own. */
export interface HostViewer {
  readonly key: string;
  readonly sees_all?: boolean;
}

/** The default key: every outcome, and its own per-key avoidances. */
export const ALL_HOSTS_VIEWER: HostViewer = { key: DEFAULT_KEY_NAME, sees_all: true };

/**
 * A record as GET /webhook/hosts lists it. Relay-wide: `score`, `refusals` (the marketplace's
 * answers), `ready_seconds_median`, the relay-wide avoidance. The counts and `failures_24h` are the
 * viewer's own unless it sees every key's (the default key, admin keys).
 */
export interface HostView extends HostCounts {
  readonly server_id: number;
  readonly score: number;
  /** Median seconds from placement to ready; null before the first ready order. */
  readonly ready_seconds_median: number | null;
  /** Failed starts within the last 24 h. */
  readonly failures_24h: number;
  readonly avoided_until?: number;
  readonly avoided_reason?: string;
  readonly avoided_by?: 'auto' | 'operator';
  /** `relay`: every search leaves the host out; `key`: only the viewer's (its own failed starts). */
  readonly avoided_scope?: 'relay' | 'key';
  /** For a viewer that sees every key: the keys the host is avoided for alone (key → epoch seconds until). */
  readonly avoided_keys?: Readonly<Record<string, number>>;
  readonly updated_at: number;
}

const ownAvoidanceReason = (record: HostRecord, key: string, nowMs: number): string => {
  const since = Math.floor(nowMs / 1000) - HOST_FAILURE_WINDOW_HOURS * 3600;
  const own = record.failures.filter((f) => f.key === key);
  const last = own[own.length - 1];
  const recent = own.filter((f) => f.at > since).length;
  return last ? failedStartsReason(Math.max(recent, 1), 1, last.kind) : 'failed starts';
};

export const hostView = (record: HostRecord, nowMs: number, viewer: HostViewer = ALL_HOSTS_VIEWER): HostView => {
  const now = Math.floor(nowMs / 1000);
  const since = now - HOST_FAILURE_WINDOW_HOURS * 3600;
  const all = viewer.sees_all === true;
  const counts = all ? record : (record.by_key?.[viewer.key] ?? emptyKeyCounts(now));
  const failures = record.failures.filter((f) => f.at > since && (all || f.key === viewer.key));
  const relay = isAvoided(record.avoided, nowMs) ? record.avoided : undefined;
  const forKeys = runningFor(record.avoided_for, now);
  const ownUntil = forKeys[viewer.key];
  const avoided =
    relay !== undefined
      ? {
          avoided_until: relay.until,
          avoided_reason: relay.reason,
          avoided_by: relay.by,
          avoided_scope: 'relay' as const,
        }
      : ownUntil !== undefined
        ? {
            avoided_until: ownUntil,
            avoided_reason: ownAvoidanceReason(record, viewer.key, nowMs),
            avoided_by: 'auto' as const,
            avoided_scope: 'key' as const,
          }
        : {};
  return {
    server_id: record.server_id,
    score: hostScore(record, nowMs),
    placed: counts.placed,
    ready: counts.ready,
    readiness_timeouts: counts.readiness_timeouts,
    ssh_never_answered: counts.ssh_never_answered,
    login_refused: counts.login_refused,
    refusals: record.refusals,
    outbids: counts.outbids,
    ready_seconds_median: median(record.ready_seconds) ?? null,
    failures_24h: failures.length,
    ...avoided,
    ...(all && Object.keys(forKeys).length > 0 ? { avoided_keys: forKeys } : {}),
    updated_at: record.updated_at,
  };
};

/** Records as listed: hosts avoided for the viewer first, then by server id (the order pages follow). */
export const hostViews = (
  records: readonly HostRecord[],
  nowMs: number,
  viewer: HostViewer = ALL_HOSTS_VIEWER,
): HostView[] =>
  records
    .map((r) => hostView(r, nowMs, viewer))
    .sort(
      (a, b) =>
        Number(b.avoided_until !== undefined) - Number(a.avoided_until !== undefined) || a.server_id - b.server_id,
    );

/**
 * What a create-order task's end tells about its hosts, from its workflow state: each server a create
 * was refused on (with the refusal), and for the placed order its placement and then ready (with the
 * time to ready) or its failed start (login refused, ssh never answered, or a readiness timeout).
 * A task that ran out of its own time (soft deadline) or failed before placing says nothing more.
 */
export const outcomesOfTask = (
  state: Pick<WorkflowState, 'search' | 'placement' | 'check'>,
): { readonly server_id: number; readonly outcome: HostOutcome }[] => {
  const out: { server_id: number; outcome: HostOutcome }[] = [];
  for (const tried of state.search?.tried ?? [])
    out.push({ server_id: tried.server_id, outcome: { kind: 'refused', reason: tried.reason } });
  const placement = state.placement;
  if (placement?.retry) {
    out.push({ server_id: placement.server_id, outcome: { kind: 'refused', reason: placement.reason } });
    return out;
  }
  if (!placement) return out;
  const id = placement.server_id;
  out.push({ server_id: id, outcome: { kind: 'placed' } });
  const check = state.check;
  if (check?.ready) {
    const readyAt = check.ready_at ?? placement.placed_at;
    out.push({ server_id: id, outcome: { kind: 'ready', seconds: (readyAt - placement.placed_at) / 1000 } });
  } else if (check?.timedOut && check.reason !== 'soft_deadline') {
    const kind =
      check.pending === 'ssh_login_refused'
        ? 'login_refused'
        : check.pending === 'ssh_not_answering'
          ? 'ssh_never_answered'
          : 'readiness_timeout';
    out.push({ server_id: id, outcome: { kind } });
  }
  return out;
};

/** The hosts avoided at one instant, as every search reads them: relay-wide, and per key. */
export interface HostAvoidances {
  readonly relay: ReadonlySet<number>;
  readonly byKey: ReadonlyMap<string, ReadonlySet<number>>;
}

/** The hosts `key`'s searches leave out. */
export const avoidedFor = (avoidances: HostAvoidances, key: string): ReadonlySet<number> => {
  const own = avoidances.byKey.get(key);
  return own && own.size > 0 ? new Set([...avoidances.relay, ...own]) : avoidances.relay;
};

/** One line of the host index (lambdas/adapters/dynamodb/dynamodb-avoided-hosts.ts): what a search and a page need. */
export interface HostIndexLine {
  readonly server_id: number;
  /** Epoch seconds of the host's last outcome (its record expires HOST_RECORD_DAYS later). */
  readonly seen: number;
  /** Epoch seconds: the relay-wide avoidance's end. */
  readonly until?: number;
  /** Per-key avoidances: key → epoch seconds until. */
  readonly keys?: Readonly<Record<string, number>>;
}

/** Where a page of GET /webhook/hosts ends: the next page starts after it. */
export interface HostCursor {
  /** Whether the last host listed was avoided for the viewer (avoided hosts come first). */
  readonly avoided: boolean;
  readonly after: number;
}

/** The most hosts one page lists (one BatchGetItem). */
export const MAX_HOSTS_PAGE = 100;

/**
 * A page of the index for `viewer`: hosts avoided for it first, then the others, each by server id;
 * lines whose record has expired are left out. `avoided` counts every host avoided for the viewer.
 */
export const hostIndexPage = (
  lines: readonly HostIndexLine[],
  viewer: HostViewer,
  nowMs: number,
  limit: number,
  cursor?: HostCursor,
): { readonly ids: number[]; readonly next?: HostCursor; readonly avoided: number } => {
  const now = Math.floor(nowMs / 1000);
  const live = lines.filter((l) => l.seen > now - HOST_RECORD_DAYS * 86_400);
  const isAvoidedLine = (l: HostIndexLine): boolean => (l.until ?? 0) > now || (l.keys?.[viewer.key] ?? 0) > now;
  const ordered = live
    .map((l) => ({ id: l.server_id, avoided: isAvoidedLine(l) }))
    .sort((a, b) => Number(b.avoided) - Number(a.avoided) || a.id - b.id);
  const start = cursor
    ? ordered.findIndex((l) => (cursor.avoided && !l.avoided) || (l.avoided === cursor.avoided && l.id > cursor.after))
    : 0;
  const from = start < 0 ? ordered.length : start;
  const page = ordered.slice(from, from + limit);
  const last = page[page.length - 1];
  return {
    ids: page.map((l) => l.id),
    ...(from + limit < ordered.length && last ? { next: { avoided: last.avoided, after: last.id } } : {}),
    avoided: ordered.filter((l) => l.avoided).length,
  };
};

/** The relay's host records (issue 31 §2). */
export interface HostRecords {
  /** Adds an outcome of `key`'s order (default: the default key) to a host's record; answers the avoidance it started, if any. */
  record(serverId: number, outcome: HostOutcome, nowMs: number, key?: string): Promise<StartedAvoidance | undefined>;
  /** Server ids `key`'s searches leave out at `nowMs` (one read): avoided relay-wide or for that key. */
  avoided(nowMs: number, key?: string): Promise<ReadonlySet<number>>;
  /** Every avoidance at `nowMs`, relay-wide and per key (one read, for a sweep serving many keys). */
  avoidances(nowMs: number): Promise<HostAvoidances>;
  /** A page of records for `viewer` (one index read and one BatchGetItem of at most `limit` records). */
  page(
    viewer: HostViewer,
    nowMs: number,
    limit: number,
    cursor?: HostCursor,
  ): Promise<{ readonly records: HostRecord[]; readonly next?: HostCursor; readonly avoided: number }>;
  /** An operator's avoidance (relay-wide). Answers the record as it now is. */
  setAvoidance(serverId: number, avoided: HostAvoidance, nowMs: number): Promise<HostRecord>;
  /**
   * Ends every avoidance of the host (relay-wide and per key) and forgets the failed starts counted
   * towards the next one. Undefined when the host has no record (none is created).
   */
  clear(serverId: number, nowMs: number): Promise<HostRecord | undefined>;
}

/** The record after an operator avoids its host, or clears it (every key's avoidance and the failures counted towards avoidance go too). */
export const withAvoidance = (record: HostRecord, avoided: HostAvoidance | undefined, nowMs: number): HostRecord => {
  const { avoided: _old, ...rest } = record;
  const base = { ...rest, updated_at: Math.floor(nowMs / 1000) };
  return avoided ? { ...base, avoided } : { ...base, failures: [], avoided_for: {} };
};
