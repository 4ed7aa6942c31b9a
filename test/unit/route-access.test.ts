/**
 * Architecture (issue 29 §2): every signed route in contract/routes.ts has a scope, and every route
 * that names a task or an order (a body field `order_id`/`task_id` in the OpenAPI document, or a
 * `{task_id}` path parameter) checks that the caller key owns it. The table below says, per signed
 * route, what it names and how ownership is checked; a new signed route without a line fails here,
 * and so does a route whose request starts naming an order or a task while its line says `none`.
 *
 * Each ownership line is checked by behaviour, not by reading source: the route's handler, signed by
 * key `intruder` (scopes enough to pass), accepts the request; the job it queues is then run against
 * an order or task of key `owner` and must be refused with the job's ownership text, nothing done.
 */
import { ROUTE_SCOPES, ROUTES } from '../../contract/routes';
import { resolveCallerKey } from '../../lambdas/domain/teams/caller-keys';
import { runJob, type JobDeps, type TypedJobMessage } from '../../lambdas/domain/requests/jobs';
import type { TaskRecord } from '../../lambdas/domain/task';
import type { AcceptDeps } from '../../lambdas/handlers/api/accept-deps';
import { createCancelOrderHandler } from '../../lambdas/handlers/api/cancel-order';
import { createCancelTaskHandler } from '../../lambdas/handlers/api/cancel-task';
import type { ApiHandler } from '../../lambdas/handlers/api/chain';
import { createExtendOrderHandler } from '../../lambdas/handlers/api/extend-order';
import { createGetTaskHandler } from '../../lambdas/handlers/api/get-task';
import { createSetSpotPriceHandler } from '../../lambdas/handlers/api/set-spot-price';
import { buildOpenApiDocument } from '../../lambdas/http/openapi-document';
import { FakeCallerKeyStore, fakeSealer } from '../fakes/caller-keys';
import { acceptFakes, jobFakes } from '../fakes/deps';
import { FakeSlidingWindow } from '../fakes/sliding-window';
import { apiEvent, lambdaContext, v2Headers } from '../fixtures/events/api-event';
import { parseResult } from '../helpers/parse-result';

const NOW_S = 1_700_000_000;
const OWNED_TASK = '6f1c0d9e-1111-4222-8333-444455556666';
const OWNED_ORDER = 41;

/** A job route: its handler factory and a body naming the owner's order or task. */
interface JobRoute {
  readonly via: 'job';
  readonly names: 'order' | 'task';
  readonly handler: (deps: () => AcceptDeps) => ApiHandler;
  readonly body: Record<string, unknown>;
  /** The refusal the job must end with, for key `intruder`. */
  readonly refusal: string;
}
/** A route that answers itself (no job): named, and checked in its handler. */
interface HandlerRoute {
  readonly via: 'handler';
  readonly names: 'task';
}
/** A route that names no task and no order (why, in words). */
interface NoOwnership {
  readonly via: 'none';
  readonly why: string;
}
type Ownership = JobRoute | HandlerRoute | NoOwnership;

/** One line per signed route. */
const OWNERSHIP: Readonly<Record<string, Ownership>> = {
  CreateOrder: { via: 'none', why: 'places a new order; the placing key owns it' },
  PriceAlert: { via: 'none', why: 'queues a new create-order of the same key' },
  Status: { via: 'none', why: "lists only the key's own orders (jobs.ts runStatus)" },
  Spend: { via: 'none', why: "shows only the key's own lines (spend.ts)" },
  Hosts: { via: 'none', why: "the relay's record of marketplace hosts: names no task and no order" },
  AdminKeysCreate: { via: 'none', why: 'scope admin; names a key, not a task or an order' },
  AdminKeysList: { via: 'none', why: 'scope admin' },
  AdminKeysRevoke: { via: 'none', why: 'scope admin; names a key, not a task or an order' },
  AdminKeysDelete: { via: 'none', why: 'scope admin; names a key, not a task or an order' },
  AdminKeysSshKey: { via: 'none', why: 'scope admin; names a key, not a task or an order' },
  AdminHostsAvoid: { via: 'none', why: 'scope admin; names a marketplace host, not a task or an order' },
  AdminHostsClear: { via: 'none', why: 'scope admin; names a marketplace host, not a task or an order' },
  CancelOrder: {
    via: 'job',
    names: 'order',
    handler: createCancelOrderHandler,
    body: { order_id: OWNED_ORDER },
    refusal: `order ${OWNED_ORDER} is not an order of key intruder`,
  },
  ExtendOrder: {
    via: 'job',
    names: 'order',
    handler: createExtendOrderHandler,
    body: { order_id: OWNED_ORDER, hours: 1 },
    refusal: `order ${OWNED_ORDER} is not an order of key intruder`,
  },
  SetSpotPrice: {
    via: 'job',
    names: 'order',
    handler: createSetSpotPriceHandler,
    body: { order_id: OWNED_ORDER, desired_price: 1 },
    refusal: `order ${OWNED_ORDER} is not an order of key intruder`,
  },
  CancelTask: {
    via: 'job',
    names: 'task',
    handler: createCancelTaskHandler,
    body: { task_id: OWNED_TASK },
    refusal: `task ${OWNED_TASK} is not a task of key intruder`,
  },
  GetTask: { via: 'handler', names: 'task' },
};

const SIGNED = ROUTES.filter((r) => r.signed);

type Json = Record<string, unknown>;
const doc = buildOpenApiDocument() as Json;
const schemas = ((doc.components as Json).schemas ?? {}) as Record<string, Json>;

