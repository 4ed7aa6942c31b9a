import { QUOTA_WINDOW_MS, type WorkflowState } from '../../../../lambdas/domain/create-order/workflow-state';
import {
  BUDGET_RETRY_SECONDS,
  heldUntil,
  reserveQuotaOrWait,
} from '../../../../lambdas/domain/create-order/wait-for-quota';
import { BudgetExceededError, QuotaExceededError } from '../../../../lambdas/domain/errors';
import type { NewReservation, ReserveOutcome } from '../../../../lambdas/domain/teams/spend-budget';
import { aState } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { FakeTasks } from '../../../fakes/tasks';
import { FakeWaitingTasks } from '../../../fakes/waiting-tasks';

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;
const KEY = 'QUOTA#orders';
const opts = { now: NOW_MS, limit: 1, key: KEY };

/** A standing order (accepted 5 s ago, waiting 600 s) at ReserveQuota with server 7 chosen; `patch` overrides. */
const standing = (taskId: string, patch: Partial<WorkflowState> = {}): WorkflowState => {
  const base = aState();
  return aState({
    task_id: taskId,
    request: { ...base.request, wait_seconds: 600 },
    timing: { ...base.timing, soft_deadline: NOW_S + 300, waiting_until: NOW_S + 595, accepted_at: NOW_MS - 5_000 },
    search: { server: { id: 7, gpu_array: ['4090'], price_usd: 0.4 }, attempt: 1, excluded: [] },
    ...patch,
  });
};

const setup = async () => {
  const quota = new FakeSlidingWindow();
  // The cap (1 per hour) is full: an order placed 10 minutes ago
  await quota.hit(KEY, { now: NOW_MS - 600_000, windowMs: QUOTA_WINDOW_MS, limit: 1, eventId: 'placed' });
  const tasks = new FakeTasks();
  const claims = new FakeClaims();
  const waiting = new FakeWaitingTasks();
  tasks.seed('a', { state: 'running' });
  await claims.claim(7, 'a');
  const settled: string[] = [];
  const spend = {
    reserve: async (_r: NewReservation): Promise<ReserveOutcome> => ({
      ok: true,
      usd: 1,
      day: '2023-11-14',
      tracked: true,
    }),
    settle: async (taskId: string) => {
      settled.push(taskId);
      return undefined;
    },
  };
  return {
    quota,
    tasks,
    claims,
    waiting,
    spend,
    settled,
    deps: { quota, spend, standing: { waiting, tasks, claims } },
  };
};

describe('Function: reserveQuotaOrWait (a standing order refused by the hourly cap or a budget)', () => {
  it('puts a standing order the full cap refuses back to waiting, in its place, holding nothing and counting nothing', async () => {
    // Prepare
    const s = await setup();
    // Act
    const result = await reserveQuotaOrWait(standing('a', { resume: { server_id: 7, round: 2 } }), s.deps, opts);
    // Assess: held until the placed order leaves the window (50 minutes from now)
    const text = 'Hourly order limit reached (1 per hour)';
    expect(result).toEqual({ waiting: true, waiting_until: NOW_S + 595, held_until: NOW_S + 3000, held_by: text });
    expect([...s.waiting.entries.values()]).toEqual([
      expect.objectContaining({
        task_id: 'a',
        round: 3,
        accepted_at: NOW_MS - 5_000,
        held_until: NOW_S + 3000,
        held_by: text,
      }),
    ]);
    expect(await s.tasks.get('a')).toMatchObject({ state: 'waiting', waiting_until: NOW_S + 595 });
    expect(s.claims.holders.size).toBe(0);
    expect(s.settled).toEqual(['a']);
    expect(s.quota.events.get(KEY)?.map((e) => e.id)).toEqual(['placed']);
  });

  it("waits out a caller key's own hourly cap the same way", async () => {
    const s = await setup();
    const caller = { key: 'team-a', orders_per_hour: 1 };
    await s.quota.hit('KEYQUOTA#team-a', {
      now: NOW_MS - 1_800_000,
      windowMs: QUOTA_WINDOW_MS,
      limit: 1,
      eventId: 'x',
    });
    const state = standing('a', { origin: { source: 'webhook', caller } as WorkflowState['origin'] });
    const result = await reserveQuotaOrWait(state, s.deps, { ...opts, limit: 10, keyQuota: (k) => `KEYQUOTA#${k}` });
    expect(result).toMatchObject({
      waiting: true,
      held_until: NOW_S + 1800,
      held_by: 'Hourly order limit of key team-a reached (1 per hour)',
    });
  });

  it("keeps today's failure for a task without wait_seconds, a wait that ended, and after a placement attempt", async () => {
    const s = await setup();
    const plain = standing('a', { request: { ...aState().request } });
    await expect(reserveQuotaOrWait(plain, s.deps, opts)).rejects.toThrow(new QuotaExceededError(1));
    const ended = standing('a');
    await expect(reserveQuotaOrWait(ended, s.deps, { ...opts, now: (NOW_S + 595) * 1000 })).rejects.toThrow(
      QuotaExceededError,
    );
    const retried = standing('a', { placement: { retry: true, server_id: 6, reason: 'rented' } });
    await expect(reserveQuotaOrWait(retried, s.deps, opts)).rejects.toThrow(QuotaExceededError);
    expect(s.waiting.entries.size).toBe(0);
    expect(s.claims.holders.get(7)).toBe('a');
  });

  it('places when the cap allows: counted once, nothing queued', async () => {
    const s = await setup();
    const result = await reserveQuotaOrWait(standing('a'), s.deps, { ...opts, limit: 2 });
    expect(result).toMatchObject({ count: 2 });
    expect(s.waiting.entries.size).toBe(0);
  });

  it('a retried step after the task was queued answers the same without counting or queueing again', async () => {
    const s = await setup();
    const state = standing('a');
    const first = await reserveQuotaOrWait(state, s.deps, opts);
    // The cap has room now, but this execution already handed the task back to the queue
    const again = await reserveQuotaOrWait(state, s.deps, { ...opts, limit: 5 });
    expect(again).toEqual(first);
    expect(s.quota.events.get(KEY)?.map((e) => e.id)).toEqual(['placed']);
    expect(s.waiting.entries.size).toBe(1);
  });

  it('waits out a budget refusal, tried again every BUDGET_RETRY_SECONDS and at the latest at the UTC day change', async () => {
    const s = await setup();
    const refused = {
      ...s.spend,
      reserve: async (): Promise<ReserveOutcome> => ({
        ok: false,
        refusal: { scope: 'relay', key: 'default', used: 9, limit: 10, needed: 2 },
      }),
    };
    const result = await reserveQuotaOrWait(standing('a'), { ...s.deps, spend: refused }, { ...opts, limit: 5 });
    expect(result).toMatchObject({
      waiting: true,
      held_until: NOW_S + BUDGET_RETRY_SECONDS,
      held_by: expect.stringMatching(/^budget exceeded/),
    });
    expect(s.quota.events.get(KEY)?.map((e) => e.id)).toEqual(['placed']);
    // Two minutes before midnight UTC: tried at midnight
    const beforeMidnight = 1_700_006_280_000; // 2023-11-15T00:00:00Z − 120 s
    expect(heldUntil(new BudgetExceededError('x'), beforeMidnight)).toBe(beforeMidnight / 1000 + 120);
    expect(heldUntil(new Error('other'), NOW_MS)).toBeUndefined();
  });
});
