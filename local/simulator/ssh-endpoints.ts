/**
 * The simulator's ssh endpoints: one TCP listener on 127.0.0.1 per order, opened when the order is
 * created and closed when it ends (and on the simulator's close). A connection gets an SSH banner
 * once the order's ssh answers (it runs and `sshDelayMs` has passed since it started, decided by the
 * simulator), else it is reset, as production's freshly `online` orders do for minutes
 * (marketplace-live.md, S6). An answered connection is a real SSH server (ssh2's, one generated
 * ed25519 host key per simulator): its banner is what READINESS_PROBE=ssh reads, and a password
 * login as any user succeeds only with the order's ssh_password once `accepts` says so (issue 31 §4:
 * a banner before the password works, "Permission denied" until then). A session is closed at once.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Server as SshServer, utils as sshUtils } from 'ssh2';

/** Where an order's ssh answers. */
export interface SimSshEndpoint {
  readonly host: string;
  readonly port: number;
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
}

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

export class SimSshEndpoints {
  private readonly listeners = new Map<number, Listener>();
  private readonly opening = new Map<number, Promise<SimSshEndpoint>>();
  /** Orders that ended while their listener was still opening: it closes as soon as it listens. */
  private readonly ended = new Set<number>();
  /** Connections of closed listeners, kept so the control still reports them after the order ended. */
  private readonly history = new Map<number, SimSshConnections>();
  /** Bumped by closeAll: a listener that finishes opening after it belongs to an earlier reset and closes. */
  private generation = 0;
  private readonly closing = new Set<Promise<void>>();

  /** One host key for every endpoint of this simulator, generated once. */
  private readonly ssh: SshServer;

  /**
   * @param answers whether order `id`'s ssh answers now (a banner) or not (the connection is reset)
   * @param accepts whether a login with `password` works on order `id` now
   */
  public constructor(
    private readonly answers: (orderId: number) => boolean,
    private readonly accepts: (orderId: number, password: string) => boolean = () => false,
  ) {
    this.ssh = new SshServer({ hostKeys: [simHostKey()], ident: SIM_SSH_IDENT }, (client) => {
      // The order is the listener's that took the socket (ssh2 keeps the socket as `_sock`).
      const orderId = (client as unknown as { _sock?: { simOrderId?: number } })._sock?.simOrderId;
      client.on('error', () => undefined);
      client.on('authentication', (ctx) => {
        const listener = orderId === undefined ? undefined : this.listeners.get(orderId);
        if (ctx.method === 'password' && orderId !== undefined && this.accepts(orderId, ctx.password)) {
          if (listener) listener.logins += 1;
          ctx.accept();
          return;
        }
        if (ctx.method === 'password' && listener) listener.refusedLogins += 1;
        ctx.reject(['password']);
      });
      // Logged in: nothing to run; the session ends when the client closes.
      client.on('ready', () => client.on('session', (accept) => accept().on('close', () => client.end())));
    });
    this.ssh.on('error', () => undefined);
  }

  /** Password logins the order's endpoint accepted and refused. */
  public logins(orderId: number): { readonly accepted: number; readonly refused: number } {
    const listener = this.listeners.get(orderId);
    return listener ? { accepted: listener.logins, refused: listener.refusedLogins } : { accepted: 0, refused: 0 };
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
      : (this.history.get(orderId) ?? { answered: 0, reset: 0 });
  }

  /** Closes the order's listener and its connections (the order ended). */
  public close(orderId: number): void {
    const listener = this.listeners.get(orderId);
    if (!listener) {
      if (this.opening.has(orderId)) this.ended.add(orderId);
      return;
    }
    this.listeners.delete(orderId);
    this.history.set(orderId, { answered: listener.answered, reset: listener.reset });
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
    };
    if (generation !== this.generation) {
      this.stop(listener);
    } else if (this.ended.delete(orderId)) {
      this.history.set(orderId, { answered: 0, reset: 0 });
      this.stop(listener);
    } else {
      this.listeners.set(orderId, listener);
    }
    return listener.endpoint;
  }
}
