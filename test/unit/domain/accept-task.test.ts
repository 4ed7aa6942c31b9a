import {
  acceptTask,
  HandOffError,
  recordedRequest,
  type AcceptTaskOptions,
} from '../../../lambdas/domain/requests/accept-task';
import type { CreateOrderInput, TaskRequest } from '../../../lambdas/domain/task';
import { FakeIdempotencyStore } from '../../fakes/idempotency';
import { FakeQueue } from '../../fakes/job-queue';
import { FakeTasks } from '../../fakes/tasks';
import { FakeWorkflow } from '../../fakes/workflow-starter';
import { FakeWaitingTasks } from '../../fakes/waiting-tasks';
import { WaitingQueueFullError } from '../../../lambdas/domain/errors';

const NOW = 1_700_000_000_500;
const createOrder: CreateOrderInput = {
  gpu_type: 'A100',
  image: 'img',
  currency: 'NATIVE-Blockchain',
  ports: { '22': 'tcp' },
  use_spot: true,
  env: { TOKEN: 'hunter2' },
  callback_url: 'https://cb.example',
};

const setup = () => {
  const deps = {
    tasks: new FakeTasks(),
    workflow: new FakeWorkflow(),
    queue: new FakeQueue(),
    idempotency: new FakeIdempotencyStore(),
    signedRequests: new FakeIdempotencyStore(),
  };
  const opts = (taskId: string, extra: Partial<AcceptTaskOptions> = {}): AcceptTaskOptions => ({
    taskId,
    now: NOW,
    origin: { source: 'webhook' },
    timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120 },
    softLimitSeconds: 300,
    ...extra,
  });
  return { deps, opts };
};