/** The body fields and path parameters a route's request carries, from the OpenAPI document. */
const requestFields = (method: string, path: string): string[] => {
  const op = ((doc.paths as Record<string, Json>)[path] ?? {})[method.toLowerCase()] as Json | undefined;
  const schema = (
    ((op?.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json'] as Json | undefined
  )?.schema as Json | undefined;
  const ref = typeof schema?.$ref === 'string' ? schema.$ref.split('/').pop() : undefined;
  const resolved = ref ? schemas[ref] : schema;
  const fields = Object.keys((resolved?.properties as Json | undefined) ?? {});
  const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  return [...fields, ...params];
};

describe('Architecture: scope and ownership of every signed route (issue 29)', () => {
  it.each(SIGNED.map((r) => [r.id]))('%s has a scope', (id) => {
    expect(ROUTE_SCOPES[id]).toBeDefined();
  });

  it.each(SIGNED.map((r) => [r.id]))('%s has a line in the ownership table', (id) => {
    expect(OWNERSHIP[id]).toBeDefined();
  });

  it('reads task and order fields from the OpenAPI document (the reader itself)', () => {
    expect(requestFields('POST', '/webhook/extend-order')).toEqual(expect.arrayContaining(['order_id', 'hours']));
    expect(requestFields('GET', '/webhook/tasks/{task_id}')).toEqual(['task_id']);
  });

  it.each(SIGNED.map((r) => [r.id, r.method, r.path] as const))(
    '%s: a request naming an order or a task has an ownership check in the table',
    (id, method, path) => {
      const fields = requestFields(method, path);
      const names = fields.includes('task_id') ? 'task' : fields.includes('order_id') ? 'order' : undefined;
      const line = OWNERSHIP[id];
      if (names === undefined) return;
      expect({ id, via: line?.via, names: line && 'names' in line ? line.names : undefined }).toEqual({
        id,
        via: expect.stringMatching(/^(job|handler)$/),
        names,
      });
    },
  );

  const jobRoutes = Object.entries(OWNERSHIP).filter((e): e is [string, JobRoute] => e[1].via === 'job');

  it.each(jobRoutes)(
    "%s: the job it queues for key intruder refuses the owner's order or task, nothing done",
    async (id, line) => {
      // Prepare: the route, signed by `intruder` (every scope but admin: the scope check is not what is tested).
      const { fakes, deps } = acceptFakes();
      const store = new FakeCallerKeyStore();
      await store.add({
        name: 'intruder',
        scopes: ['order', 'cancel', 'read'],
        secret: await fakeSealer.seal('intruder-secret'),
        created_at: NOW_S - 10,
      });
      const keyed: AcceptDeps = {
        ...deps,
        callerKeys: (name) => resolveCallerKey({ store, sealer: fakeSealer }, name, NOW_S),
      };
      const route = ROUTES.find((r) => r.id === id)!;
      const body = JSON.stringify(line.body);
      const event = apiEvent({
        path: route.path,
        body,
        headers: { ...v2Headers('intruder-secret', 'POST', route.path, body), 'x-webhook-key-id': 'intruder' },
      });
      // Act: the route accepts and queues; the job runs against the owner's order and task.
      const answer = parseResult(await line.handler(() => keyed)(event, lambdaContext()));
      expect(answer.statusCode).toBe(202);
      const message = fakes.queue.sent[0] as TypedJobMessage;
      const jobs = jobFakes();
      await jobs.leases.track(
        { order_id: OWNED_ORDER, task_id: 'placer', key: 'owner' },
        { now: NOW_S, status: 'running' },
      );
      const owned: TaskRecord = {
        task_id: OWNED_TASK,
        kind: 'create-order',
        state: 'waiting',
        request: { gpu_type: 'A100' },
        origin: { source: 'webhook', caller: { key: 'owner', sees_all: false } },
        created_at: '2023-11-14T22:13:20.000Z',
        updated_at: '2023-11-14T22:13:20.000Z',
      };
      await jobs.tasks.create(owned);
      const removed: string[] = [];
      const waiting = {
        remove: async (taskId: string) => (removed.push(taskId), true),
      } as unknown as JobDeps['waiting'];
      const result = await runJob(message, { ...jobs.deps, waiting }, NOW_S * 1000);
      // Assess
      expect(message.origin.caller).toMatchObject({ key: 'intruder' });
      expect(result).toEqual({ success: false, error: line.refusal });
      expect(removed).toEqual([]);
      expect(jobs.marketplace.cancelCalls).toEqual([]);
    },
  );

  it("GetTask: key intruder gets 404 for the owner's task", async () => {
    const { fakes, deps } = acceptFakes();
    const store = new FakeCallerKeyStore();
    await store.add({
      name: 'intruder',
      scopes: ['read'],
      secret: await fakeSealer.seal('intruder-secret'),
      created_at: NOW_S - 10,
    });
    await fakes.tasks.create({
      task_id: OWNED_TASK,
      kind: 'status',
      state: 'queued',
      request: {},
      origin: { source: 'webhook', caller: { key: 'owner', sees_all: false } },
      created_at: '2023-11-14T22:13:20.000Z',
      updated_at: '2023-11-14T22:13:20.000Z',
    });
    const handler = createGetTaskHandler(() => ({
      ...deps,
      window: new FakeSlidingWindow(),
      callerKeys: (name) => resolveCallerKey({ store, sealer: fakeSealer }, name, NOW_S),
    }));
    const path = `/webhook/tasks/${OWNED_TASK}`;
    const answer = parseResult(
      await handler(
        apiEvent({
          method: 'GET',
          path,
          pathParameters: { task_id: OWNED_TASK },
          headers: { ...v2Headers('intruder-secret', 'GET', path), 'x-webhook-key-id': 'intruder' },
        }),
        lambdaContext(),
      ),
    );
    expect(answer).toMatchObject({ statusCode: 404, body: { error: 'Task not found' } });
  });
});
