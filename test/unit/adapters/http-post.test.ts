import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpPost, MAX_RESPONSE_BYTES, type PostOptions } from '../../../lambdas/adapters/http-post';
import { BlockedDestinationError, DeliveryTimeoutError } from '../../../lambdas/domain/errors';
import { startReceiver, type Receiver } from './receiver';

/** A server whose answer a test writes by hand (partial bodies, large bodies). */
const startRawServer = async (answer: (res: ServerResponse) => void) => {
  const closed: Promise<void>[] = [];
  const server: Server = createServer((req, res) => {
    closed.push(new Promise((resolve) => res.on('close', () => resolve())));
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    /** Resolves once every response the server began has been closed (by either side). */
    connectionsClosed: () => Promise.all(closed),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

describe('Function: httpPost', () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => receiver.close());

  const options = (overrides: Partial<PostOptions> = {}): PostOptions => ({
    body: '{"ok":true}',
    timeoutMs: 2_000,
    allowPrivate: true,
    headers: { 'Content-Type': 'application/json', 'X-Extra': 'yes' },
    ...overrides,
  });

  it('POSTs the body with its headers and a Content-Length, and returns status, headers and text', async () => {
    // Prepare
    receiver.reply({ status: 201, body: 'créé', headers: { 'X-Answer': '42' } });
    // Act
    const res = await httpPost(`${receiver.base}/hook?q=1`, options({ body: '{"name":"é"}' }));
    // Assess
    expect(res.status).toBe(201);
    expect(res.headers['x-answer']).toBe('42');
    expect(res.text()).toBe('créé');
    const [req] = receiver.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/hook?q=1');
    expect(req.body).toBe('{"name":"é"}');
    expect(req.headers['content-length']).toBe(String(Buffer.byteLength('{"name":"é"}')));
    expect(req.headers['transfer-encoding']).toBeUndefined();
    expect(req.headers['x-extra']).toBe('yes');
  });

  it('returns a redirect as-is without following it', async () => {
    receiver.reply({ status: 307, headers: { Location: `${receiver.base}/elsewhere` } });
    const res = await httpPost(`${receiver.base}/hook`, options());
    expect(res.status).toBe(307);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook']);
  });

  it('rejects with DeliveryTimeoutError when no response arrives in time', async () => {
    receiver.reply('hold');
    const error = await httpPost(`${receiver.base}/hook`, options({ timeoutMs: 100 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryTimeoutError);
  });

  it('counts the body in the timeout and destroys the stalled connection', async () => {
    // Prepare: headers and the start of a body, then nothing
    const server = await startRawServer((res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial');
    });
    try {
      // Act
      const error = await httpPost(server.url, options({ timeoutMs: 150 })).catch((e: unknown) => e);
      // Assess: the rejection, and the server sees its connection closed by the client
      expect(error).toBeInstanceOf(DeliveryTimeoutError);
      await server.connectionsClosed();
    } finally {
      await server.close();
    }
  });

  it('keeps at most MAX_RESPONSE_BYTES of the body and discards the rest', async () => {
    const server = await startRawServer((res) => {
      res.writeHead(500);
      res.end('x'.repeat(MAX_RESPONSE_BYTES * 3));
    });
    try {
      const res = await httpPost(server.url, options());
      expect(res.status).toBe(500);
      expect(res.text()).toHaveLength(MAX_RESPONSE_BYTES);
    } finally {
      await server.close();
    }
  });

  it('honours a smaller maxResponseBytes', async () => {
    receiver.reply({ status: 429, body: '0123456789' });
    const res = await httpPost(`${receiver.base}/hook`, options({ maxResponseBytes: 4 }));
    expect(res.text()).toBe('0123');
  });

  it.each([['file:///etc/passwd'], ['ftp://example.com/x'], ['not a url']])(
    'refuses %s even when private addresses are allowed',
    async (url) => {
      await expect(httpPost(url, options())).rejects.toBeInstanceOf(BlockedDestinationError);
    },
  );

  it('rejects with the socket error code when nothing listens', async () => {
    const closed = await startReceiver();
    await closed.close();
    const error = await httpPost(`${closed.base}/hook`, options()).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });

  it('rejects an invalid header value instead of throwing synchronously', async () => {
    await expect(
      httpPost(`${receiver.base}/hook`, options({ headers: { 'X-Bad': 'a\r\nInjected: 1' } })),
    ).rejects.toThrow();
    expect(receiver.requests).toHaveLength(0);
  });
});
