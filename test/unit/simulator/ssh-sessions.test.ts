/**
 * The simulator lets you in (issue 37 §7), in both dialects: an order's ssh endpoint takes a login
 * with the order's `ssh_key` (a real ssh2 client signing with the private key) or its `ssh_password`,
 * only once the order's login works; a session runs nothing: `nvidia-smi` prints a table of the
 * order's GPUs, any other command is echoed back, a shell greets and echoes until `exit`. The host
 * key every endpoint presents is the control's `sshHostKey()`, and the system OpenSSH client (when
 * there is one) logs in with a key pinned to it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BaseAgent,
  Client,
  utils as sshUtils,
  type ClientChannel,
  type ConnectConfig,
  type IdentityCallback,
  type ParsedKey,
  type SignCallback,
  type SigningRequestOptions,
} from 'ssh2';
import { probeSshLogin } from '../../../lambdas/adapters/ssh-login-probe';
import { parseSshEndpoint, type SshEndpoint } from '../../../lambdas/domain/leases/ssh-endpoint';
import { DIALECTS, startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { generateSshKeyPair } from '../../helpers/ssh-keys';

const PASSWORD = 'Sim0nSays1234';
const OWN = generateSshKeyPair('renter@laptop');
const STRANGER = generateSshKeyPair('stranger@elsewhere');
const OPENSSH = '/usr/bin/ssh';

/** A logged-in ssh2 client and the host key line it saw. */
interface Session {
  readonly client: Client;
  readonly hostKey: string;
}

/** Logs in with ssh2's client; rejects with ssh2's error (`level: 'client-authentication'` for a refused login). */
const login = (
  endpoint: SshEndpoint,
  auth: Pick<ConnectConfig, 'password' | 'privateKey' | 'agent'>,
): Promise<Session> =>
  new Promise((resolve, reject) => {
    const client = new Client();
    let hostKey = '';
    client.once('ready', () => resolve({ client, hostKey }));
    // The first error decides; a reset after a refused login may follow it.
    client.on('error', (error) => {
      client.end();
      reject(error);
    });
    client.connect({
      host: endpoint.host,
      port: endpoint.port,
      username: 'root',
      ...auth,
      tryKeyboard: false,
      hostVerifier: (key: Buffer) => {
        // The raw key starts with its type: uint32 length, then the name.
        hostKey = `${key.subarray(4, 4 + key.readUInt32BE(0)).toString()} ${key.toString('base64')}`;
        return true;
      },
    });
  });

const parsed = (key: string): ParsedKey => {
  const result = sshUtils.parseKey(key);
  if (result instanceof Error) throw result;
  return result;
};

/** An agent that offers one public key and signs with another private key: a forged signature. */
class ForgingAgent extends BaseAgent<ParsedKey> {
  public constructor(
    private readonly offered: ParsedKey,
    private readonly signer: ParsedKey,
  ) {
    super();
  }

  public getIdentities(cb: IdentityCallback<ParsedKey>): void {
    cb(null, [this.offered]);
  }

  public sign(_key: ParsedKey, data: Buffer, options: SigningRequestOptions | SignCallback, cb?: SignCallback): void {
    const done = typeof options === 'function' ? options : cb;
    done?.(null, this.signer.sign(data));
  }
}

/** Why a login failed: ssh2's error level. */
const refusal = (attempt: Promise<Session>): Promise<string | undefined> =>
  attempt.then(
    ({ client }) => {
      client.end();
      return undefined;
    },
    (error: Error & { level?: string }) => error.level ?? error.message,
  );

/** Reads a channel to its close: stdout and the exit code. */
const drain = (channel: ClientChannel): Promise<{ stdout: string; code: number | undefined }> =>
  new Promise((resolve) => {
    let stdout = '';
    let code: number | undefined;
    channel.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    channel.on('exit', (exitCode: number) => {
      code = exitCode;
    });
    channel.on('close', () => resolve({ stdout, code }));
  });

const exec = (client: Client, command: string): Promise<{ stdout: string; code: number | undefined }> =>
  new Promise((resolve, reject) =>
    client.exec(command, (error, channel) => (error ? reject(error) : resolve(drain(channel)))),
  );

/** Rows of an nvidia-smi table: the GPU index and name of each card's first line. */
const gpuRows = (table: string): { index: number; name: string }[] =>
  table
    .split('\n')
    .map((line) => /^\|\s+(\d+)\s+(.+?)\s+Off \|\s+0{8}:/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ index: Number(match[1]), name: match[2] as string }));

