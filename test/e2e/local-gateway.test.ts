/**
 * The local API Gateway emulation over real HTTP, with recording handlers: the event it builds
 * (payload format 2.0) and how it writes results and failures back.
 */
import { connect } from 'node:net';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { startApiGateway } from '../../local/api-gateway';
import type { LambdaHandler, LocalApiGateway } from '../../local/api-gateway';
import type { RouteDefinition } from '../../contract/routes';
import { request } from '../helpers/receivers';

const route = (method: 'GET' | 'POST', path: string, id: string): RouteDefinition => ({
  method,
  path,
  id,
  entry: `lambdas/handlers/api/${id}.ts`,
  signed: false,
  rateLimited: false,
  permissions: [],
});

describe('Function: startApiGateway', () => {
  const routes = [
    route('POST', '/echo', 'echo'),
    route('GET', '/tasks/{task_id}', 'task'),
    route('GET', '/boom', 'boom'),
    route('GET', '/binary', 'binary'),
  ];
  const calls: { event: APIGatewayProxyEventV2; context: Context }[] = [];
  const handlers: Record<string, LambdaHandler> = {
    echo: async (event, context) => {
      calls.push({ event: event as APIGatewayProxyEventV2, context });
      return { statusCode: 202, headers: { 'X-Custom': 'yes' }, body: JSON.stringify({ ok: true }) };
    },
    task: async (event, context) => {
      calls.push({ event: event as APIGatewayProxyEventV2, context });
      return { task: (event as APIGatewayProxyEventV2).pathParameters?.task_id };
    },
    boom: async () => {
      throw new Error('secret-internal-detail');
    },
    binary: async () => ({
      statusCode: 200,
      headers: { 'content-type': 'text/plain' },
      body: Buffer.from('héllo').toString('base64'),
      isBase64Encoded: true,
    }),
  };
  let api: LocalApiGateway;
  const logged: string[] = [];

  beforeAll(async () => {
    api = await startApiGateway({
      routes,
      loadHandler: async (r) => handlers[r.id],
      maxBodyBytes: 1024,
      log: (_level, message, fields) => logged.push(`${message} ${JSON.stringify(fields ?? {})}`),
    });
  });
  afterAll(async () => api.close());
  beforeEach(() => {
    calls.length = 0;
  });

  it('builds a version 2.0 event with lower-cased headers, the raw query and the socket address', async () => {
    // Act
    const res = await request(`${api.url}/echo?a=1&a=2&b=x`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Webhook-Signature': 'abc', 'X-Forwarded-For': '203.0.113.9' },
      body: '{"gpu_type":"RTX"}',
    });
    // Assess
    expect(res.status).toBe(202);
    expect(res.headers.get('x-custom')).toBe('yes');
    expect(res.json).toEqual({ ok: true });
    const { event, context } = calls[0];
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /echo',
      rawPath: '/echo',
      rawQueryString: 'a=1&a=2&b=x',
      queryStringParameters: { a: '1,2', b: 'x' },
      body: '{"gpu_type":"RTX"}',
      isBase64Encoded: false,
      requestContext: {
        http: { method: 'POST', path: '/echo', sourceIp: '127.0.0.1' },
        routeKey: 'POST /echo',
        stage: '$default',
      },
    });
    expect(event.headers['x-webhook-signature']).toBe('abc');
    expect(event.headers['content-type']).toBe('application/json');
    expect(context.awsRequestId).toBe(event.requestContext.requestId);
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
  });

  it('base64-encodes form bodies as API Gateway does', async () => {
    // Act
    await request(`${api.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'text=rent+RTX+0.5',
    });
    // Assess
    const { event } = calls[0];
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body ?? '', 'base64').toString('utf8')).toBe('text=rent+RTX+0.5');
  });

  it('fills pathParameters from {param} segments and wraps a plain result as a 200 JSON body', async () => {
    // Act
    const res = await request(`${api.url}/tasks/abc%20def`);
    // Assess
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ task: 'abc def' });
    expect(calls[0].event.routeKey).toBe('GET /tasks/{task_id}');
    expect(calls[0].event.body).toBeUndefined();
  });

  it('decodes a base64 result body', async () => {
    // Act
    const res = await request(`${api.url}/binary`);
    // Assess
    expect(res.text).toBe('héllo');
  });

  it('answers 404 for an unknown path and 405 for a known path with another method', async () => {
    // Act
    const unknown = await request(`${api.url}/nope`);
    const wrongMethod = await request(`${api.url}/echo`);
    const tooDeep = await request(`${api.url}/tasks/a/b`);
    // Assess
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ error: 'Not found' });
    expect(tooDeep.status).toBe(404);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect(calls).toHaveLength(0);
  });

  it('answers 500 without the error text when a handler throws, and logs it', async () => {
    // Act
    const res = await request(`${api.url}/boom`);
    // Assess
    expect(res.status).toBe(500);
    expect(res.json).toEqual({ error: 'Internal error' });
    expect(res.text).not.toContain('secret-internal-detail');
    expect(logged.some((line) => line.includes('handler threw') && line.includes('secret-internal-detail'))).toBe(true);
  });

  it('answers 413 for a body over the gateway cap without calling the handler', async () => {
    // Act
    const res = await request(`${api.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(2048),
    });
    // Assess
    expect(res.status).toBe(413);
    expect(calls).toHaveLength(0);
  });

  it('survives a malformed request and keeps serving', async () => {
    // Act
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(api.port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    const after = await request(`${api.url}/tasks/1`);
    // Assess
    expect(reply).toContain('400');
    expect(after.status).toBe(200);
  });
});
