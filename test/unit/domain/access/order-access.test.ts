/** The access rules (issue 37): public key lines, private keys, ports, tokens and the access block. */
import { generateKeyPairSync } from 'node:crypto';
import { utils as sshUtils } from 'ssh2';
import {
  knownHostsHost,
  looksLikePrivateKey,
  orderAccess,
  orderPorts,
  parseSshPublicKey,
  portsProblem,
  PORTS_ERROR,
  PRIVATE_KEY_ERROR,
  SSH_PUBLIC_KEY_ERROR,
  tokenFromBytes,
  withJupyterToken,
} from '../../../../lambdas/domain/access/order-access';

/** An ssh-rsa public key line of `bits` bits (node's RSA key, written in SSH wire format). */
const rsaLine = (bits: number): string => {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const jwk = publicKey.export({ format: 'jwk' }) as { n: string; e: string };
  const mpint = (b64url: string): Buffer => {
    const raw = Buffer.from(b64url, 'base64url');
    return raw[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), raw]) : raw;
  };
  const field = (b: Buffer): Buffer =>
    Buffer.concat([Buffer.from([0, 0, 0, 0].map((_, i) => (b.length >> (24 - 8 * i)) & 0xff)), b]);
  const blob = Buffer.concat([field(Buffer.from('ssh-rsa')), field(mpint(jwk.e)), field(mpint(jwk.n))]);
  return `ssh-rsa ${blob.toString('base64')} me@laptop`;
};

describe('Function: parseSshPublicKey', () => {
  it('takes an ed25519 line with its comment and names its fingerprint as OpenSSH does', () => {
    const line = sshUtils.generateKeyPairSync('ed25519', { comment: 'me@laptop' }).public.trim();
    const parsed = parseSshPublicKey(`  ${line}\n`);
    expect(parsed).toMatchObject({ ok: true, value: { type: 'ssh-ed25519' } });
    if (parsed.ok) {
      expect(parsed.value.line).toBe(line.split(' ').slice(0, 2).join(' '));
      expect(parsed.value.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    }
  });

  it.each(['nistp256', 'nistp384', 'nistp521'])('takes an ecdsa-sha2-%s line', (curve) => {
    const bits = ({ nistp256: 256, nistp384: 384, nistp521: 521 } as const)[curve as 'nistp256']!;
    const line = sshUtils.generateKeyPairSync('ecdsa', { bits }).public;
    expect(parseSshPublicKey(line)).toMatchObject({ ok: true, value: { type: `ecdsa-sha2-${curve}` } });
  });

  it('takes ssh-rsa of 2048 bits and refuses 1024', () => {
    expect(parseSshPublicKey(rsaLine(2048))).toMatchObject({ ok: true, value: { type: 'ssh-rsa' } });
    expect(parseSshPublicKey(rsaLine(1024))).toEqual({ ok: false, error: SSH_PUBLIC_KEY_ERROR });
  });

  it('refuses a line whose blob names another type, two lines, a longer line, and no key', () => {
    const ed = sshUtils.generateKeyPairSync('ed25519').public.trim();
    const blob = ed.split(' ')[1];
    for (const bad of [`ssh-rsa ${blob}`, `${ed}\n${ed}`, `${ed} ${'x'.repeat(3072)}`, 'ssh-ed25519', '', 42])
      expect(parseSshPublicKey(bad)).toEqual({ ok: false, error: SSH_PUBLIC_KEY_ERROR });
  });

  it('calls a pasted private key by its name, never echoing it', () => {
    const { private: pem } = sshUtils.generateKeyPairSync('ed25519');
    expect(looksLikePrivateKey(pem)).toBe(true);
    expect(parseSshPublicKey(pem)).toEqual({ ok: false, error: PRIVATE_KEY_ERROR });
    expect(parseSshPublicKey('PuTTY-User-Key-File-3: ssh-ed25519')).toEqual({ ok: false, error: PRIVATE_KEY_ERROR });
    expect(PRIVATE_KEY_ERROR).not.toContain('BEGIN');
  });
});

describe('Function: ports and tokens', () => {
  it('checks a port map: at most 16 ports, 1-65535, tcp or http', () => {
    expect(portsProblem({ '22': 'tcp', '8888': 'http' })).toBeUndefined();
    for (const bad of [{ '0': 'tcp' }, { '65536': 'tcp' }, { '022': 'tcp' }, { '22': 'udp' }, { ssh: 'tcp' }])
      expect(portsProblem(bad)).toBe(PORTS_ERROR);
    expect(portsProblem(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [String(1000 + i), 'tcp'])))).toBe(
      PORTS_ERROR,
    );
  });

  it('adds 22 when an SSH credential is given, and keeps the request ports otherwise', () => {
    const defaults = { '22': 'tcp', '8888': 'http' } as const;
    expect(orderPorts({ '8000': 'http' }, defaults, true)).toEqual({ '8000': 'http', '22': 'tcp' });
    expect(orderPorts({ '8000': 'http' }, defaults, false)).toEqual({ '8000': 'http' });
    expect(orderPorts(undefined, defaults, true)).toBe(defaults);
  });

  it('draws tokens of letters and digits only', () => {
    const token = tokenFromBytes(Buffer.from(Array.from({ length: 32 }, (_, i) => i * 8)));
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(() => tokenFromBytes(Buffer.alloc(3))).toThrow();
  });
});

describe('Function: orderAccess', () => {
  it('builds the ssh block with the pinned line, http ports and the notebook of 8888', () => {
    const access = orderAccess({
      ssh: { host: 'n1.example', port: 1277 },
      hostKey: 'ssh-ed25519 AAAA',
      http: { '8888': 'https://o1.example', '8000': 'https://o2.example' },
    });
    expect(access).toEqual({
      ssh: {
        host: 'n1.example',
        port: 1277,
        user: 'root',
        command: 'ssh -p 1277 root@n1.example',
        host_key: 'ssh-ed25519 AAAA',
        known_hosts: '[n1.example]:1277 ssh-ed25519 AAAA',
      },
      http: { '8888': 'https://o1.example', '8000': 'https://o2.example' },
      jupyter: { url: 'https://o1.example' },
    });
    expect(withJupyterToken(access, 'tok')?.jupyter).toEqual({ url: 'https://o1.example', token: 'tok' });
  });

  it('names port 22 bare in known_hosts and gives a token no block when no http port is mapped', () => {
    expect(knownHostsHost('n1.example', 22)).toBe('n1.example');
    const access = orderAccess({ ssh: { host: 'n1.example', port: 22 } });
    expect(access?.jupyter).toBeUndefined();
    expect(withJupyterToken(access, 'tok')).toBe(access);
    expect(orderAccess({})).toBeUndefined();
  });
});
