/** DEFAULT_SSH_PUBLIC_KEY (issue 37 §2) is one public key line: a private key never reaches an order. */
import { utils as sshUtils } from 'ssh2';
import { relayEnvSchema } from '../../../lambdas/adapters/env';
import { relayConfig } from '../../../lib/config';

const BASE = { TABLE_NAME: 'relay-test', MARKETPLACE_URL: 'https://marketplace.example' };

describe('Setting: DEFAULT_SSH_PUBLIC_KEY', () => {
  const pair = sshUtils.generateKeyPairSync('ed25519', { comment: 'ops@relay' });

  it('takes a public key line, in the functions and at deploy', () => {
    expect(relayEnvSchema().parse({ ...BASE, DEFAULT_SSH_PUBLIC_KEY: pair.public }).DEFAULT_SSH_PUBLIC_KEY).toBe(
      pair.public,
    );
    expect(
      relayConfig({ marketplaceUrl: 'https://marketplace.example', defaultSshPublicKey: pair.public }),
    ).toMatchObject({
      defaultSshPublicKey: pair.public,
    });
  });

  it.each([
    ['a private key', pair.private],
    ['a PuTTY key file', 'PuTTY-User-Key-File-3: ssh-ed25519'],
    ['a key of no taken type', 'ssh-dss AAAAB3NzaC1kc3M'],
    ['two lines', `${pair.public.trim()}\n${pair.public.trim()}`],
  ])('refuses %s, naming the setting and never the value', (_what, value) => {
    const parsed = relayEnvSchema().safeParse({ ...BASE, DEFAULT_SSH_PUBLIC_KEY: value });
    expect(parsed.success).toBe(false);
    const text = JSON.stringify(parsed.error?.issues.map((i) => i.message));
    expect(text).toContain('DEFAULT_SSH_PUBLIC_KEY must be one OpenSSH public key line');
    expect(text).not.toContain(value.slice(0, 20));
    expect(() => relayConfig({ marketplaceUrl: 'https://marketplace.example', defaultSshPublicKey: value })).toThrow(
      /defaultSshPublicKey must be one OpenSSH public key line/,
    );
  });
});
