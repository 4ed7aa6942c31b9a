/**
 * Your GPU, reachable by you alone (issue 37), end to end in both dialects (jest projects `e2e` and
 * `e2e-live`): a create-order with a generated SSH key and a password reaches the marketplace as
 * `ssh_key` + `autossh_entrypoint` and `ssh_password`, the readiness login uses the caller's
 * password, the result names the host key to pin, and the caller logs in twice: through
 * `gpu-relay ssh` (the system OpenSSH client, the key, StrictHostKeyChecking=yes against the pinned
 * line) and through ssh2 (the password, the host key compared). A generated Jupyter token reaches the
 * marketplace and the signed result and nothing else; a caller key's stored SSH key goes with its
 * orders; every bad value gets its 400. The last test reads everything the relay wrote, posted to chat
 * or answered in a status result during the file, and fails if a password, token or script is in it.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'ssh2';
import { hostKeyLine } from '../../lambdas/adapters/ssh-login-probe';
import {
  COMMAND_ERROR,
  JUPYTER_TOKEN_ERROR,
  PORTS_ERROR,
  PRIVATE_KEY_ERROR,
  SSH_PASSWORD_ERROR,
  SSH_PUBLIC_KEY_ERROR,
} from '../../lambdas/domain/access/order-access';
import { e2eCalls, isResult, json, type Json } from '../helpers/e2e-calls';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { leaks, startCapture } from '../helpers/log-capture';
import { request, signedPost, signedPostV2, startReceiver, v2Headers, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { generateSshKeyPair, type TestSshKeyPair } from '../helpers/ssh-keys';
import { runCli } from '../unit/cli/run-cli';

const dialect = testDialect();
const WAIT_MS = 60_000;
/** Distinctive values: any of them where it must not be is a leak, never a coincidence. */
const PASSWORD = 'AccessPw7Q2x9Lm4';
const GIVEN_TOKEN = 'JupyterTok5Hk8Rz3Wq1';
const SCRIPT_MARK = 'setup-mark-7f3e1b';
const COMMAND = `#!/bin/sh\necho ${SCRIPT_MARK}\n`;

