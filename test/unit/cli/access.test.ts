/**
 * Issue 37 §5 and the CLI half of §2: create-order's access flags, `gpu-relay ssh` (pinned, through a
 * fake ssh named by GPU_RELAY_SSH), `gpu-relay ssh-config` and `keys ssh-key`, run as users run them.
 */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { signatureV2 } from '../../../lambdas/domain/signing';
import {
  ACCESS_SSH,
  HOST_KEY,
  OTHER_HOST_KEY,
  PRIVATE_KEY,
  PRIVATE_KEY_BODY,
  PUBLIC_KEY,
  PUTTY_KEY,
  RSA_PUBLIC_KEY,
  TASK_ID,
  makeHome,
  taskRecord,
} from './access-fixtures';
import type { TestHome } from './access-fixtures';
import { runCli } from './run-cli';
import type { FakeRelay, RecordedRequest } from './run-cli';
import { startFakeRelay } from './run-cli';

const SECRET = 'unit-secret-access-91c2';
const bodyOf = (req: RecordedRequest): Record<string, unknown> => JSON.parse(req.body.toString('utf8'));

describe('CLI: access to the rented server (issue 37)', () => {
  let relay: FakeRelay;
  let home: TestHome;
  const env = (extra: Record<string, string> = {}) => ({
    GPU_RELAY_URL: relay.url,
    GPU_RELAY_SECRET: SECRET,
    ...home.env,
    ...extra,
  });

  beforeEach(async () => {
    relay = await startFakeRelay();
    home = makeHome();
  });
  afterEach(async () => {
    await relay.close();
    rmSync(home.home, { recursive: true, force: true });
  });

  describe('create-order access flags', () => {
    it('sends the key line, ports, start-up script, Jupyter token and the password read from stdin', async () => {
      // Prepare
      const keyFile = home.write('keys/me.pub', `${PUBLIC_KEY}\n`);
      const script = '#!/bin/sh\npip install vllm\nvllm serve --port 8000 &\n';
      const scriptFile = home.write('setup.sh', script);
      // Act
      const run = await runCli(
        [
          'create-order',
          '--gpu',
          'RTX 4090',
          '--ssh-key',
          keyFile,
          '--port',
          '8000:http',
          '--port',
          '22:tcp',
          '--command-file',
          scriptFile,
          '--jupyter-token',
          'Tok3nTok3nTok3nTok3n',
          '--password-prompt',
          '--verbose',
        ],
        { env: env(), stdin: 'Passw0rdPassw0rd\n' },
      );
      // Assess
      expect(run.code).toBe(0);
      expect(relay.requests).toHaveLength(1);
      expect(bodyOf(relay.requests[0])).toEqual({
        gpu_type: 'RTX 4090',
        ssh_public_key: PUBLIC_KEY,
        ports: { '8000': 'http', '22': 'tcp' },
        command: script,
        jupyter_token: 'Tok3nTok3nTok3nTok3n',
        ssh_password: 'Passw0rdPassw0rd',
      });
      // --verbose echoes the body: the password is hidden there too.
      expect(run.stderr).toContain('"ssh_password":"***"');
      expect(run.stdout + run.stderr).not.toContain('Passw0rdPassw0rd');
    });

    it('offers ~/.ssh/id_ed25519.pub without --ssh-key and says so on stderr; --no-ssh-key sends none', async () => {
      // Prepare
      home.write('.ssh/id_ed25519.pub', `${PUBLIC_KEY}\n`);
      home.write('.ssh/id_rsa.pub', `${RSA_PUBLIC_KEY}\n`);
      // Act
      const offered = await runCli(['create-order', '--gpu', 'A100'], { env: env() });
      const none = await runCli(['create-order', '--gpu', 'A100', '--no-ssh-key'], { env: env() });
      // Assess
      expect([offered.code, none.code]).toEqual([0, 0]);
      expect(bodyOf(relay.requests[0])).toEqual({ gpu_type: 'A100', ssh_public_key: PUBLIC_KEY });
      expect(offered.stderr).toContain(
        'using SSH key ~/.ssh/id_ed25519.pub (--ssh-key FILE.pub to choose another, --no-ssh-key for none)',
      );
      expect(bodyOf(relay.requests[1])).toEqual({ gpu_type: 'A100' });
      expect(none.stderr).not.toContain('using SSH key');
    });

    it('falls back to ~/.ssh/id_rsa.pub, and offers nothing when neither exists', async () => {
      const nothing = await runCli(['create-order', '--gpu', 'A100'], { env: env() });
      home.write('.ssh/id_rsa.pub', `${RSA_PUBLIC_KEY}\n`);
      const rsa = await runCli(['create-order', '--gpu', 'A100'], { env: env() });
      expect(bodyOf(relay.requests[0])).toEqual({ gpu_type: 'A100' });
      expect(nothing.stderr).not.toContain('using SSH key');
      expect(bodyOf(relay.requests[1])).toEqual({ gpu_type: 'A100', ssh_public_key: RSA_PUBLIC_KEY });
      expect(rsa.stderr).toContain('using SSH key ~/.ssh/id_rsa.pub');
    });

    it.each([
      ['an OpenSSH private key', 'keys/id_ed25519', PRIVATE_KEY, 'keys/id_ed25519.pub'],
      ['a PuTTY key', 'keys/me.ppk', PUTTY_KEY, 'keys/me.ppk.pub'],
    ])('refuses %s given as --ssh-key, names the .pub file, never prints it', async (_what, name, text, pub) => {
      // Prepare
      const file = home.write(name, text);
      // Act
      const run = await runCli(['create-order', '--gpu', 'A100', '--ssh-key', file], { env: env() });
      // Assess
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`--ssh-key: ${file} is a private key: send the line of its public half`);
      expect(run.stderr).toContain(path.join(home.home, pub));
      expect(run.stdout + run.stderr).not.toContain(PRIVATE_KEY_BODY);
      expect(relay.requests).toHaveLength(0);
    });

    it('refuses a default key file that holds a private key, and says how to send none', async () => {
      home.write('.ssh/id_ed25519.pub', PRIVATE_KEY);
      const run = await runCli(['create-order', '--gpu', 'A100'], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('is a private key');
      expect(run.stderr).toContain('--no-ssh-key');
      expect(run.stdout + run.stderr).not.toContain(PRIVATE_KEY_BODY);
      expect(relay.requests).toHaveLength(0);
    });

    it.each([
      [['--port', '8000'], "--port takes PORT:PROTO, a container port 1-65535 and tcp or http, got '8000'"],
      [['--port', '8000:udp'], "got '8000:udp'"],
      [['--port', '0:tcp'], "got '0:tcp'"],
      [['--port', '70000:tcp'], "got '70000:tcp'"],
      [['--port', '8000:http', '--port', '8000:tcp'], '--port 8000 is given as both http and tcp'],
      [['--port', Array.from({ length: 17 }, (_, i) => `${8000 + i}:tcp`).join(',')], '--port: at most 16 ports'],
      [['--jupyter-token', 'short'], '--jupyter-token takes 16 to 32 letters and digits'],
      [['--jupyter-token', 'has-a-dash-in-it-1234'], '--jupyter-token takes 16 to 32 letters and digits'],
      [['--ssh-key', '/nonexistent/id.pub'], '--ssh-key: cannot read /nonexistent/id.pub (ENOENT)'],
      [['--command-file', '/nonexistent/setup.sh'], '--command-file: cannot read /nonexistent/setup.sh (ENOENT)'],
      [['--no-ssh-key', '--ssh-key', '/x.pub'], '--ssh-key and --no-ssh-key contradict each other'],
    ])('exits 2 before sending anything for %j', async (flags, message) => {
      const run = await runCli(['create-order', '--gpu', 'A100', ...flags], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
      expect(relay.requests).toHaveLength(0);
    });

    it('refuses a key file that is no public key, one with two keys, a script over 16 KiB and an empty one', async () => {
      const notKey = home.write('notkey.pub', 'hello world\n');
      const twoKeys = home.write('two.pub', `${PUBLIC_KEY}\n${PUBLIC_KEY}\n`);
      const big = home.write('big.sh', 'x'.repeat(16 * 1024 + 1));
      const empty = home.write('empty.sh', '\n');
      const runs = await Promise.all([
        runCli(['create-order', '--gpu', 'A100', '--ssh-key', notKey], { env: env() }),
        runCli(['create-order', '--gpu', 'A100', '--ssh-key', twoKeys], { env: env() }),
        runCli(['create-order', '--gpu', 'A100', '--command-file', big], { env: env() }),
        runCli(['create-order', '--gpu', 'A100', '--command-file', empty], { env: env() }),
      ]);
      expect(runs.map((r) => r.code)).toEqual([2, 2, 2, 2]);
      expect(runs[0].stderr).toContain(`${notKey} is not an OpenSSH public key line`);
      expect(runs[0].stderr).not.toContain('hello world');
      expect(runs[1].stderr).toContain('must hold exactly one OpenSSH public key line, it holds 2 lines');
      expect(runs[2].stderr).toContain('is 16385 bytes; the relay takes at most 16384');
      expect(runs[3].stderr).toContain(`${empty} is empty`);
      expect(relay.requests).toHaveLength(0);
    });

    it('refuses a bad or missing prompted password without printing it', async () => {
      const bad = await runCli(['create-order', '--gpu', 'A100', '--password-prompt'], {
        env: env(),
        stdin: 'short-pw!\n',
      });
      const missing = await runCli(['create-order', '--gpu', 'A100', '--password-prompt'], { env: env() });
      expect([bad.code, missing.code]).toEqual([2, 2]);
      expect(bad.stderr).toContain('the password must be 12 to 32 letters and digits');
      expect(bad.stdout + bad.stderr).not.toContain('short-pw!');
      expect(missing.stderr).toContain('--password-prompt: no password given');
      expect(relay.requests).toHaveLength(0);
    });

    it('takes the access flags on create-order only', async () => {
      const run = await runCli(['price-alert', '--gpu', 'A100', '--target', '1', '--port', '22:tcp'], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('price-alert does not take --port');
    });
  });

  describe('gpu-relay ssh', () => {
    const answerTask = (record: unknown) =>
      relay.respond((req) =>
        req.method === 'GET' && req.url === `/webhook/tasks/${TASK_ID}`
          ? { status: 200, body: record }
          : { status: 404, body: { error: 'Not found' } },
      );

    it('pins the host key in its own known_hosts and runs ssh against it, passing the exit code on', async () => {
      // Prepare
      answerTask(taskRecord(ACCESS_SSH));
      // Act
      const run = await runCli(['ssh', TASK_ID, '--', 'nvidia-smi', '-L'], { env: env() });
      // Assess
      expect(run.code).toBe(7);
      expect(relay.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET /webhook/tasks/${TASK_ID}`]);
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(`[n1.example]:1277 ${HOST_KEY}\n`);
      expect(statSync(home.knownHosts).mode & 0o777).toBe(0o600);
      expect(readFileSync(home.argsFile, 'utf8').trimEnd().split('\n')).toEqual([
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        `UserKnownHostsFile=${home.knownHosts}`,
        '-p',
        '1277',
        'root@n1.example',
        'nvidia-smi',
        '-L',
      ]);
      expect(run.stderr).toContain(
        'pinned ssh-ed25519 host key of [n1.example]:1277 in ~/.config/gpu-relay/known_hosts',
      );
    });

    it('adds -i FILE -o IdentitiesOnly=yes with --identity, and keeps a pinned key that is the same', async () => {
      answerTask(taskRecord(ACCESS_SSH));
      const identity = home.write('.ssh/id_ed25519', PRIVATE_KEY);
      home.write('.config/gpu-relay/known_hosts', `other.example ${OTHER_HOST_KEY}\n[n1.example]:1277 ${HOST_KEY}\n`);
      const run = await runCli(['ssh', TASK_ID, '--identity', identity], { env: env() });
      expect(run.code).toBe(7);
      expect(readFileSync(home.argsFile, 'utf8').trimEnd().split('\n')).toEqual([
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        `UserKnownHostsFile=${home.knownHosts}`,
        '-p',
        '1277',
        '-i',
        identity,
        '-o',
        'IdentitiesOnly=yes',
        'root@n1.example',
      ]);
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(
        `other.example ${OTHER_HOST_KEY}\n[n1.example]:1277 ${HOST_KEY}\n`,
      );
      expect(run.stdout + run.stderr).not.toContain(PRIVATE_KEY_BODY);
    });

    it('refuses a changed host key loudly, does not connect and leaves the file; --replace-host-key replaces it', async () => {
      // Prepare: the file pins another key for the same host and port
      answerTask(taskRecord(ACCESS_SSH));
      const before = `[n1.example]:1277 ${OTHER_HOST_KEY}\nother.example ${OTHER_HOST_KEY}\n`;
      home.write('.config/gpu-relay/known_hosts', before);
      // Act
      const refused = await runCli(['ssh', TASK_ID], { env: env() });
      // Assess
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('HOST KEY CHANGED for [n1.example]:1277');
      expect(refused.stderr).toContain('now reports ssh-ed25519 SHA256:ELVYv/wINBQzck+Ox7FWYDzCt799b8QZqdodRdum8a8');
      expect(refused.stderr).toContain('--replace-host-key');
      expect(existsSync(home.argsFile)).toBe(false);
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(before);

      // Act: the caller knows why
      const replaced = await runCli(['ssh', TASK_ID, '--replace-host-key'], { env: env() });
      expect(replaced.code).toBe(7);
      expect(replaced.stderr).toContain('REPLACED the pinned ssh-ed25519 host key of [n1.example]:1277');
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(
        `other.example ${OTHER_HOST_KEY}\n[n1.example]:1277 ${HOST_KEY}\n`,
      );
    });

    it('pins from known_hosts alone, as the bare host on port 22', async () => {
      answerTask(taskRecord({ host: '10.0.0.5', port: 22, user: 'root', known_hosts: `10.0.0.5 ${HOST_KEY}` }));
      const run = await runCli(['ssh', TASK_ID], { env: env() });
      expect(run.code).toBe(7);
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(`10.0.0.5 ${HOST_KEY}\n`);
    });

    it.each([
      ['no host key', { ...ACCESS_SSH, host_key: undefined, known_hosts: undefined }, 'refusing an unpinned login'],
      [
        'a known_hosts line for another host',
        { ...ACCESS_SSH, host_key: undefined, known_hosts: `evil.example ${HOST_KEY}` },
        'refusing an unpinned login',
      ],
      ['a host that reads as an option', { ...ACCESS_SSH, host: '-oProxyCommand=x' }, 'no usable ssh host and port'],
      ['no access at all', undefined, 'has no access.ssh'],
    ])('refuses a result with %s and never runs ssh', async (_what, ssh, message) => {
      answerTask(taskRecord(ssh as Record<string, unknown> | undefined));
      const run = await runCli(['ssh', TASK_ID], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stderr).toContain('ssh root@n1.example -p 1277');
      expect(existsSync(home.argsFile)).toBe(false);
      expect(existsSync(home.knownHosts)).toBe(false);
    });

    it('says why when the task has no result yet or rented nothing', async () => {
      answerTask({ task_id: TASK_ID, state: 'running' });
      const running = await runCli(['ssh', TASK_ID], { env: env() });
      answerTask({ task_id: TASK_ID, state: 'failed', result: { success: false, error: 'No A100 available' } });
      const failed = await runCli(['ssh', TASK_ID], { env: env() });
      expect([running.code, failed.code]).toEqual([2, 1]);
      expect(running.stderr).toContain(`task ${TASK_ID} has no result yet (state running)`);
      expect(failed.stderr).toContain(`task ${TASK_ID} rented no server: No A100 available`);
      expect(existsSync(home.argsFile)).toBe(false);
    });

    it('resolves an order id through the record a create-order --wait left, and says when it cannot', async () => {
      // Prepare: an order id nobody recorded
      const unknown = await runCli(['ssh', '4242'], { env: env() });
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('order 4242 is not in this machine');
      expect(unknown.stderr).toContain(path.join(home.home, '.local', 'state', 'gpu-relay', 'orders.json'));
      expect(relay.requests).toHaveLength(0);
      // Prepare: create-order --wait --poll sees the result
      relay.respond((req) =>
        req.method === 'POST'
          ? { status: 202, body: { status: 'queued', task_id: TASK_ID, message: 'queued' } }
          : { status: 200, body: taskRecord(ACCESS_SSH) },
      );
      const created = await runCli(
        ['create-order', '--gpu', 'RTX 4090', '--no-ssh-key', '--wait', '--poll', '--interval', '0.05'],
        { env: env() },
      );
      expect(created.code).toBe(0);
      // Act
      const run = await runCli(['ssh', '4242', '--', 'true'], { env: env() });
      // Assess
      expect(run.code).toBe(7);
      expect(relay.requests.at(-1)?.url).toBe(`/webhook/tasks/${TASK_ID}`);
      expect(readFileSync(home.argsFile, 'utf8')).toContain('root@n1.example\ntrue\n');
    });

    it('wants the remote command after --, and a TASK_ID', async () => {
      const noDash = await runCli(['ssh', TASK_ID, 'ls'], { env: env() });
      const none = await runCli(['ssh'], { env: env() });
      const pub = await runCli(['ssh', TASK_ID, '--identity', '/home/me/.ssh/id_ed25519.pub'], { env: env() });
      expect([noDash.code, none.code, pub.code]).toEqual([2, 2, 2]);
      expect(noDash.stderr).toContain(`put the remote command after --: gpu-relay ssh ${TASK_ID} -- ls`);
      expect(none.stderr).toContain('expected a TASK_ID or an ORDER_ID');
      expect(pub.stderr).toContain(
        '--identity takes the private key file, not its public half: /home/me/.ssh/id_ed25519',
      );
      expect(relay.requests).toHaveLength(0);
    });

    it('says so when the ssh program cannot run', async () => {
      answerTask(taskRecord(ACCESS_SSH));
      const run = await runCli(['ssh', TASK_ID], { env: env({ GPU_RELAY_SSH: path.join(home.home, 'no-ssh') }) });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('cannot run');
      expect(run.stderr).toContain('ENOENT');
    });
  });

  describe('gpu-relay ssh-config', () => {
    it('prints a pinned Host block and pins the key as ssh does', async () => {
      relay.respond(() => ({ status: 200, body: taskRecord(ACCESS_SSH) }));
      const byDefault = await runCli(['ssh-config', TASK_ID], { env: env() });
      const named = await runCli(['ssh-config', TASK_ID, '--name', 'trainer'], { env: env() });
      expect([byDefault.code, named.code]).toEqual([0, 0]);
      expect(byDefault.stdout).toBe(
        [
          'Host gpu-4242',
          '  HostName n1.example',
          '  Port 1277',
          '  User root',
          `  UserKnownHostsFile ${home.knownHosts}`,
          '  StrictHostKeyChecking yes',
          '',
        ].join('\n'),
      );
      expect(named.stdout.split('\n')[0]).toBe('Host trainer');
      expect(readFileSync(home.knownHosts, 'utf8')).toBe(`[n1.example]:1277 ${HOST_KEY}\n`);
    });

    it('refuses a bad --name and a changed host key', async () => {
      relay.respond(() => ({ status: 200, body: taskRecord(ACCESS_SSH) }));
      home.write('.config/gpu-relay/known_hosts', `[n1.example]:1277 ${OTHER_HOST_KEY}\n`);
      const badName = await runCli(['ssh-config', TASK_ID, '--name', 'a b'], { env: env() });
      const changed = await runCli(['ssh-config', TASK_ID], { env: env() });
      expect([badName.code, changed.code]).toEqual([2, 2]);
      expect(badName.stderr).toContain("--name takes letters, digits, '.', '_' and '-', got 'a b'");
      expect(changed.stderr).toContain('HOST KEY CHANGED');
      expect(changed.stdout).toBe('');
    });
  });

  describe('keys and SSH keys', () => {
    it('keys ssh-key NAME FILE.pub sends PUT /admin/keys/{name}/ssh-key, signed v2', async () => {
      relay.respond(() => ({ status: 200, body: { name: 'ci', ssh_key_fingerprint: 'SHA256:ELVYv/wINBQzck' } }));
      const file = home.write('ci.pub', `${PUBLIC_KEY}\n`);
      const run = await runCli(['keys', 'ssh-key', 'ci', file], { env: env() });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(`${req.method} ${req.url}`).toBe('PUT /admin/keys/ci/ssh-key');
      expect(bodyOf(req)).toEqual({ ssh_public_key: PUBLIC_KEY });
      const ts = String(req.headers['x-webhook-timestamp']);
      expect(req.headers['x-webhook-signature']).toBe(
        signatureV2(SECRET, ts, 'PUT', '/admin/keys/ci/ssh-key', req.body),
      );
      expect(run.stdout).toContain('key ci: SSH public key set (SHA256:ELVYv/wINBQzck)');
    });

    it('keys ssh-key refuses a private key and a missing file before sending', async () => {
      const priv = home.write('ci', PRIVATE_KEY);
      const refused = await runCli(['keys', 'ssh-key', 'ci', priv], { env: env() });
      const missing = await runCli(['keys', 'ssh-key', 'ci'], { env: env() });
      expect([refused.code, missing.code]).toEqual([2, 2]);
      expect(refused.stderr).toContain(`FILE.pub: ${priv} is a private key`);
      expect(refused.stdout + refused.stderr).not.toContain(PRIVATE_KEY_BODY);
      expect(missing.stderr).toContain('keys ssh-key takes a key NAME and a FILE.pub');
      expect(relay.requests).toHaveLength(0);
    });

    it('keys create --ssh-key sends ssh_public_key; keys list shows the fingerprint column', async () => {
      const file = home.write('ci.pub', `${PUBLIC_KEY}\n`);
      relay.respond((req) =>
        req.method === 'POST'
          ? { status: 201, body: { name: 'ci', scopes: ['order'], secret: 'rk_new' } }
          : {
              status: 200,
              body: {
                keys: [
                  {
                    name: 'ci',
                    status: 'active',
                    scopes: ['order'],
                    created_at: '2026-01-02T00:00:00Z',
                    ssh_key_fingerprint: 'SHA256:ELVYv/wINBQzck+Ox7FWYDzCt799b8QZqdodRdum8a8',
                  },
                  { name: 'ops', status: 'active', scopes: ['admin'], created_at: '2026-01-03T00:00:00Z' },
                ],
              },
            },
      );
      const created = await runCli(['keys', 'create', '--name', 'ci', '--scopes', 'order', '--ssh-key', file], {
        env: env(),
      });
      const listed = await runCli(['keys', 'list'], { env: env() });
      expect([created.code, listed.code]).toEqual([0, 0]);
      expect(bodyOf(relay.requests[0])).toEqual({ name: 'ci', scopes: ['order'], ssh_public_key: PUBLIC_KEY });
      const [header, ci, ops] = listed.stdout.trimEnd().split('\n');
      expect(header).toMatch(/SLACK USER\s+SSH KEY$/);
      expect(ci).toMatch(/\s-\s+SHA256:ELVYv\/wINBQzck\+Ox7FWYDzCt799b8QZqdodRdum8a8$/);
      expect(ops).toMatch(/\s-\s+-$/);
    });
  });
});
