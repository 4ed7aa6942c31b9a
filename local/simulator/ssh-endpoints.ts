/**
 * The simulator's ssh endpoints: one TCP listener on 127.0.0.1 per order, opened when the order is
 * created and closed when it ends (and on the simulator's close). A connection gets an SSH banner
 * once the order's ssh answers (it runs and `sshDelayMs` has passed since it started, decided by the
 * simulator), else it is reset, as production's freshly `online` orders do for minutes
 * (marketplace-live.md, S6). An answered connection is a real SSH server (ssh2's, one generated
 * ed25519 host key per simulator process, its public line in simSshHostKeyLine): its banner is what
 * READINESS_PROBE=ssh reads. A login as any user succeeds once the order's login works (issue 31 §4:
 * a banner before the password works, "Permission denied" until then) with the order's ssh_password
 * (`accepts`) or with its `ssh_key` (`access.authorizedKey`: the offered key must be that key and its
 * signature must verify). A logged-in session runs nothing (issue 37 §7): `exec nvidia-smi` prints a
 * table of the order's GPUs, any other command is echoed back; a shell greets with the order and
 * echoes lines until `exit`. The readiness probe logs in and opens no session.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import {
  Server as SshServer,
  utils as sshUtils,
  type AuthContext,
  type PublicKeyAuthContext,
  type ServerChannel,
  type Session,
  type SessionAccept,
} from 'ssh2';
import { GPU_MODELS } from './catalogue';
import { parseSshPublicKeyLine } from './ssh-public-key';

/** Where an order's ssh answers. */
export interface SimSshEndpoint {
  readonly host: string;
  readonly port: number;
}

/** Logins on an order's ssh endpoint: `accepted`/`refused` by password, `key_accepted`/`key_refused` by public key. */
export interface SimSshLogins {
  readonly accepted: number;
  readonly refused: number;
  /** Key logins whose signature verified against the order's ssh_key. */
  readonly key_accepted: number;
  /** Keys offered that are not the order's (or not yet usable), and signatures that did not verify. */
  readonly key_refused: number;
}

/** What an order's fake machine shows in a session. */
export interface SimSshMachine {
  /** One entry per card, e.g. `NVIDIA GeForce RTX 4090` (the order's server gpu_array). */
  readonly gpus: readonly string[];
}

/** Key logins and sessions: what the simulator knows of an order beyond its password. */
export interface SimSshAccess {
  /** The public key line a key login on order `id` must match now; undefined while no key login works (no ssh_key, or not ready). */
  readonly authorizedKey?: (orderId: number) => string | undefined;
  /** The machine order `id` runs on, for its sessions. */
  readonly machine?: (orderId: number) => SimSshMachine | undefined;
}

/** Connections an order's ssh endpoint took, by outcome. */
export interface SimSshConnections {
  readonly answered: number;
  readonly reset: number;
}

export const SIM_SSH_BANNER = 'SSH-2.0-OpenSSH_9.6 gpu-order-relay-simulator\r\n';
/** The software part of SIM_SSH_BANNER, as ssh2's server takes it (`SSH-2.0-` is its own). */
const SIM_SSH_IDENT = 'OpenSSH_9.6 gpu-order-relay-simulator';
const SSH_HOST = '127.0.0.1';

interface Listener {
  readonly server: Server;
  readonly sockets: Set<Socket>;
  readonly endpoint: SimSshEndpoint;
  answered: number;
  reset: number;
  logins: number;
  refusedLogins: number;
  keyLogins: number;
  refusedKeyLogins: number;
}

const loginsOf = (listener: Listener | undefined): SimSshLogins => ({
  accepted: listener?.logins ?? 0,
  refused: listener?.refusedLogins ?? 0,
  key_accepted: listener?.keyLogins ?? 0,
  key_refused: listener?.refusedKeyLogins ?? 0,
});

/** The methods a refused login may go on with. */
const AUTH_METHODS: ('publickey' | 'password')[] = ['publickey', 'password'];

