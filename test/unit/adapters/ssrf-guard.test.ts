import type { LookupAddress } from 'node:dns';
import { fetch } from 'undici';
import { BlockedDestinationError, guardedDispatcher, guardedLookup, isBlockedDestination, type Resolver } from '../../../lambdas/adapters/ssrf-guard';
import { startReceiver, type Receiver } from './receiver';

const resolverTo = (...addresses: string[]): Resolver => (_host, _opts, cb) =>
  cb(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

const lookupResult = (resolver: Resolver, all: boolean) =>
  new Promise<{ error: unknown; address: unknown; family?: number }>((resolve) =>
    guardedLookup(resolver)('host.example', { all }, (error, address, family) => resolve({ error, address, family })),
  );

describe('Function: guardedLookup', () => {
  it('passes public addresses through, in both lookup forms', async () => {
    const resolver = resolverTo('93.184.216.34', '2606:2800:220:1::1');
    expect(await lookupResult(resolver, false)).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    const all = await lookupResult(resolver, true);
    expect((all.address as LookupAddress[]).map((a) => a.address)).toEqual(['93.184.216.34', '2606:2800:220:1::1']);
  });

  it.each([['127.0.0.1'], ['169.254.169.254'], ['::ffff:10.0.0.1'], ['fd00::1']])('refuses a name resolving to %s', async (address) => {
    const { error } = await lookupResult(resolverTo(address), false);
    expect(error).toBeInstanceOf(BlockedDestinationError);
  });

  it('refuses when any one of several answers is private (mixed DNS answers)', async () => {
    const { error } = await lookupResult(resolverTo('93.184.216.34', '10.0.0.7'), true);
    expect(error).toBeInstanceOf(BlockedDestinationError);
  });

  it('passes resolver errors on', async () => {
    const failing: Resolver = (_h, _o, cb) => cb(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }), []);
    const { error } = await lookupResult(failing, false);
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});

describe('Function: guardedDispatcher', () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => receiver.close());

  const post = (url: string, dispatcher: ReturnType<typeof guardedDispatcher>) =>
    fetch(url, { method: 'POST', body: '{}', dispatcher, redirect: 'manual' });

  it('refuses a literal loopback address before connecting', async () => {
    const dispatcher = guardedDispatcher(false);
    const error = await post(`${receiver.base}/cb`, dispatcher).catch((e: unknown) => e);
    expect(isBlockedDestination(error)).toBe(true);
    expect(receiver.requests).toHaveLength(0);
    await dispatcher.close();
  });

  it('refuses a literal IPv6 loopback address', async () => {
    const dispatcher = guardedDispatcher(false);
    const error = await post(`http://[::1]:${receiver.port}/cb`, dispatcher).catch((e: unknown) => e);
    expect(isBlockedDestination(error)).toBe(true);
    await dispatcher.close();
  });

  it('judges the resolved address at connect time (DNS rebinding)', async () => {
    // Prepare: the name resolves to the local receiver
    const guarded = guardedDispatcher(false, { lookup: resolverTo('127.0.0.1') });
    const open = guardedDispatcher(true, { lookup: resolverTo('127.0.0.1') });
    const url = `http://rebind.example.com:${receiver.port}/cb`;
    // Act
    const blocked = await post(url, guarded).catch((e: unknown) => e);
    const allowed = await post(url, open);
    // Assess: same name and resolver; only the guard's verdict differs
    expect(isBlockedDestination(blocked)).toBe(true);
    expect(allowed.status).toBe(200);
    expect(receiver.requests).toHaveLength(1);
    await Promise.all([guarded.close(), open.close()]);
  });

  it('does not treat ordinary errors as blocked', () => {
    expect(isBlockedDestination(new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') }))).toBe(false);
    expect(isBlockedDestination(new TypeError('fetch failed', { cause: new BlockedDestinationError('x') }))).toBe(true);
  });
});
