/**
 * `npm run bench`: the performance budget. Prints a table per section and writes
 * bench/results.json. Not part of `npm test`: figures on a shared machine are for reading, not
 * for asserting.
 */
import { longestFirst } from './schedule';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import * as os from 'node:os';
import * as path from 'node:path';
import { benchAcceptPath } from './accept-path';
import { benchBundles } from './bundles';
import { costOf, PRICES_USD } from './cost-model';
import { benchHttp } from './http';
import { benchLeases } from './leases';
import { benchMarketplace } from './marketplace';
import { benchOutbidRecovery } from './outbid-recovery';
import { benchStandingOrders } from './standing-orders';
import { writeBenchmarksDoc } from './doc';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.AWS_REGION ??= 'us-east-1';

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

/**
 * The sections, in the order a full run reports them. `kind` says how a full run schedules them:
 * `cpu` sections measure time spent computing (bundle loads, the accept path, HTTP throughput, a
 * sweep's own cost) and run one at a time with nothing else of the bench beside them; `wait`
 * sections are bound by the simulated marketplace's rate limits, readiness delays and sweep
 * intervals (they wait, not compute) and run side by side, BENCH_JOBS at a time; `derived` ones
 * compute from the others' figures and run last.
 */
const SECTIONS = {
  bundles: 'cpu',
  accept: 'cpu',
  http: 'cpu',
  leases: 'cpu',
  marketplace: 'wait',
  'marketplace-live': 'wait',
  pacing: 'wait',
  'pacing-live': 'wait',
  outbid: 'wait',
  'outbid-live': 'wait',
  'outbid-replace': 'wait',
  'outbid-replace-live': 'wait',
  standing: 'wait',
  'standing-live': 'wait',
  cost: 'derived',
} as const;
type Section = keyof typeof SECTIONS;
const RESULTS = path.join(__dirname, 'results.json');
/**
 * Wait-bound sections run side by side in a full run (BENCH_JOBS=1: strictly one at a time). Five:
 * the ten wait-bound sections use under a third of the two cores side by side (user + sys 4 min in a
 * 7 min full run with four), and five bring the full run under 6 minutes (issue 32 §2).
 */
const JOBS = Math.max(1, Number(process.env.BENCH_JOBS ?? 5));
/** Set in a child: the one section it runs, and the file it writes its figures to. */
const CHILD_SECTION = 'BENCH_SECTION';
const CHILD_OUT = 'BENCH_SECTION_OUT';

interface SectionRun {
  readonly section: Section;
  readonly figures: Record<string, unknown>;
  readonly seconds: number;
  readonly output: string;
}

/**
 * One section in a fresh process, whatever the command line names: handlers cache their environment
 * and clients per process (the DynamoDB document client keeps the first local runtime's endpoint),
 * so a second runtime in the same process would talk to the first one's closed emulators.
 */
const runSection = (section: Section, tempDir: string, quiet: boolean): Promise<SectionRun> =>
  new Promise((resolve, reject) => {
    const out = path.join(tempDir, `${section}.json`);
    const started = performance.now();
    const child = spawn(process.execPath, [...process.execArgv, __filename], {
      env: { ...process.env, [CHILD_SECTION]: section, [CHILD_OUT]: out },
      stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    });
    let output = '';
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) {
        reject(new Error(`section ${section} failed (exit ${code}) after ${seconds.toFixed(0)} s\n${output}`));
        return;
      }
      resolve({ section, figures: JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>, seconds, output });
    });
  });

