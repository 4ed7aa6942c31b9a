/**
 * The relay's own root password of an order (issue 38 §4): keyed by a secret of its own, never by
 * the marketplace API key (which eight functions read, the public summary among them), with the
 * key id of the version it came from so the readiness login uses the same version after a rotation,
 * and the API-key derivation only for an order placed before the switch (no key id).
 */
import { orderSshPassword, relaySshPasswords, sshPasswordKeyId } from '../../../../lambdas/domain/hosts/ssh-password';

const API_KEY = 'marketplace-api-key-0123456789';
const CURRENT = 'ssh-password-secret-current-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ';
const PREVIOUS = 'ssh-password-secret-previous-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH';
const TASK = 'task-4f1c';

describe('Function: relaySshPasswords', () => {
  const passwords = (versions: string[] = [CURRENT]) =>
    relaySshPasswords(
      async () => versions,
      async () => API_KEY,
    );

  it('sends a password derived from its own secret, not HMAC(API key, task id), with the key id of that version', async () => {
    // Act
    const sent = await passwords().forOrder(TASK);
    // Assess
    expect(sent.password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(sent.password).toBe(orderSshPassword(CURRENT, TASK));
    expect(sent.password).not.toBe(orderSshPassword(API_KEY, TASK));
    expect(sent.key_id).toBe(sshPasswordKeyId(CURRENT));
    expect(sent.key_id).toMatch(/^[0-9a-f]{12}$/);
    expect(CURRENT).not.toContain(sent.key_id);
  });

  it('logs in with the version the order was sent, also after a rotation made it AWSPREVIOUS', async () => {
    // Prepare: the order was placed before put-secret-value
    const placedWith = await passwords([PREVIOUS]).forOrder(TASK);
    // Act
    const login = await passwords([CURRENT, PREVIOUS]).forLogin(TASK, placedWith.key_id);
    // Assess
    expect(login).toBe(placedWith.password);
    expect(login).not.toBe(orderSshPassword(CURRENT, TASK));
  });

  it('logs in to an order placed before the relay had its own secret (no key id) with the API-key derivation', async () => {
    await expect(passwords().forLogin(TASK, undefined)).resolves.toBe(orderSshPassword(API_KEY, TASK));
  });

  it('uses the current version for a key id no version has (two rotations within a readiness window)', async () => {
    await expect(passwords([CURRENT, PREVIOUS]).forLogin(TASK, 'ffffffffffff')).resolves.toBe(
      orderSshPassword(CURRENT, TASK),
    );
  });

  it('never reads the API key to send a password', async () => {
    // Prepare
    const legacy = jest.fn(async () => API_KEY);
    // Act
    await relaySshPasswords(async () => [CURRENT], legacy).forOrder(TASK);
    await relaySshPasswords(async () => [CURRENT], legacy).forLogin(TASK, sshPasswordKeyId(CURRENT));
    // Assess
    expect(legacy).not.toHaveBeenCalled();
  });
});
