/**
 * Bench of outbid recovery (issue 23 item 1): the latency from loss (the simulator's `outbid` control
 * pausing a running spot order) to an order running again, against the local runtime (real handlers,
 * the fleet watch on its 1 s timer, the simulator over HTTP with its default 1 req/s pacing). N
 * orders, each on a server of its own, outbid one at a time; median and worst.
 * - `rebid`: the same order runs again after the relay's raises. Dominated by the watch interval (the
 *   loss is found by the next sweep) and the paced set_spot_price + my_orders calls per raise step.
 * - `replace`: a new order runs on a second server (added once the first order runs), placed by a
 *   replacement round of the create-order workflow; also measured: until the relay reports it (the
 *   callback_url receives order.replaced).
 * Each order is outbid only once the relay has reported it ready (its task succeeded) and the watch
 * has swept twice since: in the live dialect an order may run in the simulator before the relay has
 * seen it ready (my_orders lists it late), and an order outbid before the watch tracks it is never
 * seen to stop.
 */
import { hmacHex } from '../lambdas/domain/signing';
import { startLocalRuntime } from '../local/runtime';
import type { Dialect } from '../local/simulator/dialect';
import { startReceiver, type ReceivedRequest } from '../test/helpers/receivers';
import { uniqueServer } from '../test/helpers/sim-servers';

const SECRET = 'bench-outbid-secret';
const ORDERS = 5;
const WATCH_INTERVAL_SECONDS = 1;

export type RecoveryMode = 'rebid' | 'replace';

export interface OutbidRecoveryBench {
  readonly dialect: Dialect;
  readonly mode: RecoveryMode;
  readonly orders: number;
  readonly watchIntervalSeconds: number;
  readonly recoveryMsMedian: number;
  readonly recoveryMsWorst: number;
  readonly setSpotPriceCallsPerRecovery: number;
  /** replace: loss → the relay reports the new order (task view), median and worst. */
  readonly reportedMsMedian?: number;
  readonly reportedMsWorst?: number;
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const worst = (values: readonly number[]): number => Math.max(...values);

const waitFor = async (condition: () => boolean, timeoutMs: number, what: string): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

export const benchOutbidRecovery = async (
  dialect: Dialect,
  mode: RecoveryMode = 'rebid',
): Promise<OutbidRecoveryBench> => {
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: true,
    env: {
      WEBHOOK_SECRET: SECRET,
      ALLOW_PRIVATE_CALLBACKS: 'true',
      WATCH_INTERVAL_SECONDS: String(WATCH_INTERVAL_SECONDS),
      ORDER_POLL_INTERVAL_SECONDS: '1',
      MAX_ORDERS_PER_HOUR: '100',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    simulator: { seed: 7, readyDelayMs: 500, dialect },
  });
  // Results and lifecycle events arrive here: no polling of the API (its rate limiter stays out of the figures).
  const callbacks = await startReceiver();
  const event = (r: ReceivedRequest): unknown => (r.json as { event?: unknown } | undefined)?.event;
  try {
    const sim = runtime.simulator?.control;
    if (!sim) throw new Error('bench needs the embedded simulator');
    sim.setSpotRaiseStep(0.05);
    const latencies: number[] = [];
    const reported: number[] = [];
    const base = mode === 'rebid' ? 9950 : 9930;
    for (let i = 0; i < ORDERS; i += 1) {
      const gpu = `BENCH OUTBID ${mode} ${i}`;
      sim.addServer(uniqueServer(base + i, gpu, sim.nativeCoin));
      const tag = `/${mode}-${i}`;
      const body = JSON.stringify({
        gpu_type: gpu,
        max_price: 0.6,
        on_outbid: mode,
        callback_url: `${callbacks.url}${tag}`,
      });
      const res = await fetch(`${runtime.url}/webhook/create-order`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
      });
      if (res.status !== 202) throw new Error(`create-order answered ${res.status}: ${await res.text()}`);
      const order = (server = base + i) => sim.orders().find((o) => o.renting_server === server && !o.expired);
      // Reported ready by the relay (so tracked by the watch), then seen running by two sweeps.
      await callbacks.waitFor((r) => r.path === tag && event(r) === undefined, 90_000);
      const sweeps = runtime.watch.sweeps();
      await waitFor(() => runtime.watch.sweeps() >= sweeps + 2, 30_000, 'two sweeps');
      const placed = order();
      if (!placed?.online) throw new Error(`order on ${gpu} is not running: ${JSON.stringify(placed)}`);
      if (mode === 'replace') sim.addServer(uniqueServer(base + 10 + i, gpu, sim.nativeCoin));
      const lostAt = Date.now();
      sim.outbid(placed.order_id, Number((placed.price * (mode === 'rebid' ? 1.15 : 2)).toFixed(6)));
      if (mode === 'rebid') {
        await waitFor(() => order()?.online === true, 60_000, `order ${placed.order_id} running again`).catch(
          (error: unknown) => {
            throw new Error(
              `${String(error)}; calls ${JSON.stringify(sim.spotPriceCalls())}; order ${JSON.stringify(order())}`,
            );
          },
        );
        latencies.push(Date.now() - lostAt);
        continue;
      }
      await waitFor(
        () => order(base + 10 + i)?.online === true,
        90_000,
        `replacement of order ${placed.order_id} running`,
      );
      latencies.push(Date.now() - lostAt);
      await callbacks.waitFor((r) => r.path === tag && event(r) === 'order.replaced', 90_000);
      reported.push(Date.now() - lostAt);
    }
    const calls = sim.spotPriceCalls().length;
    return {
      dialect,
      mode,
      orders: ORDERS,
      watchIntervalSeconds: WATCH_INTERVAL_SECONDS,
      recoveryMsMedian: median(latencies),
      recoveryMsWorst: worst(latencies),
      setSpotPriceCallsPerRecovery: calls / ORDERS,
      ...(reported.length > 0 ? { reportedMsMedian: median(reported), reportedMsWorst: worst(reported) } : {}),
    };
  } finally {
    await runtime.close();
    await callbacks.close();
  }
};
