import { createServer, type AddressInfo } from 'node:net';
import { hostKeySha256, probeSshLogin } from '../../../lambdas/adapters/ssh-login-probe';
import { SimSshEndpoints } from '../../../local/simulator/ssh-endpoints';

describe('Function: probeSshLogin (READINESS_PROBE=ssh-login, issue 31 §4)', () => {
  let endpoints: SimSshEndpoints;
  let accepting = false;
  beforeAll(() => {
    endpoints = new SimSshEndpoints(
      () => true,
      (_order, password) => accepting && password === 'right1',
    );
  });
  afterAll(() => endpoints.closeAll());

  it('logs in with the right password and reports the host key it saw', async () => {
    // Prepare
    accepting = true;
    const endpoint = await endpoints.open(1);
    // Act
    const result = await probeSshLogin(endpoint, { allowPrivate: true, password: 'right1' });
    // Assess
    expect(result).toMatchObject({
      answered: true,
      host_key_sha256: expect.stringMatching(/^SHA256:[A-Za-z0-9+/]{43}$/),
    });
    expect(endpoints.logins(1).accepted).toBe(1);
  });

  it('is login_refused when the banner answers but the password does not work yet', async () => {
    accepting = false;
    const endpoint = await endpoints.open(2);
    const result = await probeSshLogin(endpoint, { allowPrivate: true, password: 'right1' });
    expect(result).toMatchObject({ answered: false, reason: 'login_refused' });
    expect(endpoints.logins(2).refused).toBeGreaterThanOrEqual(1);
  });

  it('refuses a loopback endpoint under the SSRF guard without connecting', async () => {
    const endpoint = await endpoints.open(3);
    const result = await probeSshLogin(endpoint, { allowPrivate: false, password: 'right1' });
    expect(result).toEqual({ answered: false, reason: 'address_refused' });
    expect(endpoints.connections(3)).toEqual({ answered: 0, reset: 0 });
  });

  it('is not_ssh or reset, never ready, when something other than ssh answers', async () => {
    const server = createServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const result = await probeSshLogin({ host: '127.0.0.1', port }, { allowPrivate: true, password: 'x' });
      expect(result.answered).toBe(false);
    } finally {
      server.close();
    }
  });

  it('prints a fingerprint as ssh-keygen does: SHA256, base64 without padding', () => {
    expect(hostKeySha256(Buffer.from('abc'))).toBe('SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0');
  });
});
