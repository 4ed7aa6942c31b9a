/**
 * Bench of standing orders (issue 23 item 2, "100 waiting tasks cost one listing read per sweep"),
 * against the local runtime (real handlers, the fleet watch on its timer, the simulator over HTTP at
 * its default 1 req/s): TASKS create-orders with `wait_seconds` for a GPU no server has, then SWEEPS
 * watch sweeps counted; the simulator's counters give each sweep's `marketplace` (listing) reads.
 * Then one matching server appears, ROUNDS times: which task got it (must be the oldest, first come
 * first served), the listing reads from then until the order was placed, and the time from the
 * server appearing to the order placed; then BATCH servers at once (one sweep resumes BATCH tasks).
 *
 * The read cache's age limit (ORDER_POLL_INTERVAL_SECONDS, 1 s here) is below the watch interval
 * (2 s), so no sweep is served by the previous sweep's cached listing: the worst case, each sweep
 * pays its own read.
 */
import { hmacHex } from '../lambdas/domain/signing';
import { startLocalRuntime } from '../local/runtime';
import type { Dialect } from '../local/simulator/dialect';
import { uniqueServer } from '../test/helpers/sim-servers';

const SECRET = 'bench-standing-secret';
const TASKS = 100;
const SWEEPS = 5;
const WATCH_INTERVAL_SECONDS = 2;
const GPU = 'BENCH STANDING';
/** Single servers appear this many times, one after the other. */
const ROUNDS = 5;
const FIRST_SERVER_ID = 9960;
/** Then this many matching servers appear at once: as many tasks resumed by one sweep. */
const BATCH = 10;
const BATCH_FIRST_ID = 9971;

export interface StandingOrdersBench {
  readonly dialect: Dialect;
  readonly waitingTasks: number;
  readonly watchIntervalSeconds: number;
  readonly cacheMaxAgeSeconds: number;
  /** Seconds from the first create-order to all tasks `waiting`, and listing reads meanwhile. */
  readonly queueS: number;
  readonly queueListingReads: number;
  /** Listing reads (simulator `processed.marketplace`) of each of SWEEPS idle sweeps (sampled half an interval after each start). */
  readonly listingReadsPerSweep: readonly number[];
  /** Every request the simulator processed during those sweeps, by endpoint. */
  readonly idleCallsByEndpoint: Record<string, number>;
  /** One matching server appears, ROUNDS times: the most orders any of them got (must be 1), whether the oldest tasks got them in order. */
  readonly rounds: number;
  readonly ordersPerServer: number;
  readonly oldestServed: boolean;
  readonly stillWaiting: number;
  /** Per round, listing reads from the server appearing to the order placed (the sweep that found it, and the resumed execution). */
  readonly listingReadsToPlace: readonly number[];
  /** From the server appearing to the order created at the simulator (includes waiting for the next sweep, 0 to 2 s). */
  readonly serverToOrderMsMedian: number;
  readonly serverToOrderMsWorst: number;
  /** Then BATCH servers at once: orders placed on them, whether they went to the next-oldest tasks, listing reads until all were placed, time. */
  readonly batch: {
    readonly servers: number;
    readonly ordersPlaced: number;
    readonly nextOldestServed: boolean;
    readonly listingReadsToPlace: number;
    readonly sweeps: number;
    readonly serversToLastOrderMs: number;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const waitFor = async (
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 20,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
};

export const benchStandingOrders = async (dialect: Dialect): Promise<StandingOrdersBench> => {
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: process.env.BENCH_VERBOSE === undefined,
    env: {
      WEBHOOK_SECRET: SECRET,
      ALLOW_PRIVATE_CALLBACKS: 'true',
      WATCH_INTERVAL_SECONDS: String(WATCH_INTERVAL_SECONDS),
      ORDER_POLL_INTERVAL_SECONDS: '1',
      MAX_REQUESTS_PER_MINUTE: '600',
      MAX_ORDERS_PER_HOUR: '200',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    simulator: { seed: 7, readyDelayMs: 500, dialect },
  });
  try {
    const sim = runtime.simulator?.control;
    if (!sim) throw new Error('bench needs the embedded simulator');
    const listingReads = () => sim.counters().processed.marketplace ?? 0;
    const view = async (taskId: string): Promise<Record<string, unknown>> => {
      const path = `/webhook/tasks/${taskId}`;
      const res = await fetch(`${runtime.url}${path}`, { headers: { 'x-webhook-signature': hmacHex(SECRET, path) } });
      return (await res.json()) as Record<string, unknown>;
    };
    const states = async (ids: readonly string[]) => {
      const out: string[] = [];
      for (const id of ids) out.push(String((await view(id)).state));
      return out;
    };

    // Queue: one at a time, so arrival order (first come, first served) is the creation order.
    const queueStart = Date.now();
    const readsBefore = listingReads();
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i += 1) {
      const body = JSON.stringify({ gpu_type: GPU, max_price: 0.6, wait_seconds: 3_600 });
      const res = await fetch(`${runtime.url}/webhook/create-order`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
      });
      if (res.status !== 202) throw new Error(`create-order ${i + 1} answered ${res.status}: ${await res.text()}`);
      ids.push(String(((await res.json()) as { task_id: string }).task_id));
      // The first one waits before the others arrive: the oldest task is unambiguous.
      if (i === 0)
        await waitFor(
          async () => (await view(ids[0] as string)).state === 'waiting',
          60_000,
          'the first task waiting',
          250,
        );
    }
    // One task view at a time (the API's per-minute request limit covers these reads too).
    for (const id of ids)
      await waitFor(async () => (await view(id)).state === 'waiting', 300_000, `task ${id} waiting`, 250);
    const queueS = (Date.now() - queueStart) / 1000;
    const queueListingReads = listingReads() - readsBefore;