/**
 * The simulator's ssh host key, one per process. ssh2's generateKeyPairSync('ed25519') now and then
 * returns a key its own parser refuses ("Malformed OpenSSH private key", seen once in a CI run), so a
 * key is kept only once ssh2 parses it back.
 */
let hostKey: string | undefined;
const simHostKey = (): string => {
  for (let attempt = 0; hostKey === undefined; attempt += 1) {
    const candidate = sshUtils.generateKeyPairSync('ed25519').private;
    if (!(sshUtils.parseKey(candidate) instanceof Error)) hostKey = candidate;
    else if (attempt >= 9) throw new Error('could not generate an ssh host key ssh2 can parse');
  }
  return hostKey;
};

/** The simulator's ssh host key as a public key line (`ssh-ed25519 AAAA…`), as known_hosts pins it. */
export const simSshHostKeyLine = (): string => {
  const key = sshUtils.parseKey(simHostKey());
  if (key instanceof Error) throw key;
  return `${key.type} ${key.getPublicSSH().toString('base64')}`;
};

export class SimSshEndpoints {
  private readonly listeners = new Map<number, Listener>();
  private readonly opening = new Map<number, Promise<SimSshEndpoint>>();
  /** Orders that ended while their listener was still opening: it closes as soon as it listens. */
  private readonly ended = new Set<number>();
  /** Connections of closed listeners, kept so the control still reports them after the order ended. */
  private readonly history = new Map<number, { connections: SimSshConnections; logins: SimSshLogins }>();
  /** Bumped by closeAll: a listener that finishes opening after it belongs to an earlier reset and closes. */
  private generation = 0;
  private readonly closing = new Set<Promise<void>>();

  /** One host key for every endpoint of this simulator, generated once. */
  private readonly ssh: SshServer;

  /**
   * @param answers whether order `id`'s ssh answers now (a banner) or not (the connection is reset)
   * @param accepts whether a login with `password` works on order `id` now
   * @param access key logins and what sessions show (none: no key login, sessions name no GPUs)
   */
  public constructor(
    private readonly answers: (orderId: number) => boolean,
    private readonly accepts: (orderId: number, password: string) => boolean = () => false,
    private readonly access: SimSshAccess = {},
  ) {
    this.ssh = new SshServer({ hostKeys: [simHostKey()], ident: SIM_SSH_IDENT }, (client) => {
      // The order is the listener's that took the socket (ssh2 keeps the socket as `_sock`).
      const orderId = (client as unknown as { _sock?: { simOrderId?: number } })._sock?.simOrderId;
      client.on('error', () => undefined);
      client.on('authentication', (ctx) => this.authenticate(orderId, ctx));
      // Each session runs the fake machine; the client closes the connection when it is done.
      client.on('ready', () =>
        client.on('session', (accept) => {
          if (orderId !== undefined) this.serve(orderId, accept());
        }),
      );
    });
    this.ssh.on('error', () => undefined);
  }

  /** The public line of the host key every endpoint of this process presents (`ssh-ed25519 AAAA…`). */
  public hostKey(): string {
    return simSshHostKeyLine();
  }

  /** Logins the order's endpoint accepted and refused, by password and by key (also after it closed). */
  public logins(orderId: number): SimSshLogins {
    const listener = this.listeners.get(orderId);
    return listener ? loginsOf(listener) : (this.history.get(orderId)?.logins ?? loginsOf(undefined));
  }

  /** Opens the order's listener (once); resolves with its endpoint. */
  public open(orderId: number): Promise<SimSshEndpoint> {
    const open = this.listeners.get(orderId);
    if (open) return Promise.resolve(open.endpoint);
    const pending = this.opening.get(orderId);
    if (pending) return pending;
    const started = this.listen(orderId, this.generation).finally(() => {
      if (this.opening.get(orderId) === started) this.opening.delete(orderId);
    });
    this.opening.set(orderId, started);
    return started;
  }

