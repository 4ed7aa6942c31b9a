/**
 * The relay's EMF lines (lambdas/adapters/observability.ts, `publishMetrics`), byte for byte what
 * Powertools Metrics 2.35 wrote for the same calls (its `singleMetric()` with and without a dimension,
 * and `addMetric` × n + `publishStoredMetrics()` for the fleet watch's report), and its rule for
 * when metrics are off.
 */
import { countMetric, MetricUnit, publishMetrics, spendMetric } from '../../../lambdas/adapters/observability';

const NOW = 1767225600000;

describe('Adapter: metrics (EMF lines)', () => {
  let lines: string[];
  const saved = { disabled: process.env.POWERTOOLS_METRICS_DISABLED, dev: process.env.POWERTOOLS_DEV };

  beforeEach(() => {
    lines = [];
    jest.spyOn(Date, 'now').mockReturnValue(NOW);
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    delete process.env.POWERTOOLS_DEV;
  });
  afterEach(() => {
    jest.restoreAllMocks();
    for (const [name, value] of [
      ['POWERTOOLS_METRICS_DISABLED', saved.disabled],
      ['POWERTOOLS_DEV', saved.dev],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('writes the lines Powertools Metrics wrote, one per call', () => {
    countMetric('TasksAccepted');
    countMetric('TasksAccepted', { name: 'Kind', value: 'create-order' });
    spendMetric('SpendReservedUsd', 'ci', 1.25);
    publishMetrics([
      { name: 'LeasesDue', unit: MetricUnit.Count, value: 3 },
      { name: 'LeaseWarnings', unit: MetricUnit.Count, value: 0 },
    ]);
    expect(lines).toEqual([
      '{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"GpuRelay","Dimensions":[["service"]],"Metrics":[{"Name":"TasksAccepted","Unit":"Count"}]}]},"service":"gpu-relay","TasksAccepted":1}\n',
      '{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"GpuRelay","Dimensions":[["service","Kind"]],"Metrics":[{"Name":"TasksAccepted","Unit":"Count"}]}]},"service":"gpu-relay","Kind":"create-order","TasksAccepted":1}\n',
      '{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"GpuRelay","Dimensions":[["service","key"]],"Metrics":[{"Name":"SpendReservedUsd","Unit":"None"}]}]},"service":"gpu-relay","key":"ci","SpendReservedUsd":1.25}\n',
      '{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"GpuRelay","Dimensions":[["service"]],"Metrics":[{"Name":"LeasesDue","Unit":"Count"},{"Name":"LeaseWarnings","Unit":"Count"}]}]},"service":"gpu-relay","LeasesDue":3,"LeaseWarnings":0}\n',
    ]);
  });

  it("writes the day's used total as a blob of its own, without the key dimension", () => {
    spendMetric('SpendReservedUsd', 'ci', 2, 40.5);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { key: 'ci', SpendReservedUsd: 2 },
      { _aws: { CloudWatchMetrics: [{ Dimensions: [['service']] }] }, SpendUsedTodayUsd: 40.5 },
    ]);
    expect(lines[1]).not.toContain('"key"');
  });

  it.each([
    [{ POWERTOOLS_METRICS_DISABLED: 'true' }, 0],
    [{ POWERTOOLS_METRICS_DISABLED: ' Yes ' }, 0],
    [{ POWERTOOLS_METRICS_DISABLED: 'false' }, 1],
    [{ POWERTOOLS_DEV: 'true' }, 0], // dev mode turns metrics off unless told otherwise
    [{ POWERTOOLS_DEV: '1', POWERTOOLS_METRICS_DISABLED: 'off' }, 1],
    [{}, 1],
  ])('with %j writes %i line(s)', (env, expected) => {
    Object.assign(process.env, env);
    const logged = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    countMetric('RateLimited');
    expect(lines.length + logged.mock.calls.length).toBe(expected);
  });
});