describe.each(DIALECTS)('Simulator ssh sessions: %s dialect', (dialect) => {
  let clock = 1_700_000_000_000;
  let sim: MarketplaceSimulator;

  beforeAll(async () => {
    sim = await startSimulator({ dialect, rateLimit: false, readyDelayMs: 0, sshDelayMs: 0, now: () => clock });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    clock = 1_700_000_000_000;
  });

  /** Rents a free server with two or more GPUs with these access fields; its id, endpoint and GPUs. */
  const rent = async (access: Record<string, unknown>) => {
    const coin = sim.control.nativeCoin;
    const server = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length >= 2 && s.allowed_coins.includes(coin));
    if (!server) throw new Error('catalogue has no free multi-GPU server');
    const res = await fetch(`${sim.url}/v1/create_order`, {
      method: 'POST',
      headers: { auth: sim.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        renting_server: server.id,
        type: 'on-demand',
        currency: coin,
        image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
        ports: { '22': 'tcp' },
        ...access,
      }),
    });
    expect(((await res.json()) as { code: number }).code).toBe(0);
    const order = sim.control.orders().at(-1);
    const endpoint = parseSshEndpoint(order?.connection.ssh);
    if (!order || !endpoint) throw new Error('the order has no ssh endpoint');
    return { id: order.order_id, endpoint, gpus: server.gpu_array };
  };

  it("logs in with the order's key, presents the control's host key, and nvidia-smi names the order's GPUs", async () => {
    // Prepare
    const order = await rent({ ssh_key: OWN.publicKey, autossh_entrypoint: true });
    // Act
    const { client, hostKey } = await login(order.endpoint, { privateKey: OWN.privateKey });
    const smi = await exec(client, 'nvidia-smi');
    client.end();
    // Assess
    expect(hostKey).toBe(sim.control.sshHostKey());
    expect(sim.control.sshHostKey()).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/]+=*$/);
    expect(smi.code).toBe(0);
    expect(smi.stdout).toContain('NVIDIA-SMI');
    expect(gpuRows(smi.stdout)).toEqual(order.gpus.map((name, index) => ({ index, name })));
    expect(sim.control.sshLogins(order.id)).toEqual({ accepted: 0, refused: 0, key_accepted: 1, key_refused: 0 });
    expect(sim.control.orders().at(-1)?.ssh_logins).toEqual(sim.control.sshLogins(order.id));
  });

  it('refuses a key that is not the order’s, and any key on an order created without one', async () => {
    // Prepare
    const keyed = await rent({ ssh_key: OWN.publicKey });
    const keyless = await rent({ ssh_password: PASSWORD });
    // Act
    const stranger = await refusal(login(keyed.endpoint, { privateKey: STRANGER.privateKey }));
    const noKey = await refusal(login(keyless.endpoint, { privateKey: OWN.privateKey }));
    // Assess
    expect(stranger).toBe('client-authentication');
    expect(noKey).toBe('client-authentication');
    expect(sim.control.sshLogins(keyed.id)).toMatchObject({ key_accepted: 0, key_refused: 1 });
    expect(sim.control.sshLogins(keyless.id)).toMatchObject({ key_accepted: 0, key_refused: 1 });
  });

  it('refuses the order’s key offered with a signature another key made', async () => {
    // Prepare
    const order = await rent({ ssh_key: OWN.publicKey });
    const agent = new ForgingAgent(parsed(OWN.publicKey), parsed(STRANGER.privateKey));
    // Act
    const forged = await refusal(login(order.endpoint, { agent }));
    const genuine = await refusal(login(order.endpoint, { privateKey: OWN.privateKey }));
    // Assess
    expect(forged).toBe('client-authentication');
    expect(genuine).toBeUndefined();
    expect(sim.control.sshLogins(order.id)).toEqual({ accepted: 0, refused: 0, key_accepted: 1, key_refused: 1 });
  });

  it('refuses the right key and the right password until the order’s login works, then takes both', async () => {
    // Prepare
    sim.control.setSshLoginDelay(60_000);
    const order = await rent({ ssh_key: OWN.publicKey, ssh_password: PASSWORD });
    // Act
    const earlyKey = await refusal(login(order.endpoint, { privateKey: OWN.privateKey }));
    const earlyPassword = await refusal(login(order.endpoint, { password: PASSWORD }));
    clock += 60_000;
    const key = await refusal(login(order.endpoint, { privateKey: OWN.privateKey }));
    const password = await refusal(login(order.endpoint, { password: PASSWORD }));
    // Assess
    expect([earlyKey, earlyPassword]).toEqual(['client-authentication', 'client-authentication']);
    expect([key, password]).toEqual([undefined, undefined]);
    expect(sim.control.sshLogins(order.id)).toEqual({ accepted: 1, refused: 1, key_accepted: 1, key_refused: 1 });
  });

  it('logs in with the password and echoes a command other than nvidia-smi without running it', async () => {
    // Prepare
    const order = await rent({ ssh_password: PASSWORD, ssh_key: OWN.publicKey });
    const command = 'rm -rf / && echo "$HOME" | tee /tmp/x';
    // Act
    const wrong = await refusal(login(order.endpoint, { password: 'Wr0ngPassword' }));
    const { client } = await login(order.endpoint, { password: PASSWORD });
    const echoed = await exec(client, command);
    const again = await exec(client, 'nvidia-smi -L');
    client.end();
    // Assess
    expect(wrong).toBe('client-authentication');
    expect(echoed).toEqual({ stdout: `${command}\n`, code: 0 });
    expect(again).toEqual({ stdout: 'nvidia-smi -L\n', code: 0 });
    expect(sim.control.sshLogins(order.id)).toEqual({ accepted: 1, refused: 1, key_accepted: 0, key_refused: 0 });
  });

  it.each([
    ['without a pty', false as const, '\n'],
    ['with a pty', { term: 'xterm', rows: 24, cols: 80 }, '\r\n'],
  ])('opens a shell %s that greets with the order, echoes lines and closes on exit', async (_what, pty, newline) => {
    // Prepare
    const order = await rent({ ssh_key: OWN.publicKey });
    const { client } = await login(order.endpoint, { privateKey: OWN.privateKey });
    // Act
    const channel = await new Promise<ClientChannel>((resolve, reject) =>
      client.shell(pty, (error, stream) => (error ? reject(error) : resolve(stream))),
    );
    const output = drain(channel);
    channel.write('hello there\n');
    channel.write('nvidia-smi\n');
    channel.write('exit\n');
    const { stdout, code } = await output;
    client.end();
    // Assess
    const [greeting] = stdout.split(newline);
    expect(greeting).toContain(`order ${order.id}`);
    expect(stdout).toContain(`hello there${newline}`);
    expect(gpuRows(stdout.replace(/\r\n/g, '\n')).map((row) => row.name)).toEqual(order.gpus);
    expect(code).toBe(0);
  });

  it("keeps the relay's readiness probe working: a password login that opens no session", async () => {
    const order = await rent({ ssh_password: PASSWORD, ssh_key: OWN.publicKey });
    const result = await probeSshLogin(order.endpoint, { allowPrivate: true, password: PASSWORD });
    expect(result).toMatchObject({ answered: true, host_key_sha256: expect.stringMatching(/^SHA256:/) });
    expect(sim.control.sshLogins(order.id)).toMatchObject({ accepted: 1, key_accepted: 0 });
  });

  it('serves the host key line on GET /_sim/ssh-host-key', async () => {
    const res = await fetch(`${sim.url}/_sim/ssh-host-key`);
    expect(await res.json()).toEqual({ host_key: sim.control.sshHostKey() });
  });

  (existsSync(OPENSSH) ? it : it.skip)(
    'lets the system OpenSSH client in with an ed25519 key, the host key pinned in known_hosts',
    async () => {
      // Prepare: a HOME of its own, the private key at 0600 and a known_hosts line pinning the control's host key
      const order = await rent({ ssh_key: OWN.publicKey, autossh_entrypoint: true });
      const home = await mkdtemp(join(tmpdir(), 'sim-openssh-'));
      const keyFile = join(home, 'id_ed25519');
      const knownHosts = join(home, 'known_hosts');
      await writeFile(keyFile, OWN.privateKey, { mode: 0o600 });
      await writeFile(knownHosts, `[127.0.0.1]:${order.endpoint.port} ${sim.control.sshHostKey()}\n`);
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home };
      try {
        // Act
        const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
          execFile(
            OPENSSH,
            [
              ...['-i', keyFile, '-p', String(order.endpoint.port), '-F', '/dev/null'],
              ...['-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes'],
              ...['-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'LogLevel=ERROR'],
              ...['root@127.0.0.1', 'nvidia-smi'],
            ],
            { env, timeout: 30_000 },
            (error, stdout, stderr) =>
              resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
          ),
        );
        // Assess
        expect(run).toMatchObject({ code: 0, stderr: '' });
        expect(gpuRows(run.stdout).map((row) => row.name)).toEqual(order.gpus);
        expect(sim.control.sshLogins(order.id)).toMatchObject({ key_accepted: 1, accepted: 0 });
      } finally {
        await rm(home, { recursive: true, force: true });
      }
    },
  );
});