  /** The connections the order's endpoint took so far. */
  public connections(orderId: number): SimSshConnections {
    const listener = this.listeners.get(orderId);
    return listener
      ? { answered: listener.answered, reset: listener.reset }
      : (this.history.get(orderId)?.connections ?? { answered: 0, reset: 0 });
  }

  /** Closes the order's listener and its connections (the order ended). */
  public close(orderId: number): void {
    const listener = this.listeners.get(orderId);
    if (!listener) {
      if (this.opening.has(orderId)) this.ended.add(orderId);
      return;
    }
    this.listeners.delete(orderId);
    this.history.set(orderId, {
      connections: { answered: listener.answered, reset: listener.reset },
      logins: loginsOf(listener),
    });
    this.stop(listener);
  }

  /** Closes every listener at once (the simulator's reset and close); resolves once all are closed, those still opening included. */
  public async closeAll(): Promise<void> {
    this.generation += 1;
    const opening = [...this.opening.values()];
    this.opening.clear();
    this.ended.clear();
    this.history.clear();
    for (const listener of this.listeners.values()) this.stop(listener);
    this.listeners.clear();
    await Promise.allSettled(opening);
    await Promise.all([...this.closing]);
  }

  private stop(listener: Listener): void {
    for (const socket of listener.sockets) socket.destroy();
    const closed = new Promise<void>((resolve) => listener.server.close(() => resolve()));
    this.closing.add(closed);
    void closed.then(() => this.closing.delete(closed));
  }

  private authenticate(orderId: number | undefined, ctx: AuthContext): void {
    const listener = orderId === undefined ? undefined : this.listeners.get(orderId);
    if (orderId === undefined) {
      ctx.reject(AUTH_METHODS);
      return;
    }
    if (ctx.method === 'password') {
      const ok = this.accepts(orderId, ctx.password);
      if (listener) listener[ok ? 'logins' : 'refusedLogins'] += 1;
      if (ok) ctx.accept();
      else ctx.reject(AUTH_METHODS);
      return;
    }
    if (ctx.method === 'publickey') {
      const outcome = this.checkKey(orderId, ctx);
      // A key offered without a signature is a question ("would this key do?"), not a login.
      if (outcome !== 'usable' && listener) listener[outcome === 'verified' ? 'keyLogins' : 'refusedKeyLogins'] += 1;
      if (outcome === 'refused') ctx.reject(AUTH_METHODS);
      else ctx.accept();
      return;
    }
    ctx.reject(AUTH_METHODS);
  }

  /** `verified`: the order's key, signed; `usable`: the order's key, offered unsigned; else `refused`. */
  private checkKey(orderId: number, ctx: PublicKeyAuthContext): 'verified' | 'usable' | 'refused' {
    const line = this.access.authorizedKey?.(orderId);
    const authorized = line === undefined ? undefined : parseSshPublicKeyLine(line);
    // The blob names the key type and holds the key: equal blobs are the same key (an RSA key offered as rsa-sha2-* included).
    if (line === undefined || !authorized?.blob.equals(ctx.key.data)) return 'refused';
    if (ctx.signature === undefined || ctx.blob === undefined) return 'usable';
    const key = sshUtils.parseKey(line);
    if (key instanceof Error) return 'refused';
    return key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true ? 'verified' : 'refused';
  }

  /** A session on order `orderId`'s fake machine: exec runs `runFakeCommand`, a shell echoes lines. */
  private serve(orderId: number, session: Session): void {
    const machine = (): SimSshMachine => this.access.machine?.(orderId) ?? { gpus: [] };
    let pty = false;
    // Requests sent without wanting a reply come without `accept`.
    const ok = (accept: SessionAccept | undefined) => accept?.();
    session.on('pty', (accept) => {
      pty = true;
      ok(accept);
    });
    session.on('env', (accept) => ok(accept));
    session.on('window-change', (accept) => ok(accept));
    session.on('exec', (accept, _reject, info) => {
      const stream = accept();
      const { output, exitCode } = runFakeCommand(info.command, machine());
      stream.write(pty ? output.replace(/\n/g, '\r\n') : output);
      finish(stream, exitCode);
    });
    session.on('shell', (accept) => fakeShell(accept(), orderId, machine(), pty));
  }

