import type { LookupAddress } from 'node:dns';
import { getDefaultAutoSelectFamily, setDefaultAutoSelectFamily } from 'node:net';
import { httpPost } from '../../../lambdas/adapters/http-post';
import { BlockedDestinationError } from '../../../lambdas/domain/errors';
import {
  connectLookup,
  guardedLookup,
  isBlockedDestination,
  refusedLiteralHost,
  type Resolver,
} from '../../../lambdas/adapters/ssrf-guard';
import { startReceiver, type Receiver } from './receiver';

const resolverTo =
  (...addresses: string[]): Resolver =>
  (_host, _opts, cb) =>
    cb(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

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

  it.each([['127.0.0.1'], ['169.254.169.254'], ['::ffff:10.0.0.1'], ['fd00::1']])(
    'refuses a name resolving to %s',
    async (address) => {
      const { error } = await lookupResult(resolverTo(address), false);
      expect(error).toBeInstanceOf(BlockedDestinationError);
    },
  );

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

describe('Function: refusedLiteralHost', () => {
  it.each([['127.0.0.1'], ['[::1]'], ['::1'], ['[::ffff:169.254.169.254]'], ['10.1.2.3']])(
    'refuses the literal %s',
    (host) => {
      expect(refusedLiteralHost(host)).toBeInstanceOf(BlockedDestinationError);
    },
  );

  it('leaves public literals and host names to the connect-time lookup', () => {
    expect(refusedLiteralHost('93.184.216.34')).toBeUndefined();
    expect(refusedLiteralHost('[2606:2800:220:1::1]')).toBeUndefined();
    expect(refusedLiteralHost('localhost')).toBeUndefined(); // a name: judged after DNS
  });
});

describe('Function: connectLookup', () => {
  it("uses Node's own lookup when private addresses are allowed and no resolver is injected", () => {
    expect(connectLookup(true)).toBeUndefined();
    expect(connectLookup(false)).toEqual(expect.any(Function));
  });

  it('maps names through an injected resolver without judging them when private addresses are allowed', async () => {
    const lookup = connectLookup(true, resolverTo('127.0.0.1'));
    const answer = await new Promise<unknown[]>((resolve) => lookup?.('x.example', {}, (...args) => resolve(args)));
    expect(answer).toEqual([null, '127.0.0.1', 4]);
  });
});

describe('Function: httpPost (SSRF guard at connect time)', () => {
  let receiver: Receiver;
  let autoSelect: boolean;
  beforeEach(async () => {
    receiver = await startReceiver();
    autoSelect = getDefaultAutoSelectFamily();
  });
  afterEach(async () => {
    setDefaultAutoSelectFamily(autoSelect);
    await receiver.close();
  });

  const post = (url: string, allowPrivate: boolean, lookup?: Resolver) =>
    httpPost(url, {
      body: '{}',
      timeoutMs: 2_000,
      allowPrivate,
      lookup,
      headers: { 'Content-Type': 'application/json' },
    });

  it.each([['127.0.0.1'], ['[::1]'], ['[::ffff:127.0.0.1]']])(
    'refuses the literal address %s before connecting',
    async (host) => {
      const error = await post(`http://${host}:${receiver.port}/cb`, false).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BlockedDestinationError);
      expect(receiver.requests).toHaveLength(0);
    },
  );

  it('refuses a name whose resolver answers with a private address, even with a public one beside it', async () => {
    const error = await post(
      `http://mixed.example.com:${receiver.port}/cb`,
      false,
      resolverTo('93.184.216.34', '127.0.0.1'),
    ).catch((e: unknown) => e);
    expect(isBlockedDestination(error)).toBe(true);
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses an https name that resolves to loopback before any TLS handshake', async () => {
    const error = await post(`https://secure.example.com:${receiver.port}/cb`, false, resolverTo('127.0.0.1')).catch(
      (e: unknown) => e,
    );
    expect(isBlockedDestination(error)).toBe(true);
    expect(receiver.requests).toHaveLength(0);
  });

  it.each([[true], [false]])(
    'judges the resolved address at connect time (DNS rebinding), autoSelectFamily %s',
    async (autoSelectFamily) => {
      // Prepare: Node asks the lookup for all addresses with autoSelectFamily, for one without
      setDefaultAutoSelectFamily(autoSelectFamily);
      const url = `http://rebind.example.com:${receiver.port}/cb`;
      const resolver = resolverTo('127.0.0.1');
      // Act
      const blocked = await post(url, false, resolver).catch((e: unknown) => e);
      const allowed = await post(url, true, resolver);
      // Assess: same name and resolver; only the guard's verdict differs
      expect(blocked).toBeInstanceOf(BlockedDestinationError);
      expect(allowed.status).toBe(200);
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0].headers.host).toBe(`rebind.example.com:${receiver.port}`);
    },
  );

  it('does not treat ordinary errors as blocked', () => {
    expect(isBlockedDestination(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      false,
    );
    expect(isBlockedDestination(new TypeError('wrapped', { cause: new BlockedDestinationError('x') }))).toBe(true);
  });
});
