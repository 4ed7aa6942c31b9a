/**
 * The local runtime starts the embedded simulator in the dialect asked for and tells the relay what
 * the live dialect needs (its coin, its create_order spacing), unless the caller said otherwise.
 */
import { startLocalRuntime } from '../../../local/runtime';
import { FAST_ENV, FAST_SIMULATOR, startTestRuntime, type LocalRuntime } from '../../helpers/local-runtime';

describe('Local runtime: marketplace dialect', () => {
  let runtime: LocalRuntime | undefined;
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
  });

  it("starts a live simulator and sets the relay's DEFAULT_CURRENCY and MARKETPLACE_CREATE_INTERVAL_MS", async () => {
    // startLocalRuntime itself: startTestRuntime would pace creates slower than the simulator on purpose.
    runtime = await startLocalRuntime({
      port: 0,
      quiet: true,
      env: { ...FAST_ENV },
      simulator: { ...FAST_SIMULATOR, dialect: 'live', createIntervalMs: 100 },
    });
    expect(runtime.simulator?.dialect).toBe('live');
    expect(runtime.simulator?.createIntervalMs).toBe(100);
    expect(runtime.env).toMatchObject({ DEFAULT_CURRENCY: 'CLORE-Blockchain', MARKETPLACE_CREATE_INTERVAL_MS: '100' });
    const res = await fetch(`${runtime.simulator?.url}/v1/wallets`, { headers: { auth: 'wrong' } });
    expect(res.status).toBe(401);
  });

  it('keeps a DEFAULT_CURRENCY the caller set', async () => {
    runtime = await startTestRuntime({ dialect: 'live', env: { DEFAULT_CURRENCY: 'bitcoin' } });
    expect(runtime.env.DEFAULT_CURRENCY).toBe('bitcoin');
  });

  it('reads MARKETPLACE_DIALECT when the simulator options name no dialect', async () => {
    runtime = await startTestRuntime({ simulator: { dialect: undefined }, env: { MARKETPLACE_DIALECT: 'live' } });
    expect(runtime.simulator?.dialect).toBe('live');
    expect(runtime.env.MARKETPLACE_CREATE_INTERVAL_MS).toBe('5000');
  });

  it('tells the relay the spec dialect has no create_order spacing and keeps its currency', async () => {
    runtime = await startTestRuntime({ dialect: 'spec' });
    expect(runtime.simulator?.dialect).toBe('spec');
    expect(runtime.env.MARKETPLACE_CREATE_INTERVAL_MS).toBe('0');
    expect(runtime.env.DEFAULT_CURRENCY).not.toBe('CLORE-Blockchain');
  });
});
