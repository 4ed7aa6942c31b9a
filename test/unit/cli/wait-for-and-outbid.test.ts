/**
 * `create-order --wait-for 2h --on-outbid replace` (issue 23): the CLI puts wait_seconds and on_outbid
 * in the body it signs, and refuses bad values before anything is sent.
 */
import { parseWaitDuration } from '../../../contract/wait-and-outbid';
import { runCli, startFakeRelay } from './run-cli';
import type { FakeRelay } from './run-cli';

describe('CLI: --wait-for and --on-outbid', () => {
  let relay: FakeRelay;
  const env = () => ({ GPU_RELAY_URL: relay.url, GPU_RELAY_SECRET: 'unit-secret-wait' });
  const sentBody = (i = 0) => JSON.parse(relay.requests[i].body.toString('utf8')) as Record<string, unknown>;

  beforeEach(async () => {
    relay = await startFakeRelay();
  });
  afterEach(async () => {
    await relay.close();
  });

  it('sends wait_seconds and on_outbid in the create-order body', async () => {
    // Act
    const run = await runCli(
      ['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5', '--wait-for', '2h', '--on-outbid', 'replace'],
      { env: env() },
    );
    // Assess
    expect(run.code).toBe(0);
    expect(sentBody()).toEqual({ gpu_type: 'RTX 4090', max_price: 0.5, wait_seconds: 7200, on_outbid: 'replace' });
  });

  it.each([
    [['--wait-for', '90m'], { wait_seconds: 5400 }],
    [['--wait-for', '45s', '--on-outbid', 'REBID_THEN_REPLACE'], { wait_seconds: 45, on_outbid: 'rebid_then_replace' }],
    [['--on-outbid', 'notify'], { on_outbid: 'notify' }],
    [['--on-outbid', 'rebid'], { on_outbid: 'rebid' }],
  ])('sends %j', async (flags, expected) => {
    const run = await runCli(['create-order', '--gpu', 'A100', ...flags], { env: env() });
    expect(run.code).toBe(0);
    expect(sentBody()).toEqual({ gpu_type: 'A100', ...expected });
  });

  it('lets a price alert wait too', async () => {
    await runCli(['price-alert', '--gpu', 'A100', '--target', '1', '--wait-for', '1h'], { env: env() });
    expect(sentBody()).toEqual({ gpu_type: 'A100', target_price: 1, wait_seconds: 3600 });
  });

  it.each([
    [
      ['--wait-for', '25h'],
      "--wait-for takes a number with a unit, s, m or h (e.g. 45s, 90m, 2h), at most 24h, got '25h'",
    ],
    [
      ['--wait-for', '7200'],
      "--wait-for takes a number with a unit, s, m or h (e.g. 45s, 90m, 2h), at most 24h, got '7200'",
    ],
    [
      ['--wait-for', '0m'],
      "--wait-for takes a number with a unit, s, m or h (e.g. 45s, 90m, 2h), at most 24h, got '0m'",
    ],
    [['--on-outbid', 'retry'], "--on-outbid must be one of notify, rebid, replace, rebid_then_replace, got 'retry'"],
  ])('refuses %j before sending anything', async (flags, message) => {
    // Act
    const run = await runCli(['create-order', '--gpu', 'A100', ...flags], { env: env() });
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(relay.requests).toHaveLength(0);
  });

  it('refuses --on-outbid on a price alert (not one of its options)', async () => {
    const run = await runCli(['price-alert', '--gpu', 'A100', '--target', '1', '--on-outbid', 'rebid'], { env: env() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('price-alert does not take --on-outbid');
  });

  it('documents both flags in the help', async () => {
    const run = await runCli(['help', 'create-order']);
    expect(run.stdout).toContain('--wait-for 2h');
    expect(run.stdout).toContain('--on-outbid POLICY');
  });
});

describe('Function: parseWaitDuration', () => {
  it.each([
    ['2h', 7200],
    ['90m', 5400],
    ['45s', 45],
    ['24h', 86_400],
    ['1440m', 86_400],
    ['1.5h', 5400],
    ['.5m', 30],
    ['2H', 7200],
    ['25h', undefined],
    ['86401s', undefined],
    ['0s', undefined],
    ['0.5s', undefined],
    ['2', undefined],
    ['2d', undefined],
    ['-1h', undefined],
    ['', undefined],
    ['h', undefined],
  ])('%j → %j', (text, expected) => {
    expect(parseWaitDuration(text)).toBe(expected);
  });
});
