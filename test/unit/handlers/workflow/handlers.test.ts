import { createFindServerStepHandler } from '../../../../lambdas/handlers/workflow/find-server';
import { createReserveQuotaStepHandler } from '../../../../lambdas/handlers/workflow/reserve-quota';
import { createPlaceOrderStepHandler } from '../../../../lambdas/handlers/workflow/place-order';
import { createCheckOrderStepHandler } from '../../../../lambdas/handlers/workflow/check-order';
import { createCancelOrderStepHandler } from '../../../../lambdas/handlers/workflow/cancel-order';
import { createReportResultStepHandler } from '../../../../lambdas/handlers/workflow/report-result';
import { createExecutionEndedHandler } from '../../../../lambdas/handlers/workflow/execution-ended';
import { InvalidWorkflowInputError } from '../../../../lambdas/domain/errors';
import { aPlacedOrder, aServer, aState } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeLeaseStore } from '../../../fakes/lease-store';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeNotifier } from '../../../fakes/notifier';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { FakeTasks } from '../../../fakes/tasks';
import { placementWaits } from '../../../fakes/placement-intents';

const NOW = 5_000_000;
const clock = () => NOW;

describe('Handler: workflow task input', () => {
  it('throws InvalidWorkflowInputError naming the bad fields', async () => {
    // Prepare
    const handler = createFindServerStepHandler(
      () => ({ marketplace: new FakeMarketplace(), claims: new FakeClaims(), tasks: new FakeTasks() }),
      clock,
    );
    // Act
    const act = handler({ task_id: 't', request: { gpu_type: '' } });
    // Assess
    await expect(act).rejects.toBeInstanceOf(InvalidWorkflowInputError);
    await expect(handler({ task_id: 't' })).rejects.toThrow(/request/);
  });
});

describe('Handler: find-server → place-order → check-order → report-result', () => {
  it('carries the state document through the steps as plain JSON', async () => {
    // Prepare
    const marketplace = new FakeMarketplace();
    marketplace.servers = [aServer(3)];
    const tasks = new FakeTasks();
    tasks.seed('task-1', { request: { callback_url: 'http://cb.example/hook' } });
    const claims = new FakeClaims();
    const notifier = new FakeNotifier();
    let state: Record<string, unknown> = { ...aState() };
    // Act
    state = {
      ...state,
      search: await createFindServerStepHandler(() => ({ marketplace, claims, tasks }), clock)(state),
    };
    state = {
      ...state,
      quota: await createReserveQuotaStepHandler(
        () => ({ quota: new FakeSlidingWindow(), maxOrdersPerHour: 10 }),
        clock,
      )(state),
    };
    state = {
      ...state,
      placement: await createPlaceOrderStepHandler(
        () => ({ marketplace, tasks, claims, ...placementWaits() }),
        clock,
      )(state),
    };
    marketplace.orders = [aPlacedOrder(100, 3, 1, 'running')];
    state = { ...state, check: await createCheckOrderStepHandler(() => ({ marketplace }), clock)(state) };
    const report = await createReportResultStepHandler(
      () => ({ tasks, notifier, claims, leases: new FakeLeaseStore() }),
      clock,
    )(state);
    // Assess
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
    expect(report).toEqual({ success: true, delivered: true });
    expect(notifier.callbacks[0].result).toMatchObject({
      success: true,
      order_id: 100,
      server_id: 3,
      gpu: ['NVIDIA RTX 4090'],
    });
    expect(claims.holders.size).toBe(0);
  });

  it('carries why a running order was not ready (ssh) from check-order through to the timeout failure', async () => {
    // Prepare: the order runs, its ssh endpoint refuses; the poll comes after the readiness window
    const marketplace = new FakeMarketplace();
    marketplace.orders = [aPlacedOrder(44, 1, 1, 'running')];
    const tasks = new FakeTasks();
    tasks.seed('task-1', { request: { callback_url: 'http://cb.example/hook' } });
    const notifier = new FakeNotifier();
    const sshProbe = { probe: async () => ({ answered: false as const, reason: 'refused' as const }) };
    let state: Record<string, unknown> = {
      ...aState({ placement: { retry: false, order_id: 44, server_id: 1, placed_at: 0 } }),
    };
    // Act
    state = {
      ...state,
      check: JSON.parse(
        JSON.stringify(await createCheckOrderStepHandler(() => ({ marketplace, sshProbe }), clock)(state)),
      ) as unknown,
    };
    await createReportResultStepHandler(
      () => ({ tasks, notifier, claims: new FakeClaims(), leases: new FakeLeaseStore() }),
      clock,
    )(state);
    // Assess
    expect(state.check).toMatchObject({
      ready: false,
      timedOut: true,
      pending: 'ssh_not_answering',
      ssh_probe: 'refused',
    });
    expect(notifier.callbacks[0].result).toEqual({
      success: false,
      error: 'Order creation timed out after 120 s: the order was running but its ssh endpoint did not answer',
    });
  });

  it('cancel-order cancels the placed order after a timeout', async () => {
    const marketplace = new FakeMarketplace();
    const tasks = new FakeTasks();
    tasks.seed();
    const state = aState({
      placement: { retry: false, order_id: 44, server_id: 1, placed_at: 0 },
      check: { ready: false, timedOut: true, reason: 'ready_timeout' },
    });
    expect(await createCancelOrderStepHandler(() => ({ marketplace, tasks }), clock)(state)).toEqual({
      cancelled: true,
      order_id: 44,
    });
    expect(marketplace.cancelled).toEqual([44]);
  });
});