    // Idle sweeps: the counter is sampled half an interval after each sweep started (an idle sweep
    // takes a few ms), so each difference holds exactly one sweep's reads.
    const midInterval = async (): Promise<void> => {
      const at = runtime.watch.sweeps();
      await waitFor(() => runtime.watch.sweeps() > at, 30_000, 'the next sweep');
      await sleep((WATCH_INTERVAL_SECONDS * 1000) / 2);
    };
    await midInterval();
    const callsBefore = sim.counters().processed;
    const perSweep: number[] = [];
    let reads = listingReads();
    while (perSweep.length < SWEEPS) {
      await midInterval();
      const now = listingReads();
      perSweep.push(now - reads);
      reads = now;
    }
    const callsAfter = sim.counters().processed;
    const idleCallsByEndpoint = Object.fromEntries(
      Object.entries(callsAfter)
        .map(([k, v]) => [k, v - (callsBefore[k] ?? 0)])
        .filter(([, v]) => (v as number) > 0),
    );

    // One matching server appears, ROUNDS times (one at a time): the oldest waiting task must get it.
    const roundReads: number[] = [];
    const roundMs: number[] = [];
    let ordersPerServer = 0;
    for (let r = 0; r < ROUNDS; r += 1) {
      const serverId = FIRST_SERVER_ID + r;
      const readsAtServer = listingReads();
      const appeared = Date.now();
      sim.addServer(uniqueServer(serverId, GPU, sim.nativeCoin));
      const onServer = () => sim.orders().filter((o) => o.renting_server === serverId);
      await waitFor(() => onServer().length > 0, 60_000, `an order on server ${serverId}`);
      roundMs.push(Date.now() - appeared);
      roundReads.push(listingReads() - readsAtServer);
      // Two more sweeps: nobody else takes it.
      const seen = runtime.watch.sweeps();
      await waitFor(() => runtime.watch.sweeps() >= seen + 2, 30_000, 'two more sweeps');
      ordersPerServer = Math.max(ordersPerServer, onServer().length);
    }
    const after = await states(ids);
    const sorted = [...roundMs].sort((a, b) => a - b);

    // BATCH servers at once: one sweep resumes BATCH tasks, each resumed execution runs FindServer.
    const readsAtBatch = listingReads();
    const sweepsAtBatch = runtime.watch.sweeps();
    const batchAt = Date.now();
    const batchIds = Array.from({ length: BATCH }, (_, i) => BATCH_FIRST_ID + i);
    for (const id of batchIds) sim.addServer(uniqueServer(id, GPU, sim.nativeCoin));
    const onBatch = () => sim.orders().filter((o) => batchIds.includes(o.renting_server));
    await waitFor(() => onBatch().length >= BATCH, 300_000, `${BATCH} orders on the new servers`);
    const serversToLastOrderMs = Date.now() - batchAt;
    const batchReads = listingReads() - readsAtBatch;
    const batchSweeps = runtime.watch.sweeps() - sweepsAtBatch;
    const seen = runtime.watch.sweeps();
    await waitFor(() => runtime.watch.sweeps() >= seen + 2, 30_000, 'two more sweeps');
    const final = await states(ids);
    const batch = {
      servers: BATCH,
      ordersPlaced: onBatch().length,
      listingReadsToPlace: batchReads,
      sweeps: batchSweeps,
      serversToLastOrderMs,
      nextOldestServed:
        final.slice(ROUNDS, ROUNDS + BATCH).every((s) => s !== 'waiting') &&
        final.slice(ROUNDS + BATCH).every((s) => s === 'waiting'),
    };
    return {
      dialect,
      waitingTasks: TASKS,
      watchIntervalSeconds: WATCH_INTERVAL_SECONDS,
      cacheMaxAgeSeconds: 1,
      queueS,
      queueListingReads,
      listingReadsPerSweep: perSweep,
      idleCallsByEndpoint,
      rounds: ROUNDS,
      ordersPerServer,
      oldestServed:
        after.slice(0, ROUNDS).every((s) => s !== 'waiting') && after.slice(ROUNDS).every((s) => s === 'waiting'),
      stillWaiting: after.filter((s) => s === 'waiting').length,
      listingReadsToPlace: roundReads,
      serverToOrderMsMedian: sorted[Math.floor(sorted.length / 2)] as number,
      serverToOrderMsWorst: sorted.at(-1) as number,
      batch,
    };
  } finally {
    await runtime.close();
  }
};