  private async listen(orderId: number, generation: number): Promise<SimSshEndpoint> {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      const listener = this.listeners.get(orderId);
      socket.on('error', () => undefined);
      if (!listener || listener.server !== server) {
        socket.destroy();
        return;
      }
      if (!this.answers(orderId)) {
        listener.reset += 1;
        socket.resetAndDestroy();
        return;
      }
      listener.answered += 1;
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      // ssh2's server takes the connection: the banner, then the login rules of `accepts`.
      (socket as Socket & { simOrderId?: number }).simOrderId = orderId;
      this.ssh.injectSocket(socket);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, SSH_HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const listener: Listener = {
      server,
      sockets,
      endpoint: { host: SSH_HOST, port: (server.address() as AddressInfo).port },
      answered: 0,
      reset: 0,
      logins: 0,
      refusedLogins: 0,
      keyLogins: 0,
      refusedKeyLogins: 0,
    };
    if (generation !== this.generation) {
      this.stop(listener);
    } else if (this.ended.delete(orderId)) {
      this.history.set(orderId, { connections: { answered: 0, reset: 0 }, logins: loginsOf(listener) });
      this.stop(listener);
    } else {
      this.listeners.set(orderId, listener);
    }
    return listener.endpoint;
  }
}

/** Ends a command's channel: its exit status, then EOF and close (what an OpenSSH client waits for). */
const finish = (stream: ServerChannel, exitCode: number): void => {
  stream.exit(exitCode);
  stream.end();
};

/** Board power limit per card (W) by model; others 300. */
const POWER_LIMIT_W: Readonly<Record<string, number>> = {
  'NVIDIA GeForce RTX 4090': 450,
  'NVIDIA GeForce RTX 3090': 350,
  'NVIDIA GeForce RTX 3080': 320,
  'NVIDIA H100 80GB HBM3': 700,
};

const two = (n: number): string => String(n).padStart(2, '0');
/** `Mon Jan 15 10:00:00 2024`, as nvidia-smi heads its table. */
const smiDate = (date: Date): string => {
  const [day, month, dayOfMonth] = date.toDateString().split(' ');
  return `${day} ${month} ${dayOfMonth} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())} ${date.getFullYear()}`;
};

/**
 * What `nvidia-smi` prints on a machine with these cards (driver 550's layout, idle cards, no
 * processes), one row per card; on a machine without cards what it prints there, with its exit code 6.
 */
