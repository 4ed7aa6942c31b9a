/**
 * Fixtures of the access tests (issue 37): key lines, a private key whose body must never be printed,
 * a create-order task record with `access`, and a home folder with a fake ssh that records its argv.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export const PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBTl7dbS9+AEGVA3bLCHsDmXK96ZNLa7tkNlbNKFzaMc me@laptop';
export const RSA_PUBLIC_KEY = `ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ${'C'.repeat(300)} me@desk`;
export const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILjLWlzPTIWEK6TbYQetlsRrAGGBiy5w1b0HwdBtgVqV';
export const OTHER_HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDifferentHostKeyDifferentHostKeyDiffer0';

/** The body line of a private key file; a test fails if any output contains it. */
export const PRIVATE_KEY_BODY = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW';
export const PRIVATE_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${PRIVATE_KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n`;
export const PUTTY_KEY = `PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n${PRIVATE_KEY_BODY}\n`;

export const TASK_ID = '6f1c0b1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f';

/** A finished create-order task record whose result says how to log in (the contract's shape). */
export const taskRecord = (ssh: Record<string, unknown> | undefined, orderId = 4242) => ({
  task_id: TASK_ID,
  kind: 'create-order',
  state: 'succeeded',
  result: {
    success: true,
    order_id: orderId,
    server_id: 9,
    status: 'running',
    ssh_connection: 'ssh root@n1.example -p 1277',
    gpu: ['RTX 4090'],
    price_usd: 0.4,
    ...(ssh === undefined ? {} : { access: { ssh } }),
  },
});

export const ACCESS_SSH = {
  host: 'n1.example',
  port: 1277,
  user: 'root',
  command: 'ssh -p 1277 root@n1.example',
  host_key: HOST_KEY,
  known_hosts: `[n1.example]:1277 ${HOST_KEY}`,
};

export interface TestHome {
  readonly home: string;
  /** The fake ssh: writes its arguments, one a line, to `argsFile`, and exits 7. */
  readonly ssh: string;
  readonly argsFile: string;
  readonly knownHosts: string;
  readonly env: Record<string, string>;
  /** Writes `text` to `name` under the home folder (folders made); returns the path. */
  write(name: string, text: string): string;
}

export const makeHome = (): TestHome => {
  const home = mkdtempSync(path.join(tmpdir(), 'gpu-relay-access-'));
  const argsFile = path.join(home, 'ssh-args.txt');
  const ssh = path.join(home, 'fake-ssh');
  writeFileSync(ssh, `#!/bin/sh\nprintf '%s\\n' "$@" > '${argsFile}'\nexit 7\n`);
  chmodSync(ssh, 0o755);
  const write = (name: string, text: string): string => {
    const file = path.join(home, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  };
  return {
    home,
    ssh,
    argsFile,
    knownHosts: path.join(home, '.config', 'gpu-relay', 'known_hosts'),
    env: { HOME: home, GPU_RELAY_SSH: ssh },
    write,
  };
};
