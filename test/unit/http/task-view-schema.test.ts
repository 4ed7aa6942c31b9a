/**
 * The served OpenAPI document's TaskView (issue 28) accepts the views GET /webhook/tasks/{id} really
 * answers, of every kind: queued, running, waiting (waiting_until, position), recovered after an outbid
 * (order_id, history), succeeded and failed. The views come from the handler's own toTaskView; the
 * document is the asset GET /openapi.json serves (lambdas/http/openapi.json). It fails when the view
 * gains a field the schema lacks (the schema forbids additional properties).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { toTaskView } from '../../../lambdas/domain/requests/task-view';
import { aTaskRecord } from '../../fakes/builders';

const served = JSON.parse(readFileSync(path.resolve(__dirname, '../../../lambdas/http/openapi.json'), 'utf8')) as {
  components: unknown;
};

const validate = (() => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ $id: 'https://relay.invalid/openapi.json', components: served.components });
  return ajv.compile({ $ref: 'https://relay.invalid/openapi.json#/components/schemas/TaskView' });
})();

const at = '2026-11-27T10:00:00.000Z';

const views = {
  queued: toTaskView(aTaskRecord('t-queued', { state: 'queued' })),
  running: toTaskView(aTaskRecord('t-running', { state: 'running', order_id: 50_001 })),
  waiting: toTaskView(aTaskRecord('t-waiting', { state: 'waiting', waiting_until: 1_795_000_000 }), 2),
  recovered: toTaskView(
    aTaskRecord('t-recovered', {
      state: 'succeeded',
      finished_at: at,
      order_id: 50_003,
      result: {
        success: true,
        order_id: 50_001,
        server_id: 1007,
        status: 'running',
        ssh_connection: 'ssh -p 2222 root@127.0.0.1',
        gpu: ['NVIDIA GeForce RTX 4090'],
        price_usd: 0.25,
      },
      history: [
        { at: 1_795_000_100, event: 'order.outbid', order_id: 50_001, old_price: 10, currency: 'NATIVE-Blockchain' },
        { at: 1_795_000_160, event: 'order.replaced', order_id: 50_003, from_order_id: 50_001, to_order_id: 50_003 },
      ],
    }),
  ),
  failed: toTaskView(
    aTaskRecord('t-failed', {
      state: 'failed',
      finished_at: at,
      result: { success: false, error: 'No RTX 9999 available; models listed now: RTX 4090' },
    }),
  ),
};

describe('OpenAPI TaskView against real task views', () => {
  it.each(Object.entries(views))('accepts the %s view', (_kind, view) => {
    const ok = validate(view);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('the views carry the fields the issue names (waiting_until, position, order_id, history)', () => {
    expect(views.waiting).toMatchObject({ waiting_until: 1_795_000_000, position: 2 });
    expect(views.recovered).toMatchObject({ order_id: 50_003, history: expect.any(Array) });
  });

  it('still refuses a field the view does not have', () => {
    expect(validate({ ...views.queued, request: {} })).toBe(false);
  });
});