describe(`Access: your GPU, reachable by you alone (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let slack: Receiver;
  let home: string;
  let key: TestSshKeyPair;
  let keyFile: string;
  let capture: ReturnType<typeof startCapture>;
  /** Every generated Jupyter token the file saw in a signed result. */
  const generatedTokens: string[] = [];
  const calls = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );
  const sim = () => calls.sim();
  /** A server of its own for each order (GPU `ACCESS G<n>`), so earlier orders never take a later one's. */
  let servers = 0;
  const ownServer = (): string => {
    servers += 1;
    const gpu = `ACCESS G${servers}`;
    sim().addServer(uniqueServer(9600 + servers, gpu, sim().nativeCoin));
    return gpu;
  };
  const ordered = async (tag: string, body: Json): Promise<{ taskId: string; result: Json }> => {
    const taskId = await calls.create(tag, { gpu_type: ownServer(), ...body });
    const result = json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
    expect(result).toMatchObject({ success: true, status: 'running' });
    const token = (result.access as { jupyter?: { token?: string } } | undefined)?.jupyter?.token;
    if (token !== undefined && token !== GIVEN_TOKEN) generatedTokens.push(token);
    return { taskId, result };
  };
  const sent = (result: Json): Json => ({ ...(sim().orderRequest(Number(result.order_id)) ?? {}) });
  const cliEnv = () => ({ GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: TEST_WEBHOOK_SECRET, HOME: home });

  beforeAll(async () => {
    home = mkdtempSync(path.join(tmpdir(), 'gpu-relay-access-'));
    key = generateSshKeyPair('caller@access-e2e');
    mkdirSync(path.join(home, '.ssh'), { mode: 0o700 });
    keyFile = path.join(home, '.ssh', 'id_ed25519');
    writeFileSync(keyFile, key.privateKey);
    chmodSync(keyFile, 0o600);
    [callbacks, slack] = await Promise.all([startReceiver(), startReceiver()]);
    capture = startCapture();
    runtime = await startTestRuntime({
      dialect,
      env: { READINESS_PROBE: 'ssh-login', SLACK_WEBHOOK_URL: `${slack.url}/chat`, POWERTOOLS_LOG_LEVEL: 'DEBUG' },
    });
  }, 60_000);
  afterAll(async () => {
    capture?.stop();
    await runtime?.close();
    await Promise.all([callbacks?.close(), slack?.close()]);
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('rents with a key and a password, pins the host key, and lets the caller in by key (gpu-relay ssh) and by password (ssh2)', async () => {
    // Act
    const { taskId, result } = await ordered('both', {
      ssh_public_key: key.publicKey,
      ssh_password: PASSWORD,
      command: COMMAND,
    });
    // Assess: what the marketplace got
    const body = sent(result);
    expect(body).toMatchObject({
      ssh_key: key.publicKey.trim(),
      autossh_entrypoint: true,
      ssh_password: PASSWORD,
      command: COMMAND,
      ports: { '22': 'tcp', '8888': 'http' },
    });
    // The result: the pinned host key (the simulator's own), its known_hosts line, a generated token
    const access = result.access as {
      ssh: { host: string; port: number; user: string; command: string; host_key: string; known_hosts: string };
      jupyter: { url: string; token: string };
      http: Record<string, string>;
    };
    expect(access.ssh).toMatchObject({ user: 'root', host_key: sim().sshHostKey() });
    expect(access.ssh.command).toBe(`ssh -p ${access.ssh.port} root@${access.ssh.host}`);
    expect(access.ssh.known_hosts).toBe(`[${access.ssh.host}]:${access.ssh.port} ${sim().sshHostKey()}`);
    expect(access.jupyter.token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(body.jupyter_token).toBe(access.jupyter.token);
    expect(access.http['8888']).toBe(access.jupyter.url);
    // The readiness login used the caller's password (the relay's own would have been refused)
    const logins = sim().sshLogins(Number(result.order_id));
    expect(logins.accepted).toBeGreaterThanOrEqual(1);
    // The task's own key reads the token; the record stores it sealed only
    const view = await calls.taskView(taskId);
    expect((view.result as Json).access).toEqual(access);

    // Act: in by key, through the CLI and the system ssh, pinned
    const cli = await runCli(['ssh', taskId, '--identity', keyFile, '--', 'nvidia-smi'], {
      env: { ...cliEnv(), PATH: process.env.PATH ?? '' },
      timeoutMs: 30_000,
    });
    // Assess
    expect(cli.stderr).not.toMatch(/HOST KEY CHANGED/);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('NVIDIA-SMI');
    expect(cli.stdout).toContain((result.gpu as string[])[0]);
    expect(sim().sshLogins(Number(result.order_id)).key_accepted).toBeGreaterThanOrEqual(1);

    // Act: in by password, through ssh2, the host key compared with the result's
    const output = await new Promise<string>((resolve, reject) => {
      const client = new Client();
      let out = '';
      client
        .on('ready', () =>
          client.exec('nvidia-smi', (error, stream) => {
            if (error) return reject(error);
            stream.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
            stream.on('close', () => {
              client.end();
              resolve(out);
            });
          }),
        )
        .on('error', reject)
        .connect({
          host: access.ssh.host,
          port: access.ssh.port,
          username: 'root',
          password: PASSWORD,
          hostVerifier: (raw: Buffer) => hostKeyLine(raw) === access.ssh.host_key,
        });
    });
    expect(output).toContain((result.gpu as string[])[0]);
  }, 120_000);

  it('sends the key alone, or the password alone, as the marketplace takes them', async () => {
    // Act
    const keyOnly = sent((await ordered('key-only', { ssh_public_key: key.publicKey })).result);
    const passwordOnly = sent(
      (await ordered('password-only', { ssh_password: PASSWORD, jupyter_token: GIVEN_TOKEN })).result,
    );
    // Assess: the key with autossh_entrypoint; the relay's own password for its readiness login
    expect(keyOnly).toMatchObject({ ssh_key: key.publicKey.trim(), autossh_entrypoint: true });
    expect(keyOnly.ssh_password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(keyOnly.ssh_password).not.toBe(PASSWORD);
    // No key (the default key stores none): the caller's password and token
    expect(passwordOnly).toMatchObject({ ssh_password: PASSWORD, jupyter_token: GIVEN_TOKEN });
    expect(passwordOnly.ssh_key).toBeUndefined();
    expect(passwordOnly.autossh_entrypoint).toBeUndefined();
  }, 120_000);

  it("sends a caller key's stored SSH key with its orders, and shows the token to that key only", async () => {
    // Prepare: a key created with one SSH key, then given another
    const stored = generateSshKeyPair('stored@access-e2e');
    const replaced = generateSshKeyPair('replaced@access-e2e');
    const created = await signedPostV2(
      runtime.url,
      '/admin/keys',
      { name: 'access-ci', scopes: ['order', 'read'], ssh_public_key: stored.publicKey },
      TEST_WEBHOOK_SECRET,
    );
    expect(created.status).toBe(201);
    expect(created.json?.ssh_key_fingerprint).toMatch(/^SHA256:/);
    const secret = String(created.json?.secret);
    const asKey = async (tag: string): Promise<{ taskId: string; result: Json }> => {
      const res = await signedPostV2(
        runtime.url,
        '/webhook/create-order',
        { gpu_type: ownServer(), callback_url: `${callbacks.url}/${tag}` },
        secret,
        { 'x-webhook-key-id': 'access-ci' },
      );
      expect(res.status).toBe(202);
      const result = json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
      // (the error beside success, so a failed result says why)
      expect({ success: result.success, error: result.error }).toMatchObject({ success: true });
      const token = (result.access as { jupyter?: { token?: string } } | undefined)?.jupyter?.token;
      if (token !== undefined) generatedTokens.push(token);
      return { taskId: String(res.json?.task_id), result };
    };
    // Act
    const first = await asKey('stored-key');
    const putPath = '/admin/keys/access-ci/ssh-key';
    const putBody = JSON.stringify({ ssh_public_key: replaced.publicKey });
    const put = await request(`${runtime.url}${putPath}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...v2Headers(TEST_WEBHOOK_SECRET, 'PUT', putPath, putBody) },
      body: putBody,
    });
    const second = await asKey('replaced-key');
    // Assess
    expect(put.status).toBe(200);
    const listed = await request(`${runtime.url}/admin/keys`, {
      headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', '/admin/keys'),
    });
    expect((listed.json?.keys as Json[]).find((k) => k.name === 'access-ci')).toMatchObject({
      ssh_key_fingerprint: put.json?.ssh_key_fingerprint,
    });
    expect(put.json?.ssh_key_fingerprint).not.toBe(created.json?.ssh_key_fingerprint);
    expect(sent(first.result).ssh_key).toBe(stored.publicKey.trim());
    expect(sent(second.result).ssh_key).toBe(replaced.publicKey.trim());
    // The token: to the task's own key, not to the default key that sees every task
    const viewAs = async (taskId: string, headers: Record<string, string>, signer: string): Promise<Json> => {
      const taskPath = `/webhook/tasks/${taskId}`;
      const res = await request(`${runtime.url}${taskPath}`, {
        headers: { ...v2Headers(signer, 'GET', taskPath), ...headers },
      });
      expect(res.status).toBe(200);
      return (res.json?.result as Json) ?? {};
    };
    const own = await viewAs(second.taskId, { 'x-webhook-key-id': 'access-ci' }, secret);
    const admin = await viewAs(second.taskId, {}, TEST_WEBHOOK_SECRET);
    const tokenOf = (result: Json) => (result.access as { jupyter?: { token?: string } }).jupyter?.token;
    expect(tokenOf(own)).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(tokenOf(admin)).toBeUndefined();
    expect((admin.access as Json).ssh).toEqual((own.access as Json).ssh);
  }, 120_000);

  it.each([
    [
      'a private key',
      { ssh_public_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n' },
      PRIVATE_KEY_ERROR,
    ],
    ['a PuTTY key file', { ssh_public_key: 'PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none' }, PRIVATE_KEY_ERROR],
    ['a key of no known type', { ssh_public_key: 'ssh-dss AAAAB3NzaC1kc3MAAACBAP' }, SSH_PUBLIC_KEY_ERROR],
    ['two key lines', { ssh_public_key: 'KEY\nKEY' }, SSH_PUBLIC_KEY_ERROR],
    ['a short password', { ssh_password: 'short1' }, SSH_PASSWORD_ERROR],
    ['a password with a space', { ssh_password: 'not alphanumeric 123' }, SSH_PASSWORD_ERROR],
    ['a short token', { jupyter_token: 'tok' }, JUPYTER_TOKEN_ERROR],
    ['a port protocol', { ports: { '22': 'udp' } }, PORTS_ERROR],
    ['port 0', { ports: { '0': 'tcp' } }, PORTS_ERROR],
    [
      '17 ports',
      { ports: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [String(8000 + i), 'tcp'])) },
      PORTS_ERROR,
    ],
    ['a script over 16 KiB', { command: 'x'.repeat(16 * 1024 + 1) }, COMMAND_ERROR],
  ])('refuses %s with a 400 naming the field and the rule, and queues nothing', async (_what, fields, error) => {
    // Prepare: the two-key-lines case uses a real key line twice
    const body = Object.fromEntries(
      Object.entries(fields).map(([k, v]) => [
        k,
        v === 'KEY\nKEY' ? `${key.publicKey.trim()}\n${key.publicKey.trim()}` : v,
      ]),
    );
    const before = sim().orders().length;
    // Act
    const res = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: 'RTX 4090', ...body },
      TEST_WEBHOOK_SECRET,
    );
    // Assess: the rule's text, never the value
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: error });
    expect(res.json?.task_id).toBeUndefined();
    expect(sim().orders().length).toBe(before);
  });

  it('writes no password, token or script to a log line, a chat message or a status result', async () => {
    // Prepare: a status result names every order of the file
    const status = await signedPost(
      runtime.url,
      '/webhook/status',
      { callback_url: `${callbacks.url}/status` },
      TEST_WEBHOOK_SECRET,
    );
    expect(status.status).toBe(202);
    const statusResult = JSON.stringify(json(await callbacks.waitFor((r) => isResult(r, '/status'), WAIT_MS)));
    // The capture caught the relay's lines (else the scan proves nothing) and chat got the orders
    expect(capture.lines.length).toBeGreaterThan(20);
    expect(slack.requests.length).toBeGreaterThanOrEqual(3);
    expect(generatedTokens.length).toBeGreaterThanOrEqual(3);
    const forbidden: Record<string, string> = {
      password: PASSWORD,
      'given token': GIVEN_TOKEN,
      script: SCRIPT_MARK,
      ...Object.fromEntries(generatedTokens.map((token, i) => [`generated token ${i}`, token])),
    };
    // Act + Assess
    expect(leaks(capture.lines, forbidden)).toEqual([]);
    const chat = slack.requests.map((r) => ({ source: 'stdout' as const, text: r.body }));
    expect(leaks(chat, forbidden)).toEqual([]);
    expect(leaks([{ source: 'stdout', text: statusResult }], forbidden)).toEqual([]);
  });
});