describe('Function: acceptTask', () => {
  it('records a queued create-order task without secrets and starts the workflow with timing', async () => {
    // Prepare
    const { deps, opts } = setup();
    // Act
    const outcome = await acceptTask(deps, { kind: 'create-order', input: createOrder }, opts('t-1'));
    // Assess
    expect(outcome).toEqual({ taskId: 't-1', replayed: false });
    const record = deps.tasks.records.get('t-1');
    expect(record).toMatchObject({
      task_id: 't-1',
      kind: 'create-order',
      state: 'queued',
      created_at: new Date(NOW).toISOString(),
      origin: { source: 'webhook' },
    });
    expect(JSON.stringify(record)).not.toContain('hunter2');
    expect(record?.request).toMatchObject({
      gpu_type: 'A100',
      env_names: ['TOKEN'],
      callback_url: 'https://cb.example',
    });
    // The env values are sealed beside the record and kept out of the workflow input (execution history, events),
    // and so is the callback URL: the record holds it for the deliverers.
    expect(deps.tasks.sealed.get('t-1')).toEqual({ orderEnv: { TOKEN: 'hunter2' } });
    const { env: _env, callback_url: _cb, ...withoutEnv } = createOrder;
    expect(deps.workflow.started).toEqual([
      {
        taskId: 't-1',
        input: {
          task_id: 't-1',
          request: withoutEnv,
          origin: { source: 'webhook' },
          timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1_700_000_300 },
        },
      },
    ]);
    expect(JSON.stringify(deps.workflow.started)).not.toMatch(/hunter2|callback_url|cb\.example/);
    expect(deps.queue.sent).toEqual([]);
  });

  it("asks for a standing order's env to be sealed: it may wait up to 24 h (issue 38 §7)", async () => {
    const { deps, opts } = setup();
    await acceptTask(deps, { kind: 'create-order', input: { ...createOrder, wait_seconds: 3600 } }, opts('t-1'));
    expect(deps.tasks.sealed.get('t-1')).toEqual({ orderEnv: { TOKEN: 'hunter2' }, sealOrderEnv: true });
  });

  it('seals nothing for a create-order without env, and never for other kinds', async () => {
    const { deps, opts } = setup();
    const { env: _env, ...withoutEnv } = createOrder;
    await acceptTask(deps, { kind: 'create-order', input: withoutEnv }, opts('t-1'));
    await acceptTask(deps, { kind: 'status', input: {} }, opts('t-2'));
    expect(deps.tasks.sealed.size).toBe(0);
    const { callback_url: _cb, ...handedOff } = withoutEnv;
    expect(deps.workflow.started[0].input.request).toEqual(handedOff);
  });

  it('keeps a Slack response_url out of the workflow input and in the record', async () => {
    const { deps, opts } = setup();
    const responseUrl = 'https://hooks.slack.com/commands/T1/2/secret-token';
    await acceptTask(
      deps,
      { kind: 'create-order', input: createOrder },
      opts('t-3', { origin: { source: 'slack', responseUrl } }),
    );
    expect(deps.workflow.started[0].input.origin).toEqual({ source: 'slack' });
    expect(JSON.stringify(deps.workflow.started)).not.toContain('hooks.slack.com');
    expect(deps.tasks.records.get('t-3')?.origin).toEqual({ source: 'slack', responseUrl });
  });

  it.each<TaskRequest>([
    { kind: 'cancel-order', input: { order_id: 7 } },
    { kind: 'status', input: {} },
    { kind: 'price-alert', input: { gpu_type: 'A100', target_price: 1, image: 'img' } },
  ])('sends a $kind job to the queue', async (request) => {
    const { deps, opts } = setup();
    await acceptTask(
      deps,
      request,
      opts('t-2', { origin: { source: 'slack', responseUrl: 'https://hooks.slack.com/x' } }),
    );
    expect(deps.queue.sent).toEqual([
      {
        task_id: 't-2',
        kind: request.kind,
        input: request.input,
        origin: { source: 'slack', responseUrl: 'https://hooks.slack.com/x' },
      },
    ]);
    expect(deps.workflow.started).toEqual([]);
    expect(deps.tasks.records.get('t-2')?.state).toBe('queued');
  });

  it('returns the first task id for a repeated idempotency key and starts nothing', async () => {
    const { deps, opts } = setup();
    await acceptTask(deps, { kind: 'create-order', input: createOrder }, opts('t-1', { idempotencyKey: 'k' }));
    const repeat = await acceptTask(
      deps,
      { kind: 'create-order', input: createOrder },
      opts('t-9', { idempotencyKey: 'k' }),
    );
    expect(repeat).toEqual({ taskId: 't-1', replayed: true });
    expect(deps.workflow.started).toHaveLength(1);
    expect(deps.tasks.records.has('t-9')).toBe(false);
  });

  it('scopes idempotency keys by task kind', async () => {
    const { deps, opts } = setup();
    await acceptTask(deps, { kind: 'status', input: {} }, opts('t-1', { idempotencyKey: 'k' }));
    const other = await acceptTask(
      deps,
      { kind: 'cancel-order', input: { order_id: 1 } },
      opts('t-2', { idempotencyKey: 'k' }),
    );
    expect(other).toEqual({ taskId: 't-2', replayed: false });
  });

  it('removes the record and releases the key when the hand-off fails, then throws HandOffError', async () => {
    // Prepare
    const { deps, opts } = setup();
    deps.workflow.fail = new Error('StartExecution throttled');
    // Act
    const attempt = acceptTask(
      deps,
      { kind: 'create-order', input: createOrder },
      opts('t-1', { idempotencyKey: 'k' }),
    );
    // Assess
    await expect(attempt).rejects.toThrow(HandOffError);
    await expect(attempt).rejects.toMatchObject({
      name: 'HandOffError',
      message: 'Could not queue the task; nothing was started. Retry later.',
    });
    expect(deps.tasks.records.size).toBe(0);
    expect(deps.tasks.removed).toEqual(['t-1']);
    expect(deps.idempotency.keys.size).toBe(0);
    // The client's retry with the same key runs for real.
    deps.workflow.fail = undefined;
    expect(
      await acceptTask(deps, { kind: 'create-order', input: createOrder }, opts('t-2', { idempotencyKey: 'k' })),
    ).toEqual({ taskId: 't-2', replayed: false });
  });

  it('throws HandOffError and sends nothing when the record cannot be written', async () => {
    const { deps, opts } = setup();
    deps.tasks.failCreate = new Error('table down');
    await expect(acceptTask(deps, { kind: 'status', input: {} }, opts('t-1'))).rejects.toThrow(HandOffError);
    expect(deps.queue.sent).toEqual([]);
    expect(deps.tasks.removed).toEqual([]);
  });

  it('hands off when recording reports "already exists" for its own new id (the put landed, its answer was lost)', async () => {
    const { deps, opts } = setup();
    const realCreate = deps.tasks.create.bind(deps.tasks);
    jest.spyOn(deps.tasks, 'create').mockImplementationOnce(async (record, sealed) => {
      await realCreate(record, sealed);
      await realCreate(record, sealed); // the SDK's retry of the landed put fails its condition
    });
    expect(await acceptTask(deps, { kind: 'status', input: {} }, opts('t-1'))).toEqual({
      taskId: 't-1',
      replayed: false,
    });
    expect(deps.queue.sent).toHaveLength(1);
    expect(deps.tasks.records.get('t-1')?.state).toBe('queued');
    expect(deps.tasks.removed).toEqual([]);
  });

  it('throws HandOffError when the idempotency store fails', async () => {
    const { deps, opts } = setup();
    deps.idempotency.claim = async () => {
      throw new Error('down');
    };
    await expect(acceptTask(deps, { kind: 'status', input: {} }, opts('t-1', { idempotencyKey: 'k' }))).rejects.toThrow(
      HandOffError,
    );
    expect(deps.tasks.records.size).toBe(0);
  });

  it('still throws HandOffError when removing the record fails too', async () => {
    const { deps, opts } = setup();
    deps.queue.fail = new Error('SQS down');
    deps.tasks.remove = async () => {
      throw new Error('also down');
    };
    await expect(acceptTask(deps, { kind: 'status', input: {} }, opts('t-1'))).rejects.toThrow(HandOffError);
  });

  it('ignores the idempotency key without a store', async () => {
    const { deps, opts } = setup();
    const noStore = { tasks: deps.tasks, workflow: deps.workflow, queue: deps.queue };
    await acceptTask(noStore, { kind: 'status', input: {} }, opts('t-1', { idempotencyKey: 'k' }));
    expect(await acceptTask(noStore, { kind: 'status', input: {} }, opts('t-2', { idempotencyKey: 'k' }))).toEqual({
      taskId: 't-2',
      replayed: false,
    });
  });
});

