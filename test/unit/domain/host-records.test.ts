import {
  emptyHostRecord,
  hostScore,
  hostView,
  hostViews,
  median,
  outcomesOfTask,
  withOutcome,
  isAvoidedFor,
  withAvoidance,
  type HostRecord,
} from '../../../lambdas/domain/hosts/host-records';

const NOW = Date.UTC(2026, 10, 27, 12);
const S = NOW / 1000;
const policy = { afterFailures: 2, hours: 24 };

describe('Function: withOutcome', () => {
  it('counts each kind of outcome and keeps a bounded sample of times to ready', () => {
    let record: HostRecord = emptyHostRecord(7, S);
    record = withOutcome(record, { kind: 'placed' }, NOW, policy).record;
    for (let i = 0; i < 30; i += 1) record = withOutcome(record, { kind: 'ready', seconds: i }, NOW, policy).record;
    record = withOutcome(record, { kind: 'refused', reason: 'server rented' }, NOW, policy).record;
    record = withOutcome(record, { kind: 'refused', reason: 'server rented' }, NOW, policy).record;
    record = withOutcome(record, { kind: 'outbid' }, NOW, policy).record;
    expect(record).toMatchObject({ placed: 1, ready: 30, refusals: { 'server rented': 2 }, outbids: 1 });
    expect(record.ready_seconds).toHaveLength(25);
    expect(record.ready_seconds[0]).toBe(5);
    expect(record.avoided).toBeUndefined();
  });

  it('avoids a host at its HOST_AVOID_AFTER_FAILURES-th failed start within 24 h, for HOST_AVOID_HOURS', () => {
    const first = withOutcome(emptyHostRecord(7, S), { kind: 'login_refused' }, NOW, policy);
    expect(first.avoided).toBeUndefined();
    const second = withOutcome(first.record, { kind: 'ssh_never_answered' }, NOW + 1000, policy);
    // Both on the default key's orders: avoided for that key (issue 38 §3)
    expect(second.avoided).toEqual({
      until: Math.floor((NOW + 1000) / 1000) + 24 * 3600,
      reason: '2 failed starts in 24 h (ssh never answered)',
      by: 'auto',
      key: 'default',
    });
    // Already avoided: a third failure starts nothing new
    expect(withOutcome(second.record, { kind: 'readiness_timeout' }, NOW + 2000, policy).avoided).toBeUndefined();
  });

  it('does not count failures older than 24 h', () => {
    const old = withOutcome(emptyHostRecord(7, S), { kind: 'login_refused' }, NOW - 25 * 3600_000, policy).record;
    const now = withOutcome(old, { kind: 'login_refused' }, NOW, policy);
    expect(now.avoided).toBeUndefined();
    expect(now.record.failures).toEqual([{ at: S, key: 'default', kind: 'login_refused' }]);
  });
});

describe('Function: outcomesOfTask', () => {
  const placement = { retry: false as const, order_id: 1, server_id: 7, placed_at: NOW };
  it('reads refusals, the placement and readiness with its time', () => {
    expect(
      outcomesOfTask({
        search: {
          server: { id: 7, gpu_array: [], price_usd: null },
          attempt: 2,
          excluded: [3],
          tried: [{ server_id: 3, reason: 'server rented' }],
        },
        placement,
        check: { ready: true, timedOut: false, ready_at: NOW + 42_000 },
      }),
    ).toEqual([
      { server_id: 3, outcome: { kind: 'refused', reason: 'server rented' } },
      { server_id: 7, outcome: { kind: 'placed' } },
      { server_id: 7, outcome: { kind: 'ready', seconds: 42 } },
    ]);
  });

  it('names the failed start, and a soft deadline as none', () => {
    const timedOut = (pending?: 'ssh_login_refused' | 'ssh_not_answering') =>
      outcomesOfTask({
        placement,
        check: { ready: false, timedOut: true, reason: 'ready_timeout', ...(pending ? { pending } : {}) },
      }).map((o) => o.outcome.kind);
    expect(timedOut('ssh_login_refused')).toEqual(['placed', 'login_refused']);
    expect(timedOut('ssh_not_answering')).toEqual(['placed', 'ssh_never_answered']);
    expect(timedOut()).toEqual(['placed', 'readiness_timeout']);
    expect(
      outcomesOfTask({ placement, check: { ready: false, timedOut: true, reason: 'soft_deadline' } }).map(
        (o) => o.outcome.kind,
      ),
    ).toEqual(['placed']);
  });
});

describe('Function: hostScore and hostViews', () => {
  it('scores (ready + 1) / (placed + 2), halved while avoided, and lists avoided hosts first', () => {
    const good = { ...emptyHostRecord(1, S), placed: 8, ready: 8, ready_seconds: [30, 10, 20] };
    const avoided = {
      ...emptyHostRecord(2, S),
      placed: 2,
      failures: [
        { at: S - 10, key: 'default', kind: 'login_refused' as const },
        { at: S - 5, key: 'default', kind: 'login_refused' as const },
      ],
      avoided: { until: S + 3600, reason: 'r', by: 'operator' as const },
    };
    expect(hostScore(good, NOW)).toBe(0.9);
    expect(hostScore(avoided, NOW)).toBe(0.125);
    expect(hostScore(avoided, NOW + 7200_000)).toBe(0.25);
    expect(hostView(good, NOW).ready_seconds_median).toBe(20);
    expect(hostViews([good, avoided], NOW).map((v) => v.server_id)).toEqual([2, 1]);
    expect(hostView(avoided, NOW)).toMatchObject({ failures_24h: 2, avoided_by: 'operator', avoided_until: S + 3600 });
    expect(median([])).toBeUndefined();
    expect(median([1, 2, 3, 4])).toBe(2.5);
  });
});

