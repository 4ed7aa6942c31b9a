/**
 * `gpu-relay ssh TASK_ID|ORDER_ID [-- COMMAND…]` and `gpu-relay ssh-config TASK_ID|ORDER_ID` (issue 37 §5):
 * read the task's result (GET /webhook/tasks/{task_id}), pin its `access.ssh` host key in the CLI's
 * own known_hosts file, then run the system ssh against that file with StrictHostKeyChecking=yes
 * (ssh), or print a `Host` block that does the same (ssh-config). No host key, no login: an unpinned
 * login is never offered. An order id is resolved through this machine's record of create-order
 * results (the relay has no route from an order to its task).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Values } from './args';
import { usageError } from './commands';
import type { Connection } from './connection';
import { connectionOf, requireSecret } from './connection';
import type { HostKey, PinOutcome } from './known-hosts';
import { knownHostsName, parseHostKey, pinHostKey } from './known-hosts';
import { CliError, err, out } from './output';
import { defaultPublicKeyFile, expandHome, tildePath } from './ssh-key-file';
import { knownHostsFile, orderRecordFile, recordCreateOrderResult, taskOfOrder } from './state-files';
import { getTask } from './wait';

/** Where and how to log in, as the result's `access.ssh` says, checked. */
export interface SshTarget {
  readonly orderId?: number;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly hostKey: HostKey;
}

const TASK_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const ORDER_ID = /^\d{1,15}$/;
/** A DNS name or an IP literal; never anything ssh could read as an option. */
const HOST = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/;
const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const HOST_ALIAS = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The task id a TASK_ID|ORDER_ID positional stands for. */
export const resolveTaskId = (command: string, id: string): string => {
  if (ORDER_ID.test(id)) {
    const task = taskOfOrder(Number(id));
    if (task === undefined)
      throw new CliError(
        `${command}: order ${id} is not in this machine's record (${orderRecordFile()}): the relay has no route from an order to its task. ` +
          "Pass the task id instead (create-order's `queued task …` line), or rent with --wait from this machine.",
      );
    return task;
  }
  if (!TASK_ID.test(id)) throw usageError(command, `expected a TASK_ID or an ORDER_ID, got '${id}'`);
  return id;
};

/** The host key of `access.ssh`: `host_key`, else the key part of its `known_hosts` line for that host and port. */
const hostKeyOf = (ssh: Record<string, unknown>, host: string, port: number): HostKey | undefined => {
  if (typeof ssh.host_key === 'string') return parseHostKey(ssh.host_key);
  if (typeof ssh.known_hosts !== 'string' || ssh.known_hosts.includes('\n')) return undefined;
  const [name, ...key] = ssh.known_hosts.trim().split(/\s+/);
  return name === knownHostsName(host, port) ? parseHostKey(key.join(' ')) : undefined;
};

/** The login target of a task record's result; a CliError saying why when there is none to pin. */
export const sshTargetOf = (command: string, taskId: string, record: unknown): SshTarget => {
  const { state, result } = (record ?? {}) as { state?: unknown; result?: unknown };
  const r = (result ?? undefined) as Record<string, unknown> | undefined;
  if (r === undefined)
    throw new CliError(
      `${command}: task ${taskId} has no result yet (state ${String(state ?? 'unknown')}); gpu-relay task ${taskId} --wait waits for it`,
    );
  if (r.success !== true || typeof r.order_id !== 'number')
    throw new CliError(
      `${command}: task ${taskId} rented no server${typeof r.error === 'string' ? `: ${r.error}` : ''}`,
      1,
    );
  const connection = typeof r.ssh_connection === 'string' ? ` (its ssh_connection: ${r.ssh_connection})` : '';
  const access = r.access as { ssh?: Record<string, unknown> } | undefined;
  const ssh = access?.ssh;
  if (!ssh || typeof ssh !== 'object')
    throw new CliError(
      `${command}: the result of task ${taskId} has no access.ssh (a relay from before access results, issue 37)${connection}`,
    );
  const host = ssh.host;
  const port = ssh.port;
  const user = ssh.user ?? 'root';
  if (
    typeof host !== 'string' ||
    !HOST.test(host) ||
    !Number.isInteger(port) ||
    (port as number) < 1 ||
    (port as number) > 65535
  )
    throw new CliError(`${command}: the result of task ${taskId} names no usable ssh host and port${connection}`);
  if (typeof user !== 'string' || !USER.test(user))
    throw new CliError(`${command}: the result of task ${taskId} names no usable ssh user${connection}`);
  const hostKey = hostKeyOf(ssh, host, port as number);
  if (hostKey === undefined)
    throw new CliError(
      `${command}: the result of task ${taskId} carries no host key for ${knownHostsName(host, port as number)}, so the login cannot be pinned; ` +
        `refusing an unpinned login${connection}`,
    );
  return { orderId: r.order_id, host, port: port as number, user, hostKey };
};

/** The ssh(1) arguments of a pinned login. */
export const sshArgv = (
  target: Pick<SshTarget, 'host' | 'port' | 'user'>,
  knownHosts: string,
  {
    identity,
    remote = [],
    identitiesOnly = true,
  }: { identity?: string; remote?: readonly string[]; identitiesOnly?: boolean } = {},
): string[] => [
  '-o',
  'StrictHostKeyChecking=yes',
  '-o',
  `UserKnownHostsFile=${knownHosts}`,
  '-p',
  String(target.port),
  ...(identity === undefined ? [] : ['-i', identity, ...(identitiesOnly ? ['-o', 'IdentitiesOnly=yes'] : [])]),
  `${target.user}@${target.host}`,
  ...remote,
];