describe('Function: recordedRequest', () => {
  it('keeps a create-order request without env unchanged', () => {
    const { env: _env, ...rest } = createOrder;
    expect(recordedRequest({ kind: 'create-order', input: rest })).toEqual(rest);
  });

  describe('one signed request, one task', () => {
    const signedRequest = { key: 'CreateOrder:1700000000:ab12', ttlSeconds: 360 };

    it('answers a copy of a signed request with the first task id and starts nothing, even under a new Idempotency-Key', async () => {
      const { deps, opts } = setup();
      const first = await acceptTask(
        deps,
        { kind: 'status', input: {} },
        opts('t-1', { signedRequest, idempotencyKey: 'k-1' }),
      );
      const copy = await acceptTask(deps, { kind: 'status', input: {} }, opts('t-2', { signedRequest }));
      const withOtherKey = await acceptTask(
        deps,
        { kind: 'status', input: {} },
        opts('t-3', { signedRequest, idempotencyKey: 'k-other' }),
      );
      expect(first).toEqual({ taskId: 't-1', replayed: false });
      expect(copy).toEqual({ taskId: 't-1', replayed: true });
      expect(withOtherKey).toEqual({ taskId: 't-1', replayed: true });
      expect(deps.queue.sent.map((m) => m.task_id)).toEqual(['t-1']);
      expect(deps.idempotency.keys.has('status:k-other')).toBe(false);
    });

    it('binds for the TTL it is given: a copy after it is a new request', async () => {
      const { deps, opts } = setup();
      await acceptTask(deps, { kind: 'status', input: {} }, opts('t-1', { signedRequest }));
      const late = await acceptTask(
        deps,
        { kind: 'status', input: {} },
        opts('t-2', { signedRequest, now: NOW + 360_000 }),
      );
      expect(late).toEqual({ taskId: 't-2', replayed: false });
    });

    it("a new signed request that repeats an Idempotency-Key gets the key's task, and so do its own copies", async () => {
      const { deps, opts } = setup();
      await acceptTask(deps, { kind: 'status', input: {} }, opts('t-1', { idempotencyKey: 'k-1' }));
      const second = await acceptTask(
        deps,
        { kind: 'status', input: {} },
        opts('t-2', { signedRequest, idempotencyKey: 'k-1' }),
      );
      const copyOfSecond = await acceptTask(deps, { kind: 'status', input: {} }, opts('t-3', { signedRequest }));
      expect(second).toEqual({ taskId: 't-1', replayed: true });
      expect(copyOfSecond).toEqual({ taskId: 't-1', replayed: true });
      expect(deps.queue.sent).toHaveLength(1);
    });

    it("releases the signed request when the hand-off fails, so the caller's retry of the same request runs", async () => {
      const { deps, opts } = setup();
      deps.queue.fail = new Error('SQS down');
      await expect(
        acceptTask(deps, { kind: 'status', input: {} }, opts('t-1', { signedRequest })),
      ).rejects.toBeInstanceOf(HandOffError);
      deps.queue.fail = undefined;
      expect(await acceptTask(deps, { kind: 'status', input: {} }, opts('t-2', { signedRequest }))).toEqual({
        taskId: 't-2',
        replayed: false,
      });
    });

    it('without a signed request key (no timestamp) copies are separate tasks, as before', async () => {
      const { deps, opts } = setup();
      await acceptTask(deps, { kind: 'status', input: {} }, opts('t-1'));
      await acceptTask(deps, { kind: 'status', input: {} }, opts('t-2'));
      expect(deps.queue.sent).toHaveLength(2);
    });
  });

  describe('the waiting queue caps (issue 29 §5)', () => {
    const standing = (over: Partial<CreateOrderInput> = {}): TaskRequest => ({
      kind: 'create-order',
      input: { ...createOrder, wait_seconds: 600, ...over },
    });
    const ci = { source: 'webhook' as const, caller: { key: 'ci', sees_all: false } };

    it('admits a standing order (a pending entry of its key) before anything is recorded', async () => {
      const { deps, opts } = setup();
      const waiting = new FakeWaitingTasks();
      const outcome = await acceptTask(
        { ...deps, standing: { waiting, caps: { perKey: 2, total: 10 } } },
        standing(),
        opts('t-1', { origin: ci }),
      );
      expect(outcome).toEqual({ taskId: 't-1', replayed: false });
      expect(waiting.entries.get('t-1')).toMatchObject({ task_id: 't-1', round: 0, pending: true, key_name: 'ci' });
      // An order that does not wait takes no place in the queue.
      await acceptTask(
        { ...deps, standing: { waiting, caps: { perKey: 2, total: 10 } } },
        standing({ wait_seconds: undefined }),
        opts('t-2'),
      );
      expect(waiting.entries.has('t-2')).toBe(false);
    });

    it("refuses the key's 3rd and the relay's 4th with the cap's text: nothing recorded, started or kept", async () => {
      const { deps, opts } = setup();
      const waiting = new FakeWaitingTasks();
      const d = { ...deps, standing: { waiting, caps: { perKey: 2, total: 3 } } };
      await acceptTask(d, standing(), opts('t-1', { origin: ci }));
      await acceptTask(d, standing(), opts('t-2', { origin: ci }));
      const third = acceptTask(d, standing(), opts('t-3', { origin: ci, idempotencyKey: 'k3' }));
      await expect(third).rejects.toThrow(new WaitingQueueFullError('too many waiting orders (2 for key ci)'));
      await acceptTask(d, standing(), opts('t-4'));
      await expect(acceptTask(d, standing(), opts('t-5'))).rejects.toThrow('too many waiting orders (3)');
      expect([...deps.tasks.records.keys()].sort()).toEqual(['t-1', 't-2', 't-4']);
      expect(deps.workflow.started.map((s) => s.taskId).sort()).toEqual(['t-1', 't-2', 't-4']);
      // The refused request's Idempotency-Key is released: a retry after a slot frees runs for real.
      expect(deps.idempotency.keys.size).toBe(0);
    });

    it('gives the place back when the hand-off fails', async () => {
      const { deps, opts } = setup();
      const waiting = new FakeWaitingTasks();
      deps.workflow.fail = new Error('sfn down');
      await expect(
        acceptTask({ ...deps, standing: { waiting, caps: { perKey: 2, total: 3 } } }, standing(), opts('t-1')),
      ).rejects.toBeInstanceOf(HandOffError);
      expect(waiting.entries.size).toBe(0);
    });
  });
});