describe('Function: withOutcome by caller key (issue 38 §3)', () => {
  const twice = (
    key: string,
    kind: 'login_refused' | 'ssh_never_answered' | 'readiness_timeout',
    from = emptyHostRecord(7, S),
  ) => {
    const first = withOutcome(from, { kind }, NOW, policy, key);
    return withOutcome(first.record, { kind }, NOW + 1000, policy, key);
  };

  it('avoids a host for one key alone when only that key failed to start on it (its image can refuse the login)', () => {
    const { record, avoided } = twice('mallory', 'login_refused');
    expect(avoided).toEqual({
      until: Math.floor((NOW + 1000) / 1000) + 24 * 3600,
      reason: '2 failed starts in 24 h (login refused)',
      by: 'auto',
      key: 'mallory',
    });
    expect(record.avoided).toBeUndefined();
    expect(isAvoidedFor(record, 'mallory', NOW + 2000)).toBe(true);
    expect(isAvoidedFor(record, 'alice', NOW + 2000)).toBe(false);
    expect(isAvoidedFor(record, 'mallory', NOW + 25 * 3600_000)).toBe(false);
  });

  it('avoids a host relay-wide once failed starts come from two different keys', () => {
    const mallory = twice('mallory', 'ssh_never_answered').record;
    const second = withOutcome(mallory, { kind: 'login_refused' }, NOW + 2000, policy, 'bob');
    expect(second.avoided).toEqual({
      until: Math.floor((NOW + 2000) / 1000) + 24 * 3600,
      reason: '3 failed starts in 24 h by 2 keys (login refused)',
      by: 'auto',
    });
    expect(isAvoidedFor(second.record, 'alice', NOW + 3000)).toBe(true);
  });

  it('avoids a host relay-wide on failures no image can produce (the order never ran), whatever the key', () => {
    const { record, avoided } = twice('mallory', 'readiness_timeout');
    expect(avoided).toMatchObject({ by: 'auto', reason: '2 failed starts in 24 h (readiness timeout)' });
    expect(avoided).not.toHaveProperty('key');
    expect(isAvoidedFor(record, 'alice', NOW + 2000)).toBe(true);
  });

  it("keeps each key's own counts beside the relay's, and an operator's clear forgets every key's avoidance", () => {
    const { record } = twice('mallory', 'login_refused');
    const placed = withOutcome(record, { kind: 'placed' }, NOW, policy, 'alice').record;
    expect(placed.by_key?.mallory).toMatchObject({ login_refused: 2, placed: 0 });
    expect(placed.by_key?.alice).toMatchObject({ placed: 1, login_refused: 0 });
    expect(placed).toMatchObject({ placed: 1, login_refused: 2 });
    const cleared = withAvoidance(placed, undefined, NOW);
    expect(isAvoidedFor(cleared, 'mallory', NOW + 2000)).toBe(false);
    expect(cleared.failures).toEqual([]);
  });
});

describe('Function: hostView for a caller (issue 38 §3)', () => {
  const record = (() => {
    let r: HostRecord = emptyHostRecord(7, S);
    for (const key of ['mallory', 'mallory']) {
      r = withOutcome(r, { kind: 'placed' }, NOW, policy, key).record;
      r = withOutcome(r, { kind: 'login_refused' }, NOW, policy, key).record;
    }
    r = withOutcome(r, { kind: 'placed' }, NOW, policy, 'alice').record;
    r = withOutcome(r, { kind: 'ready', seconds: 30 }, NOW, policy, 'alice').record;
    return withOutcome(r, { kind: 'refused', reason: 'server rented' }, NOW, policy, 'mallory').record;
  })();

  it("shows a read key the relay-wide fields and its own outcomes, never another key's", () => {
    const alice = hostView(record, NOW, { key: 'alice', sees_all: false });
    expect(alice).toMatchObject({ server_id: 7, placed: 1, ready: 1, login_refused: 0, failures_24h: 0 });
    expect(alice).not.toHaveProperty('avoided_until');
    expect(alice).not.toHaveProperty('avoided_keys');
    expect(alice.refusals).toEqual({ 'server rented': 1 });
    const mallory = hostView(record, NOW, { key: 'mallory', sees_all: false });
    expect(mallory).toMatchObject({ placed: 2, ready: 0, login_refused: 2, failures_24h: 2, avoided_scope: 'key' });
  });

  it('shows the default or an admin key every outcome and every key avoiding the host', () => {
    const all = hostView(record, NOW, { key: 'default', sees_all: true });
    expect(all).toMatchObject({ placed: 3, ready: 1, login_refused: 2, failures_24h: 2 });
    expect(all.avoided_keys).toEqual({ mallory: S + 24 * 3600 });
    expect(all).not.toHaveProperty('avoided_until');
  });
});
