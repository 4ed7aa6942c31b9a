/**
 * The relay's own record of each host (issue 31 §2): every outcome the relay sees on a server, one
 * record per host (kept 30 days after its last outcome), and the avoidance of hosts that failed to
 * start: a host that failed readiness or login HOST_AVOID_AFTER_FAILURES times within 24 h is avoided
 * by every search for HOST_AVOID_HOURS. Pure rules and the store's port; the DynamoDB adapter is
 * lambdas/adapters/dynamodb/dynamodb-host-records.ts. Times are epoch milliseconds unless named `_at` (seconds).
 */
import type { WorkflowState } from '../create-order/workflow-state';

/** How long a host's record is kept after its last outcome (DynamoDB TTL). */
export const HOST_RECORD_DAYS = 30;
/** The window failures are counted in for avoidance. */
export const HOST_FAILURE_WINDOW_HOURS = 24;
/** Times to ready kept per host (the latest), for the median. */
export const READY_SAMPLE_SIZE = 25;
/** Failure times kept per host (the latest): enough for any sensible HOST_AVOID_AFTER_FAILURES. */
export const FAILURE_SAMPLE_SIZE = 20;

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

/** Outcomes that count towards avoidance: the host failed to start (readiness or login). */
export const isFailedStart = (outcome: HostOutcome): boolean =>
  outcome.kind === 'readiness_timeout' || outcome.kind === 'ssh_never_answered' || outcome.kind === 'login_refused';

export interface HostAvoidance {
  /** Epoch seconds. */
  readonly until: number;
  readonly reason: string;
  /** `auto` (failed starts) or `operator`. */
  readonly by: 'auto' | 'operator';
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
  /** Epoch seconds of the latest failed starts (readiness or login). */
  readonly failures: readonly number[];
  readonly avoided?: HostAvoidance;
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

/** The reason avoidance names for failed starts: `2 failed starts in 24 h (login refused)`. */
const failedStartsReason = (count: number, last: HostOutcome): string =>
  `${count} failed starts in ${HOST_FAILURE_WINDOW_HOURS} h (${last.kind.replace(/_/g, ' ')})`;

/**
 * A record with one more outcome, and the avoidance it starts when that outcome is the
 * HOST_AVOID_AFTER_FAILURES-th failed start within 24 h (`avoided`: only when it starts now).
 */
export const withOutcome = (
  record: HostRecord,
  outcome: HostOutcome,
  nowMs: number,
  policy: AvoidPolicy = DEFAULT_AVOID_POLICY,
): { readonly record: HostRecord; readonly avoided?: HostAvoidance } => {
  const now = Math.floor(nowMs / 1000);
  let next: HostRecord = { ...record, updated_at: now };
  switch (outcome.kind) {
    case 'placed':
      next = { ...next, placed: next.placed + 1 };
      break;
    case 'ready':
      next = {
        ...next,
        ready: next.ready + 1,
        ready_seconds: [...next.ready_seconds, Math.max(0, Math.round(outcome.seconds))].slice(-READY_SAMPLE_SIZE),
      };
      break;
    case 'readiness_timeout':
      next = { ...next, readiness_timeouts: next.readiness_timeouts + 1 };
      break;
    case 'ssh_never_answered':
      next = { ...next, ssh_never_answered: next.ssh_never_answered + 1 };
      break;
    case 'login_refused':
      next = { ...next, login_refused: next.login_refused + 1 };
      break;
    case 'refused': {
      const reason = outcome.reason.slice(0, 100) || 'refused';
      next = { ...next, refusals: { ...next.refusals, [reason]: (next.refusals[reason] ?? 0) + 1 } };
      break;
    }
    case 'outbid':
      next = { ...next, outbids: next.outbids + 1 };
      break;
  }
  if (!isFailedStart(outcome)) return { record: next };
  const since = now - HOST_FAILURE_WINDOW_HOURS * 3600;
  const failures = [...next.failures.filter((t) => t > since), now].slice(-FAILURE_SAMPLE_SIZE);
  next = { ...next, failures };
  const alreadyAvoided = next.avoided !== undefined && next.avoided.until > now;
  if (alreadyAvoided || failures.length < policy.afterFailures) return { record: next };
  const avoided: HostAvoidance = {
    until: now + Math.round(policy.hours * 3600),
    reason: failedStartsReason(failures.length, outcome),
    by: 'auto',
  };
  return { record: { ...next, avoided }, avoided };
};

/** Whether a record's host is avoided at `nowMs`. */
export const isAvoided = (avoided: Pick<HostAvoidance, 'until'> | undefined, nowMs: number): boolean =>
  avoided !== undefined && avoided.until * 1000 > nowMs;

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

/** A record as GET /webhook/hosts lists it. */
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
  readonly updated_at: number;
}

export const hostView = (record: HostRecord, nowMs: number): HostView => {
  const since = Math.floor(nowMs / 1000) - HOST_FAILURE_WINDOW_HOURS * 3600;
  const avoided = isAvoided(record.avoided, nowMs) ? record.avoided : undefined;
  return {
    server_id: record.server_id,
    score: hostScore(record, nowMs),
    placed: record.placed,
    ready: record.ready,
    readiness_timeouts: record.readiness_timeouts,
    ssh_never_answered: record.ssh_never_answered,
    login_refused: record.login_refused,
    refusals: record.refusals,
    outbids: record.outbids,
    ready_seconds_median: median(record.ready_seconds) ?? null,
    failures_24h: record.failures.filter((t) => t > since).length,
    ...(avoided ? { avoided_until: avoided.until, avoided_reason: avoided.reason, avoided_by: avoided.by } : {}),
    updated_at: record.updated_at,
  };
};

/** Records as listed: avoided hosts first, then by score (lowest first), then server id. */
export const hostViews = (records: readonly HostRecord[], nowMs: number): HostView[] =>
  records
    .map((r) => hostView(r, nowMs))
    .sort(
      (a, b) =>
        Number(b.avoided_until !== undefined) - Number(a.avoided_until !== undefined) ||
        a.score - b.score ||
        a.server_id - b.server_id,
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

/** The relay's host records (issue 31 §2). */
export interface HostRecords {
  /** Adds an outcome to a host's record; answers the avoidance it started, if any. */
  record(serverId: number, outcome: HostOutcome, nowMs: number): Promise<HostAvoidance | undefined>;
  /** Server ids avoided at `nowMs` (one read, for every search). */
  avoided(nowMs: number): Promise<ReadonlySet<number>>;
  /** Every host with a record. */
  list(): Promise<HostRecord[]>;
  /**
   * An operator's avoidance (`avoided`) or its end (undefined: the avoidance and the failed starts
   * counted towards the next one are cleared). Answers the record as it now is.
   */
  setAvoidance(serverId: number, avoided: HostAvoidance | undefined, nowMs: number): Promise<HostRecord>;
}

/** The record after an operator avoids its host, or clears it (the failures counted towards avoidance go too). */
export const withAvoidance = (record: HostRecord, avoided: HostAvoidance | undefined, nowMs: number): HostRecord => {
  const { avoided: _old, ...rest } = record;
  const base = { ...rest, updated_at: Math.floor(nowMs / 1000) };
  return avoided ? { ...base, avoided } : { ...base, failures: [] };
};
