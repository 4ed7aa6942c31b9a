/** The ssh readiness probe against real sockets on loopback (issue 20 item 6). */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { probeSshBanner, SSH_PROBE_TIMEOUT_MS, sshProbeFromEnv } from '../../../lambdas/adapters/ssh-banner-probe';
import type { Resolver } from '../../../lambdas/adapters/ssrf-guard';

interface TcpServer {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Resolves when every accepted connection has closed (the probe must close its socket). */
  readonly allClosed: () => Promise<void>;
  readonly close: () => Promise<void>;
}

/** A loopback TCP server that hands each connection to `onConnection`. */
const startTcp = async (onConnection: (socket: Socket) => void): Promise<TcpServer> => {
  const sockets = new Set<Socket>();
  const closed: Promise<void>[] = [];
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    allClosed: async () => {
      await Promise.all(closed);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
};

/** A port nothing listens on: listened on, then closed. */
const freePort = async (): Promise<number> => {
  const server = await startTcp(() => undefined);
  await server.close();
  return server.port;
};

const resolverTo =
  (address: string): Resolver =>
  (_host, _opts, cb) =>
    cb(null, [{ address, family: 4 }]);

const LOCAL = { allowPrivate: true, timeoutMs: 1_000 } as const;

describe('Function: probeSshBanner', () => {
  const servers: TcpServer[] = [];
  const serve = async (onConnection: (socket: Socket) => void) => {
    const server = await startTcp(onConnection);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('answers with the banner line when the endpoint sends SSH-, and closes its socket', async () => {
    // Prepare: an ssh server speaks first and then waits for the client's identification
    const server = await serve((socket) => socket.write('SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n'));
    // Act
    const result = await probeSshBanner({ host: '127.0.0.1', port: server.port }, LOCAL);
    // Assess
    expect(result).toEqual({ answered: true, banner: 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13' });
    await server.allClosed();
    expect(server.accepted()).toBe(1);
  });

  it('reads a banner that arrives in pieces', async () => {
    const server = await serve((socket) => {
      socket.write('SS');
      setImmediate(() => socket.write('H-2.0-dropbear\r\n'));
    });
    expect(await probeSshBanner({ host: '127.0.0.1', port: server.port }, LOCAL)).toEqual({
      answered: true,
      banner: 'SSH-2.0-dropbear',
    });
  });

  it('fails as refused when nothing listens', async () => {
    const port = await freePort();
    expect(await probeSshBanner({ host: '127.0.0.1', port }, LOCAL)).toEqual({
      answered: false,
      reason: 'refused',
      detail: 'ECONNREFUSED',
    });
  });

  it('fails as timeout when the server accepts but never speaks', async () => {
    // Prepare
    const server = await serve(() => undefined);
    // Act
    const result = await probeSshBanner(
      { host: '127.0.0.1', port: server.port },
      { allowPrivate: true, timeoutMs: 150 },
    );
    // Assess
    expect(result).toMatchObject({ answered: false, reason: 'timeout' });
    await server.allClosed();
  });

  it.each([
    ['an HTTP answer', 'HTTP/1.1 400 Bad Request\r\n\r\n'],
    ['an SMTP greeting', '220 mail.example.com ESMTP\r\n'],
    ['lower-case ssh-', 'ssh-2.0-x\r\n'],
  ])('fails as not_ssh when the first bytes are %s', async (_name, bytes) => {
    const server = await serve((socket) => socket.write(bytes));
    expect(await probeSshBanner({ host: '127.0.0.1', port: server.port }, LOCAL)).toEqual({
      answered: false,
      reason: 'not_ssh',
    });
  });

  it('fails as reset when the server closes (or resets) before any banner', async () => {
    const ended = await serve((socket) => socket.end());
    const reset = await serve((socket) => socket.resetAndDestroy());
    expect(await probeSshBanner({ host: '127.0.0.1', port: ended.port }, LOCAL)).toMatchObject({
      answered: false,
      reason: 'reset',
    });
    expect(await probeSshBanner({ host: '127.0.0.1', port: reset.port }, LOCAL)).toMatchObject({
      answered: false,
      reason: 'reset',
    });
  });

  describe('deployed (private addresses refused, as for callbacks)', () => {
    it.each([['127.0.0.1'], ['[::1]'], ['169.254.169.254'], ['10.0.0.8']])(
      'refuses the literal %s without connecting',
      async (host) => {
        const server = await serve((socket) => socket.write('SSH-2.0-x\r\n'));
        const result = await probeSshBanner({ host, port: server.port }, { allowPrivate: false, timeoutMs: 1_000 });
        expect(result).toEqual({ answered: false, reason: 'address_refused' });
        expect(server.accepted()).toBe(0);
      },
    );

    it('refuses a name that resolves to loopback, where the local runtime reaches the same server', async () => {
      // Prepare
      const server = await serve((socket) => socket.write('SSH-2.0-x\r\n'));
      const endpoint = { host: 'n7.hosts.example', port: server.port };
      const resolver = resolverTo('127.0.0.1');
      // Act
      const deployed = await probeSshBanner(endpoint, { allowPrivate: false, timeoutMs: 1_000, resolver });
      const local = await probeSshBanner(endpoint, { allowPrivate: true, timeoutMs: 1_000, resolver });
      // Assess
      expect(deployed).toEqual({ answered: false, reason: 'address_refused' });
      expect(local).toEqual({ answered: true, banner: 'SSH-2.0-x' });
      expect(server.accepted()).toBe(1);
    });
  });

  it('fails as unreachable when the name does not resolve', async () => {
    const failing: Resolver = (_h, _o, cb) => cb(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }), []);
    expect(
      await probeSshBanner({ host: 'nowhere.example', port: 22 }, { allowPrivate: false, resolver: failing }),
    ).toEqual({ answered: false, reason: 'unreachable', detail: 'ENOTFOUND' });
  });

  it('follows ALLOW_PRIVATE_SSH_PROBE, never ALLOW_PRIVATE_CALLBACKS (issue 29 §7)', async () => {
    const server = await serve((socket) => socket.write('SSH-2.0-OpenSSH_9.6\r\n'));
    const endpoint = { host: '127.0.0.1', port: server.port };
    // The callbacks' setting is not even part of what the probe reads: only its own decides.
    const refused = await sshProbeFromEnv({ READINESS_PROBE: 'ssh', ALLOW_PRIVATE_SSH_PROBE: false })!.probe(endpoint);
    expect(refused).toMatchObject({ answered: false, reason: 'address_refused' });
    expect(server.accepted()).toBe(0);
    const allowed = await sshProbeFromEnv({ READINESS_PROBE: 'ssh', ALLOW_PRIVATE_SSH_PROBE: true })!.probe(endpoint);
    expect(allowed).toMatchObject({ answered: true });
    expect(sshProbeFromEnv({ READINESS_PROBE: 'none', ALLOW_PRIVATE_SSH_PROBE: true })).toBeUndefined();
  });

  it('has a short default timeout, well under the 5 s poll interval', () => {
    expect(SSH_PROBE_TIMEOUT_MS).toBeLessThanOrEqual(3_000);
  });
});
