/**
 * Bench of outbid recovery (issue 23 item 1): the latency from loss (the simulator's `outbid` control
 * pausing a running spot order) to the order running again after the relay's rebid, against the local
 * runtime (real handlers, the fleet watch on its 1 s timer, the simulator over HTTP with its default
 * 1 req/s pacing). N orders, each on a server of its own, outbid one at a time; median and worst.
 * The figure is dominated by the watch interval (the loss is found by the next sweep) and the paced
 * set_spot_price + my_orders calls per raise step.
 */
import { hmacHex } from '../lambdas/domain/signing';
import { startLocalRuntime } from '../local/runtime';
import type { Dialect } from '../local/simulator/dialect';
import { uniqueServer } from '../test/helpers/sim-servers';

const SECRET = 'bench-outbid-secret';
const ORDERS = 5;
const WATCH_INTERVAL_SECONDS = 1;

export interface OutbidRecoveryBench {
  readonly dialect: Dialect;
  readonly orders: number;
  readonly watchIntervalSeconds: number;
  readonly recoveryMsMedian: number;
  readonly recoveryMsWorst: number;
  readonly setSpotPriceCallsPerRecovery: number;
}

const waitFor = async (condition: () => boolean, timeoutMs: number, what: string): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

export const benchOutbidRecovery = async (dialect: Dialect): Promise<OutbidRecoveryBench> => {
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: true,
    env: {
      WEBHOOK_SECRET: SECRET, ALLOW_PRIVATE_CALLBACKS: 'true', WATCH_INTERVAL_SECONDS: String(WATCH_INTERVAL_SECONDS),
      ORDER_POLL_INTERVAL_SECONDS: '1', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true',
    },
    simulator: { seed: 7, readyDelayMs: 500, dialect },
  });
  try {
    const sim = runtime.simulator?.control;
    if (!sim) throw new Error('bench needs the embedded simulator');
    sim.setSpotRaiseStep(0.05);
    const latencies: number[] = [];
    for (let i = 0; i < ORDERS; i += 1) {
      const gpu = `BENCH OUTBID ${i}`;
      sim.addServer(uniqueServer(9950 + i, gpu, sim.nativeCoin));
      const body = JSON.stringify({ gpu_type: gpu, max_price: 0.6, on_outbid: 'rebid' });
      const res = await fetch(`${runtime.url}/webhook/create-order`, {
        method: 'POST', body, headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
      });
      if (res.status !== 202) throw new Error(`create-order answered ${res.status}: ${await res.text()}`);
      const order = () => sim.orders().find((o) => o.renting_server === 9950 + i);
      await waitFor(() => order()?.online === true, 60_000, `order on ${gpu} running`);
      // Seen running by the watch: two sweeps later.
      const sweeps = runtime.watch.sweeps();
      await waitFor(() => runtime.watch.sweeps() >= sweeps + 2, 30_000, 'two sweeps');
      const placed = order();
      if (!placed) throw new Error('no order');
      const lostAt = Date.now();
      sim.outbid(placed.order_id, Number((placed.price * 1.15).toFixed(6)));
      await waitFor(() => order()?.online === true, 60_000, `order ${placed.order_id} running again`).catch((error: unknown) => {
        throw new Error(`${String(error)}; calls ${JSON.stringify(sim.spotPriceCalls())}; order ${JSON.stringify(order())}`);
      });
      latencies.push(Date.now() - lostAt);
    }
    const calls = sim.spotPriceCalls().length;
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      dialect, orders: ORDERS, watchIntervalSeconds: WATCH_INTERVAL_SECONDS,
      recoveryMsMedian: sorted[Math.floor(sorted.length / 2)] as number, recoveryMsWorst: sorted.at(-1) as number,
      setSpotPriceCallsPerRecovery: calls / ORDERS,
    };
  } finally {
    await runtime.close();
  }
};
