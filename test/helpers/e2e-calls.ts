/**
 * The calls the standing-order and outbid e2e files make against a started test runtime: the
 * simulator's control, a signed task lookup, a signed create-order with a callback tag, and waits on
 * task states and watch sweeps (conditions with deadlines, never fixed sleeps).
 */
import { hmacHex } from '../../lambdas/domain/signing';
import { TEST_WEBHOOK_SECRET, type LocalRuntime } from './local-runtime';
import { request, signedPost, type ReceivedRequest, type Receiver } from './receivers';
import { waitUntil } from './until';

export type Json = Record<string, unknown>;
export const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;
/** A task result (not a lifecycle event) delivered to `path`. */
export const isResult = (r: ReceivedRequest, path: string): boolean => r.path === path && json(r).event === undefined;

/** `runtime()` and `callbacks()` are read at call time: the files start both in beforeAll. */
export const e2eCalls = (runtime: () => LocalRuntime, callbacks: () => Receiver, waitMs: number) => {
  const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = waitMs): Promise<void> =>
    waitUntil(condition, what, timeoutMs);
  const sim = () => {
    const { simulator } = runtime();
    if (!simulator) throw new Error('the test runtime has no simulator');
    return simulator.control;
  };
  const taskView = async (taskId: string): Promise<Json> => {
    const path = `/webhook/tasks/${taskId}`;
    const res = await request(`${runtime().url}${path}`, {
      headers: { 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, path) },
    });
    expect(res.status).toBe(200);
    return res.json as Json;
  };
  const create = async (tag: string, body: Json): Promise<string> => {
    const res = await signedPost(
      runtime().url,
      '/webhook/create-order',
      { callback_url: `${callbacks().url}/${tag}`, ...body },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    return String(res.json?.task_id);
  };
  const waitingView = async (taskId: string): Promise<Json> => {
    let view: Json = {};
    await until(async () => (view = await taskView(taskId)).state === 'waiting', `task ${taskId} waiting`);
    return view;
  };
  const moreSweeps = async (n: number): Promise<void> => {
    const seen = runtime().watch.sweeps();
    await until(() => runtime().watch.sweeps() >= seen + n, `${n} more watch sweeps`);
  };
  return { until, sim, taskView, create, waitingView, moreSweeps };
};
