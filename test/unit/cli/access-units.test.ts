/**
 * The pure parts of the CLI's access commands (issue 37 §5): known_hosts names and pinning, the ssh
 * argv, the Host block, --port parsing and private-key detection.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parsePorts } from '../../../cli/access-flags';
import { HostKeyChangedError, fingerprintOf, knownHostsName, parseHostKey, pinHostKey } from '../../../cli/known-hosts';
import { sshArgv, sshConfigBlock, sshTargetOf } from '../../../cli/ssh-commands';
import { looksLikePrivateKey } from '../../../cli/ssh-key-file';
import {
  ACCESS_SSH,
  HOST_KEY,
  OTHER_HOST_KEY,
  PRIVATE_KEY,
  PUBLIC_KEY,
  PUTTY_KEY,
  taskRecord,
} from './access-fixtures';

describe('CLI access: known_hosts', () => {
  let dir: string;
  let file: string;
  const key = parseHostKey(HOST_KEY)!;
  const other = parseHostKey(OTHER_HOST_KEY)!;

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-kh-'));
    file = path.join(dir, 'sub', 'known_hosts');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names a key by its SHA-256 fingerprint, as ssh-keygen -l does', () => {
    // ssh-keygen -lf on the fixture's host key prints this fingerprint.
    expect(fingerprintOf(key)).toBe('SHA256:ELVYv/wINBQzck+Ox7FWYDzCt799b8QZqdodRdum8a8');
  });

  it('names port 22 by the bare host and any other port as [host]:port', () => {
    expect(knownHostsName('n1.example', 22)).toBe('n1.example');
    expect(knownHostsName('n1.example', 1277)).toBe('[n1.example]:1277');
  });

  it('adds, keeps, refuses a changed key without touching the file, and replaces on request', () => {
    expect(pinHostKey(file, 'n1.example', 1277, key)).toBe('added');
    expect(pinHostKey(file, 'n1.example', 1277, key)).toBe('already pinned');
    expect(pinHostKey(file, 'n1.example', 22, other)).toBe('added');
    const before = readFileSync(file, 'utf8');
    expect(before).toBe(`[n1.example]:1277 ${HOST_KEY}\nn1.example ${OTHER_HOST_KEY}\n`);

    expect(() => pinHostKey(file, 'n1.example', 1277, other)).toThrow(HostKeyChangedError);
    expect(readFileSync(file, 'utf8')).toBe(before);

    expect(pinHostKey(file, 'n1.example', 1277, other, { replace: true })).toBe('replaced');
    expect(readFileSync(file, 'utf8')).toBe(`n1.example ${OTHER_HOST_KEY}\n[n1.example]:1277 ${OTHER_HOST_KEY}\n`);
  });

  it('finds the host among comma-separated patterns and keeps comments and other hosts', () => {
    writeFileSync(file.replace('sub/', ''), `# mine\nalias,[n1.example]:1277 ${OTHER_HOST_KEY}\n`);
    const flat = file.replace('sub/', '');
    expect(() => pinHostKey(flat, 'n1.example', 1277, key)).toThrow(/HOST KEY CHANGED for \[n1\.example\]:1277/);
    pinHostKey(flat, 'n1.example', 1277, key, { replace: true });
    expect(readFileSync(flat, 'utf8')).toBe(`# mine\n[n1.example]:1277 ${HOST_KEY}\n`);
  });
});

describe('CLI access: the login', () => {
  const target = { host: 'n1.example', port: 1277, user: 'root' };

  it('builds the pinned ssh argv, with -i and IdentitiesOnly only when an identity is given', () => {
    expect(sshArgv(target, '/k/known_hosts')).toEqual([
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'UserKnownHostsFile=/k/known_hosts',
      '-p',
      '1277',
      'root@n1.example',
    ]);
    expect(sshArgv(target, '/k/kh', { identity: '/me/id', remote: ['nvidia-smi'] })).toEqual([
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'UserKnownHostsFile=/k/kh',
      '-p',
      '1277',
      '-i',
      '/me/id',
      '-o',
      'IdentitiesOnly=yes',
      'root@n1.example',
      'nvidia-smi',
    ]);
  });

  it('prints the Host block, quoting a path with a space', () => {
    expect(sshConfigBlock('gpu-7', target, '/my home/known_hosts', '/me/id')).toBe(
      [
        'Host gpu-7',
        '  HostName n1.example',
        '  Port 1277',
        '  User root',
        '  UserKnownHostsFile "/my home/known_hosts"',
        '  StrictHostKeyChecking yes',
        '  IdentityFile /me/id',
        '  IdentitiesOnly yes',
      ].join('\n'),
    );
  });

  it('reads the target from the result, the host key from host_key', () => {
    expect(sshTargetOf('ssh', 't', taskRecord(ACCESS_SSH))).toEqual({
      orderId: 4242,
      host: 'n1.example',
      port: 1277,
      user: 'root',
      hostKey: parseHostKey(HOST_KEY),
    });
  });
});

describe('CLI access: flags', () => {
  it('parses --port values, repeated and comma-separated, protocol case-insensitive', () => {
    expect(parsePorts('create-order', ['8000:http', '22:TCP,8888:http'])).toEqual({
      '8000': 'http',
      '22': 'tcp',
      '8888': 'http',
    });
    expect(parsePorts('create-order', ['8000:http', '8000:http'])).toEqual({ '8000': 'http' });
    expect(() => parsePorts('create-order', ['8000/tcp'])).toThrow(/--port takes PORT:PROTO/);
  });

  it('tells a private key from a public one', () => {
    expect(looksLikePrivateKey(PRIVATE_KEY)).toBe(true);
    expect(looksLikePrivateKey(PUTTY_KEY)).toBe(true);
    expect(looksLikePrivateKey('-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n')).toBe(true);
    expect(looksLikePrivateKey(`${PUBLIC_KEY}\n`)).toBe(false);
  });
});
