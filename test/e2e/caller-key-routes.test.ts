/**
 * Every signed POST route accepts a request signed with a caller key (issue 24) under the local
 * IAM checks (issue 30): each route's function looks the key up in the caller-key item (`KEYS#all`)
 * with its own role. Before this file no e2e test sent a key-signed request to extend-order,
 * set-spot-price, cancel-task or price-alert, so their caller-key grant was proven nowhere. The
 * bodies are invalid on purpose: a 400 shows the signature passed and nothing was queued (an unknown
 * field is refused on every signed route since issue 29 §1, status included).
 */
import { ROUTES } from '../../contract/routes';
import { startTestRuntime, TEST_WEBHOOK_SECRET } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { signedPost } from '../helpers/receivers';

const SIGNED_POSTS = ROUTES.filter((route) => route.signed && route.method === 'POST' && !route.path.includes('{'));

describe('Local runtime: caller-key signatures on every signed POST route', () => {
  let runtime: LocalRuntime;
  let secret = '';

  beforeAll(async () => {
    runtime = await startTestRuntime({ dialect: 'spec' });
    const res = await signedPost(
      runtime.url,
      '/admin/keys',
      { name: 'every-route', scopes: ['order', 'cancel', 'read'] },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(201);
    secret = String(res.json?.secret);
  });
  afterAll(async () => {
    await runtime?.close();
  });

  it.each(SIGNED_POSTS.filter((route) => !route.path.startsWith('/admin')).map((route) => [route.path]))(
    '%s verifies a key-signed request (never 401 or 5xx)',
    async (path) => {
      // Act
      const res = await signedPost(runtime.url, path, { not_a_field: true }, secret, {
        'x-webhook-key-id': 'every-route',
      });

      // Assert: past the signature, the body is refused (status takes no fields: the unknown one is named)
      if (path === '/webhook/status')
        expect(res).toMatchObject({ status: 400, json: { error: 'unknown field not_a_field' } });
      else expect(res).toMatchObject({ status: 400, json: { error: expect.any(String) } });
    },
  );
});