const readResults = (): Record<string, unknown> => {
  try {
    return JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
};

const machine = () => ({
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  memGiB: Math.round(os.totalmem() / 1024 ** 3),
  node: process.version,
  platform: `${os.platform()} ${os.arch()}`,
});

/**
 * The parent: runs the named sections (all when none is named), each in its own process, adds each
 * one's figures to bench/results.json as it finishes (with its date and wall time under `sections`),
 * then regenerates BENCHMARKS.md's tables from the file.
 */
const runSections = async (names: string[]) => {
  const unknown = names.filter((n) => !(n in SECTIONS));
  if (unknown.length > 0)
    throw new Error(`unknown section(s) ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}`);
  const full = names.length === 0;
  const wanted = (full ? Object.keys(SECTIONS) : [...new Set(names)]) as Section[];
  const started = performance.now();
  const previous = readResults();
  const results: Record<string, unknown> = full ? {} : previous;
  const sections = { ...((results.sections as Record<string, unknown> | undefined) ?? {}) };
  const tempDir = mkdtempSync(path.join(os.tmpdir(), 'relay-bench-'));
  const record = (run: SectionRun) => {
    Object.assign(results, run.figures);
    sections[run.section] = { date: new Date().toISOString(), seconds: Math.round(run.seconds * 10) / 10 };
    results.date = new Date().toISOString();
    results.machine = machine();
    results.sections = sections;
    writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  };
  try {
    const byKind = (kind: (typeof SECTIONS)[Section]) => wanted.filter((s) => SECTIONS[s] === kind);
    for (const section of byKind('cpu')) record(await runSection(section, tempDir, false));
    // Side by side: each child's tables are printed when it ends, in the order they end.
    const waiting = longestFirst(
      byKind('wait'),
      (previous.sections as Record<string, { seconds?: number }> | undefined) ?? {},
    ) as Section[];
    const worker = async () => {
      for (let section = waiting.shift(); section; section = waiting.shift()) {
        const run = await runSection(section, tempDir, JOBS > 1);
        if (JOBS > 1) process.stdout.write(run.output);
        console.log(`(${section}: ${run.seconds.toFixed(0)} s)`);
        record(run);
      }
    };
    await Promise.all(Array.from({ length: Math.min(JOBS, waiting.length) }, worker));
    for (const section of byKind('derived')) record(await runSection(section, tempDir, false));
  } finally {
    rmSync(tempDir, { recursive: true, force: true });
  }
  if (full) results.fullRunSeconds = Math.round((performance.now() - started) / 100) / 10;
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  writeBenchmarksDoc();
  console.log(
    `\nwrote bench/results.json and BENCHMARKS.md's tables (${wanted.join(', ')}; ${((performance.now() - started) / 1000).toFixed(0)} s)`,
  );
};

/** A child: the one section BENCH_SECTION names; its figures go to BENCH_SECTION_OUT. */
const main = async (section: Section) => {
  const want = (name: Section) => name === section;
  const results: Record<string, unknown> = {};

  if (want('bundles')) {
    const b = await benchBundles();
    results.bundles = b;
    const name = (entry: string) => entry.replace('lambdas/handlers/', '').replace(/\.ts$/, '');
    console.log(
      `\n1. Bundles (minified ESM; load and first call = medians of fresh processes; reference bundle ${kb(b.reference.bytes)}, load ${b.reference.loadCpuMsMedian.toFixed(1)} ms CPU / ${b.reference.loadMsMedian.toFixed(1)} ms wall, first call ${b.reference.firstInvocationMsMedian.toFixed(1)} ms; tracing ${b.tracing ? 'on (Lambda-like)' : 'off'})`,
    );
    console.table(
      b.bundles.map((x) => ({
        entry: name(x.entry),
        kind: x.kind,
        size: kb(x.bytes),
        budget: `${kb(x.budgetBytes)}${x.budgetLoadRatio === undefined ? '' : `, ${x.budgetLoadRatio}×`}`,
        'load CPU ms': x.loadCpuMsMedian.toFixed(1),
        'load ms': x.loadMsMedian.toFixed(1),
        '× reference': x.loadRatio.toFixed(2),
        '1st call ms': x.firstInvocationMsMedian.toFixed(1),
        'lazy chunks CPU ms': x.lazyChunksCpuMsMedian.toFixed(1),
        'trace docs': x.traceDocuments,
        ok: x.withinBudget,
        'first call answered': x.firstInvocationOutcome,
      })),
    );
    console.log('Top modules by bytes in the output:');
    for (const x of b.bundles)
      console.log(
        `  ${name(x.entry)}: ${x.topModules.map((m) => `${m.module} ${(m.bytes / 1024).toFixed(0)}K`).join(', ')}`,
      );
  }
  if (want('accept')) {
    const a = await benchAcceptPath();
    results.acceptPath = a;
    console.log('\n2. Accept path (signed create-order through the real middleware chain, memory ports)');
    console.table([
      {
        runs: a.runs,
        'p50 µs': a.p50Us.toFixed(1),
        'p99 µs': a.p99Us.toFixed(1),
        'HMAC p50 µs': a.hmacP50Us.toFixed(2),
        'ratio p50': a.ratioP50.toFixed(1),
        'budget p99 ≤ 1 ms': a.withinBudget,
      },
    ]);
  }
  if (want('http')) {
    const h = await benchHttp();
    results.http = h;
    console.log('\n3. Local HTTP (autocannon, 10 connections, 10 s each)');
    console.table(h);
  }
  let market: Awaited<ReturnType<typeof benchMarketplace>> | undefined;
  const printMarket = (m: Awaited<ReturnType<typeof benchMarketplace>>, title: string) => {
    console.log(`\n4. Marketplace efficiency, ${title}`);
    console.table([
      {
        orders: m.orders,
        succeeded: m.succeeded,
        'calls/order': m.callsPerOrder.toFixed(2),
        'rate-limited': m.code5Answers,
        'makespan s': m.makespanS.toFixed(1),
        'lower bound s': m.lowerBoundS,
        'bound by': m.boundBy,
        ratio: m.ratio.toFixed(2),
        'goal ≤ 1.2': m.ratio <= 1.2,
      },
    ]);
    console.table(m.callsByEndpoint);
  };
  if (want('marketplace')) {
    market = await benchMarketplace('spec');
    results.marketplace = market;
    printMarket(market, 'spec dialect (10 concurrent create-orders, strict 1 req/s)');
  }
  if (want('marketplace-live')) {
    const live = await benchMarketplace('live');
    results.marketplaceLive = live;
    printMarket(live, 'live dialect (10 concurrent create-orders, 1 req/s and 1 create_order per 5 s)');
  }
  const printPacing = (m: Awaited<ReturnType<typeof benchMarketplace>>, title: string) => {
    console.log(`\n4b. Adaptive pacing (BENCHMARKS.md §9), ${title}`);
    console.table([
      {
        orders: m.orders,
        succeeded: m.succeeded,
        'rate-limited': m.code5Answers,
        'goal ≤ 3': m.code5Answers <= 3,
        'processed calls': m.processedCalls,
        'interval after (ms)': m.pacing.intervalMs ?? m.relayMinIntervalMs,
        'last widened (s)': m.pacing.lastWidenedAtS?.toFixed(1) ?? '-',
        'makespan s': m.makespanS.toFixed(1),
        'lower bound s': m.lowerBoundS,
        'bound by': m.boundBy,
        ratio: m.ratio.toFixed(2),
        'goal ≤ 1.3': m.ratio <= 1.3,
      },
    ]);
    console.table(m.callsByEndpoint);
  };
  // Issue 20 item 8: the relay starts at 1 req/s against a marketplace that allows one request per 2 s.
  if (want('pacing')) {
    const p = await benchMarketplace('spec', { marketplaceIntervalMs: 2_000, relayMinIntervalMs: 1_000 });
    results.pacing = p;
    printPacing(p, 'spec dialect (10 concurrent create-orders; simulator 1 req / 2 s, relay starts at 1 s)');
  }
  if (want('pacing-live')) {
    const p = await benchMarketplace('live', { marketplaceIntervalMs: 2_000, relayMinIntervalMs: 1_000 });
    results.pacingLive = p;
    printPacing(
      p,
      'live dialect (10 concurrent create-orders; simulator 1 req / 2 s and 1 create_order / 5 s, relay starts at 1 s)',
    );
  }
  if (want('leases')) {
    const l = await benchLeases();
    results.leases = l;
    console.log(
      '\n5a. Fleet watch: one sweep over N leases of which 100 are due (dynalite lease store, in-memory marketplace)',
    );
    console.table(
      l.map((x) => ({
        leases: x.leases,
        due: x.due,
        cancelled: x.cancelled,
        'marketplace calls': x.marketplaceCalls,
        'table reads': x.tableReads,
        'sweep ms': x.sweepMs.toFixed(0),
        'paced sweep s (1 req/s)': x.pacedSweepS.toFixed(1),
        'idle sweep ms': x.idleSweepMs.toFixed(0),
        'idle reads': x.idleTableReads,
        'idle calls': x.idleMarketplaceCalls,
      })),
    );
  }
  for (const [section, dialect] of [
    ['outbid', 'spec'],
    ['outbid-live', 'live'],
  ] as const) {
    if (!want(section)) continue;
    const o = await benchOutbidRecovery(dialect);
    results[section === 'outbid' ? 'outbid' : 'outbidLive'] = o;
    console.log(
      `\n10. Outbid recovery (${dialect} dialect): loss → running again after rebid (watch every ${o.watchIntervalSeconds} s, 5 % max raise step)`,
    );
    console.table([
      {
        orders: o.orders,
        'median ms': o.recoveryMsMedian,
        'worst ms': o.recoveryMsWorst,
        'set_spot_price calls / recovery': o.setSpotPriceCallsPerRecovery,
      },
    ]);
  }
  for (const [section, dialect] of [
    ['outbid-replace', 'spec'],
    ['outbid-replace-live', 'live'],
  ] as const) {
    if (!want(section)) continue;
    const o = await benchOutbidRecovery(dialect, 'replace');
    results[section === 'outbid-replace' ? 'outbidReplace' : 'outbidReplaceLive'] = o;
    console.log(
      `\n10. Outbid recovery (${dialect} dialect): loss → replacement order running (watch every ${o.watchIntervalSeconds} s)`,
    );
    console.table([
      {
        orders: o.orders,
        'median ms': o.recoveryMsMedian,
        'worst ms': o.recoveryMsWorst,
        'reported median ms': o.reportedMsMedian,
        'reported worst ms': o.reportedMsWorst,
      },
    ]);
  }
  for (const [section, dialect] of [
    ['standing', 'spec'],
    ['standing-live', 'live'],
  ] as const) {
    if (!want(section)) continue;
    const s = await benchStandingOrders(dialect);
    results[section === 'standing' ? 'standing' : 'standingLive'] = s;
    console.log(
      `\n11. Standing orders (${dialect} dialect): ${s.waitingTasks} waiting tasks, watch every ${s.watchIntervalSeconds} s, read cache ${s.cacheMaxAgeSeconds} s`,
    );
    console.table([
      {
        'queue s': s.queueS.toFixed(1),
        'queue listing reads': s.queueListingReads,
        'listing reads per sweep': s.listingReadsPerSweep.join(' '),
        'goal ≤ 1': s.listingReadsPerSweep.every((n) => n <= 1),
      },
    ]);
    console.table(s.idleCallsByEndpoint);
    console.log(`Then one matching server at a time, ${s.rounds} times:`);
    console.table([
      {
        'orders per server': s.ordersPerServer,
        'oldest served, in order': s.oldestServed,
        'still waiting': s.stillWaiting,
        'listing reads to place': s.listingReadsToPlace.join(' '),
        'server → order ms median': s.serverToOrderMsMedian,
        worst: s.serverToOrderMsWorst,
      },
    ]);
    const b = s.batch;
    console.log(`Then ${b.servers} matching servers at once:`);
    console.table([
      {
        'orders placed': b.ordersPlaced,
        'next oldest served': b.nextOldestServed,
        'listing reads': b.listingReadsToPlace,
        sweeps: b.sweeps,
        'servers → last order ms': b.serversToLastOrderMs,
      },
    ]);
  }
  if (want('cost')) {
    // Per order: transitions = FindServer, ReserveQuota, PlaceOrder, PlacementOutcome, ReportResult,
    // ResultReported + per readiness check (CheckOrder, OrderReady, WaitForReady) − the last wait.
    const previous = JSON.parse(readFileSync(RESULTS, 'utf8')) as { marketplace?: { checksPerOrder?: number } };
    const checks = market?.checksPerOrder ?? previous.marketplace?.checksPerOrder ?? 3;
    const perOrder = {
      transitions: 6 + 3 * checks - 1,
      lambdaInvocations: 1 + 4 + checks, // API + FindServer/ReserveQuota/PlaceOrder/ReportResult + checks
      lambdaBilledMs: 1 * 60 + 4 * 300 + checks * 150 + 0, // measured-order-of-magnitude durations (ms) at 256 MB
      lambdaMemoryMb: 256,
      apiRequests: 1,
      ddbWrites:
        2 /* rate window, task */ +
        1 /* claim */ +
        1 /* quota */ +
        3 /* task updates */ +
        1 /* finish */ +
        1 /* release */ +
        (5 + checks) /* pacing slots */ +
        2 /* caches */,
      ddbReads: 1 + 2 + checks + 2,
      sqsRequests: 0,
      logBytes: 12 * 600,
    };
    // An accepted status webhook: API function, task record, SQS send/receive/delete, one worker run.
    const perWebhook = {
      transitions: 0,
      lambdaInvocations: 2,
      lambdaBilledMs: 60 + 250,
      lambdaMemoryMb: 256,
      apiRequests: 1,
      ddbWrites: 2 + 2 + 1,
      ddbReads: 2,
      sqsRequests: 3,
      logBytes: 4 * 600,
    };
    const orders = costOf(perOrder, 1000);
    const webhooks = costOf(perWebhook, 1_000_000);
    results.cost = { prices: PRICES_USD, perOrder, perWebhook, per1000Orders: orders, per1MWebhooks: webhooks };
    console.log('\n5. Cost model (USD, us-east-1 list prices in bench/cost-model.ts)');
    console.table({ 'per 1,000 orders': orders, 'per 1M accepted webhooks (a status job each)': webhooks });
  }
  writeFileSync(process.env[CHILD_OUT] as string, `${JSON.stringify(results)}\n`);
};

const child = process.env[CHILD_SECTION] as Section | undefined;
(child ? main(child) : runSections(process.argv.slice(2))).then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