export const fakeNvidiaSmi = (gpus: readonly string[], now = new Date()): { output: string; exitCode: number } => {
  if (gpus.length === 0) return { output: 'No devices were found\n', exitCode: 6 };
  /** A rule across the three columns: `+---+` between cards, `|===+===|` under the heading. */
  const rule = (fill: '-' | '=') => {
    const end = fill === '-' ? '+' : '|';
    return `${end}${fill.repeat(41)}+${fill.repeat(24)}+${fill.repeat(22)}${end}`;
  };
  const row = (a: string, b: string, c: string) => `|${a}|${b}|${c}|`;
  const full = (text: string) => `|${text.padEnd(89)}|`;
  const lines = [
    `${smiDate(now)}       `,
    `+${'-'.repeat(89)}+`,
    full(' NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4'),
    rule('-'),
    row(' GPU  Name                 Persistence-M ', ' Bus-Id          Disp.A ', ' Volatile Uncorr. ECC '),
    row(' Fan  Temp   Perf          Pwr:Usage/Cap ', '           Memory-Usage ', ' GPU-Util  Compute M. '),
    row(' '.repeat(41), ' '.repeat(24), '               MIG M. '),
    rule('='),
  ];
  gpus.forEach((name, index) => {
    const shown = name.length > 29 ? `${name.slice(0, 26)}...` : name;
    const memMiB = (GPU_MODELS.find((m) => m.name === name)?.memGb ?? 24) * 1_024 - 12;
    const power = `${String(15 + index).padStart(3)}W / ${String(POWER_LIMIT_W[name] ?? 300).padStart(4)}W `;
    lines.push(
      row(
        `${String(index).padStart(4)}  ${shown}`.padEnd(37) + 'Off ',
        `   00000000:${(index + 1).toString(16).toUpperCase().padStart(2, '0')}:00.0 Off `,
        'Off '.padStart(22),
      ),
      row(
        `  0%   ${30 + index}C    P8`.padEnd(41 - power.length) + power,
        `1MiB / ${memMiB}MiB `.padStart(24),
        '      0%      Default ',
      ),
      row(' '.repeat(41), ' '.repeat(24), 'N/A '.padStart(22)),
      rule('-'),
    );
  });
  lines.push(
    ' '.repeat(91),
    `+${'-'.repeat(89)}+`,
    full(' Processes:'),
    full('  GPU   GI   CI        PID   Type   Process name                              GPU Memory'),
    full('        ID   ID                                                               Usage'),
    `|${'='.repeat(89)}|`,
    full('  No running processes found'),
    `+${'-'.repeat(89)}+`,
  );
  return { output: `${lines.join('\n')}\n`, exitCode: 0 };
};

/** A command on the fake machine: `nvidia-smi` prints its table; anything else runs nothing and is echoed. */
export const runFakeCommand = (command: string, machine: SimSshMachine): { output: string; exitCode: number } =>
  command.trim() === 'nvidia-smi' ? fakeNvidiaSmi(machine.gpus) : { output: `${command}\n`, exitCode: 0 };

/**
 * A shell on the fake machine: a greeting naming the order, then each line runs as runFakeCommand
 * does until `exit` (or EOF; with a pty also Ctrl-D on an empty line). With a pty it echoes what is
 * typed, ends lines with CRLF and prompts, as a terminal's line discipline would.
 */
const fakeShell = (stream: ServerChannel, orderId: number, machine: SimSshMachine, pty: boolean): void => {
  const newline = pty ? '\r\n' : '\n';
  const prompt = pty ? `root@sim-order-${orderId}:~# ` : '';
  const cards = machine.gpus.length > 0 ? `${machine.gpus.length}x ${machine.gpus[0]}` : 'no GPU';
  stream.write(
    `gpu-order-relay simulator: order ${orderId} (${cards}); commands run nothing and are echoed back${newline}${prompt}`,
  );
  let line = '';
  let afterCr = false;
  let done = false;
  const close = () => {
    done = true;
    finish(stream, 0);
  };
  const run = () => {
    const command = line;
    line = '';
    if (/^\s*(exit|logout)\s*$/.test(command)) return close();
    if (command.trim() !== '') stream.write(runFakeCommand(command, machine).output.replace(/\n/g, newline));
    stream.write(prompt);
  };
  stream.on('data', (chunk: Buffer) => {
    for (const char of chunk.toString('utf8')) {
      if (done) return;
      const wasCr = afterCr;
      afterCr = char === '\r';
      if (char === '\n' && wasCr) continue;
      if (char === '\r' || char === '\n') {
        if (pty) stream.write('\r\n');
        run();
      } else if (pty && (char === '\x7f' || char === '\b')) {
        if (line.length > 0) stream.write('\b \b');
        line = line.slice(0, -1);
      } else if (pty && char === '\x03') {
        line = '';
        stream.write(`^C\r\n${prompt}`);
      } else if (pty && char === '\x04') {
        if (line === '') close();
      } else {
        line += char;
        if (pty) stream.write(char);
      }
    }
  });
  stream.on('end', () => {
    if (done) return;
    if (line !== '') run();
    if (!done) close();
  });
};