/** An ssh_config value: quoted when it holds a space. */
const configValue = (value: string): string => (/\s/.test(value) ? `"${value}"` : value);

/** The `Host` block of ssh-config. */
export const sshConfigBlock = (
  name: string,
  target: Pick<SshTarget, 'host' | 'port' | 'user'>,
  knownHosts: string,
  identity?: string,
): string =>
  [
    `Host ${name}`,
    `  HostName ${target.host}`,
    `  Port ${target.port}`,
    `  User ${target.user}`,
    `  UserKnownHostsFile ${configValue(knownHosts)}`,
    '  StrictHostKeyChecking yes',
    ...(identity === undefined ? [] : [`  IdentityFile ${configValue(identity)}`, '  IdentitiesOnly yes']),
  ].join('\n');

/** --identity FILE: the private key file, which must exist (its .pub is the wrong half). */
/** The private key beside the public one create-order offers by default, when it exists. */
const defaultPrivateKeyFile = (): string | undefined => {
  const pub = defaultPublicKeyFile();
  const file = pub?.slice(0, -'.pub'.length);
  return file !== undefined && existsSync(file) ? file : undefined;
};

const identityOf = (command: string, values: Values): string | undefined => {
  const raw = values.identity;
  if (raw === undefined) return undefined;
  const file = expandHome(raw);
  if (file.endsWith('.pub'))
    throw usageError(command, `--identity takes the private key file, not its public half: ${raw.slice(0, -4)}`);
  if (!existsSync(file)) throw usageError(command, `--identity: no such file ${raw}`);
  return file;
};

const PIN_WORDS: Record<PinOutcome, string> = {
  added: 'pinned',
  'already pinned': 'already pinned',
  replaced: 'REPLACED the pinned',
};

/** Reads the task, pins its host key and returns where to log in. */
const pinnedTarget = async (
  command: string,
  conn: Connection,
  id: string,
  values: Values,
): Promise<{ target: SshTarget; knownHosts: string }> => {
  const taskId = resolveTaskId(command, id);
  const record = await getTask(conn, taskId, command);
  const target = sshTargetOf(command, taskId, record);
  recordCreateOrderResult(taskId, (record as { result?: unknown }).result);
  if (ORDER_ID.test(id) && target.orderId !== Number(id))
    err(`note: task ${taskId} placed order ${id}; its result now names order ${target.orderId}`);
  const knownHosts = knownHostsFile();
  const outcome = pinHostKey(knownHosts, target.host, target.port, target.hostKey, {
    replace: Boolean(values['replace-host-key']),
  });
  err(
    `${PIN_WORDS[outcome]} ${target.hostKey.type} host key of ${knownHostsName(target.host, target.port)} in ${tildePath(knownHosts)}`,
  );
  return { target, knownHosts };
};

/** Runs ssh with inherited stdio; resolves with its exit code (128 + signal number when a signal ended it). */
const runSshProgram = (program: string, args: readonly string[]): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: 'inherit' });
    // ^C reaches ssh too (same process group): let ssh decide, and pass its exit code on.
    const ignore = (): void => undefined;
    const sigint = process.listeners('SIGINT');
    process.removeAllListeners('SIGINT');
    process.on('SIGINT', ignore);
    const restore = (): void => {
      process.off('SIGINT', ignore);
      for (const listener of sigint) process.on('SIGINT', listener);
    };
    child.on('error', (error: NodeJS.ErrnoException) => {
      restore();
      reject(new CliError(`cannot run ${program} (GPU_RELAY_SSH names another): ${error.code ?? error.message}`));
    });
    child.on('close', (code, signal) => {
      restore();
      resolve(code ?? 128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  });

export const runSsh = async (
  values: Values,
  positionals: readonly string[],
  argv: readonly string[],
): Promise<number> => {
  const [id, ...remote] = positionals;
  if (id === undefined) throw usageError('ssh', 'expected a TASK_ID or an ORDER_ID');
  if (remote.length > 0 && !argv.includes('--'))
    throw usageError('ssh', `put the remote command after --: gpu-relay ssh ${id} -- ${remote.join(' ')}`);
  const identity = identityOf('ssh', values);
  const conn = connectionOf('ssh', values);
  requireSecret('ssh', conn.secret);
  const { target, knownHosts } = await pinnedTarget('ssh', conn, id, values);
  const program = process.env.GPU_RELAY_SSH || 'ssh';
  // Without --identity: the private half of the key create-order offers (~/.ssh/id_ed25519, with $HOME
  // as the CLI reads it: OpenSSH reads the passwd entry's home), beside ssh's own keys and agent.
  const offered = identity ?? defaultPrivateKeyFile();
  return runSshProgram(
    program,
    sshArgv(target, knownHosts, { identity: offered, remote, identitiesOnly: identity !== undefined }),
  );
};

export const runSshConfig = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length !== 1) throw usageError('ssh-config', 'expected exactly one TASK_ID or ORDER_ID');
  if (values.name !== undefined && !HOST_ALIAS.test(values.name))
    throw usageError('ssh-config', `--name takes letters, digits, '.', '_' and '-', got '${values.name}'`);
  const identity = identityOf('ssh-config', values);
  const conn = connectionOf('ssh-config', values);
  requireSecret('ssh-config', conn.secret);
  const { target, knownHosts } = await pinnedTarget('ssh-config', conn, positionals[0], values);
  out(sshConfigBlock(values.name ?? `gpu-${target.orderId}`, target, knownHosts, identity));
  return 0;
};