describe('Handler: execution-ended', () => {
  const event = (status: string, input: unknown) => ({
    source: 'aws.states',
    'detail-type': 'Step Functions Execution Status Change',
    detail: { name: 'task-1', status, input: JSON.stringify(input), executionArn: 'arn:x', stateMachineArn: 'arn:y' },
  });

  it('fails an unfinished task and delivers to the callback_url and response_url of its record (the input has none)', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed('task-1', {
      state: 'running',
      request: { callback_url: 'http://cb.example/hook' },
      origin: { source: 'slack', responseUrl: 'https://hooks.slack.example/r/1' },
    });
    const notifier = new FakeNotifier();
    const handler = createExecutionEndedHandler(
      () => ({ tasks, notifier, claims: new FakeClaims(), marketplace: new FakeMarketplace() }),
      clock,
    );
    // Act: an execution started before the URLs left the input still carries one; the record decides
    const result = await handler(
      event('ABORTED', { ...aState(), request: { ...aState().request, callback_url: 'http://stale.example/old' } }),
    );
    // Assess
    expect(result).toEqual({ action: 'completed' });
    expect(notifier.callbacks).toEqual([
      { url: 'http://cb.example/hook', taskId: 'task-1', result: { success: false, error: 'Task aborted' } },
    ]);
    expect(notifier.slackResponses).toEqual([expect.objectContaining({ url: 'https://hooks.slack.example/r/1' })]);
  });

  it('uses the execution name when the input is unreadable, and ignores finished tasks', async () => {
    const tasks = new FakeTasks();
    tasks.seed('task-1', { state: 'failed' });
    const handler = createExecutionEndedHandler(
      () => ({ tasks, notifier: new FakeNotifier(), claims: new FakeClaims(), marketplace: new FakeMarketplace() }),
      clock,
    );
    const ev = event('FAILED', {});
    expect(await handler({ ...ev, detail: { ...ev.detail, input: 'not json' } })).toEqual({ action: 'none' });
  });

  it('rejects events of other statuses', async () => {
    const handler = createExecutionEndedHandler(
      () => ({
        tasks: new FakeTasks(),
        notifier: new FakeNotifier(),
        claims: new FakeClaims(),
        marketplace: new FakeMarketplace(),
      }),
      clock,
    );
    await expect(handler(event('SUCCEEDED', aState()))).rejects.toThrow();
  });
});
