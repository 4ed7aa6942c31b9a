/**
 * The task-starting commands (create-order, cancel-order, extend-order, set-spot-price, price-alert,
 * status): send the signed request, print the 202, and with --wait print the task's result, received
 * on a local callback listener or by polling the task record.
 */
import type { Values } from './args';
import { parseSeconds, parseUrl } from './args';
import type { CallbackListener } from './callback-listener';
import { callbackSecretOf, callbackVerifier, startCallbackListener } from './callback-listener';
import { usageError } from './commands';
import type { Connection } from './connection';
import { connectionOf, requireSecret } from './connection';
import { CliError, EXIT_OK, EXIT_TASK_FAILED, err, isFailedResult, out, pretty, printAnswer } from './output';
import { buildBody } from './request-body';
import { send } from './signed-request';
import { pollTask, waitWithProgress } from './wait';

const finishWithResult = (result: unknown, failed: boolean): number => {
  out(pretty(result));
  return failed ? EXIT_TASK_FAILED : EXIT_OK;
};

/** Flags that only make sense with --wait, and the combinations that contradict each other. */
const checkWaitFlags = (command: string, values: Values): void => {
  for (const flag of ['poll', 'interval', 'timeout', 'listen-port', 'listen-host', 'public-url'] as const) {
    if (values[flag] !== undefined && !values.wait) throw usageError(command, `--${flag} only makes sense with --wait`);
  }
  const listen = values.wait && !values.poll;
  if (listen && values.callback !== undefined) {
    throw usageError(
      command,
      '--wait sets callback_url to its own listener; drop --callback, or add --poll to keep yours',
    );
  }
  if (
    !listen &&
    (['listen-port', 'listen-host', 'public-url', 'callback-secret'] as const).some((f) => values[f] !== undefined)
  ) {
    throw usageError(
      command,
      '--listen-port, --listen-host, --public-url and --callback-secret need --wait without --poll',
    );
  }
};

const listenerFor = async (command: string, values: Values, conn: Connection): Promise<CallbackListener> => {
  const port = values['listen-port'] === undefined ? 0 : Number(values['listen-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw usageError(command, `--listen-port must be a port number, got '${values['listen-port']}'`);
  }
  const publicUrl =
    values['public-url'] === undefined ? undefined : parseUrl(command, '--public-url', values['public-url']);
  // Checked before anything is sent: without the callback signing secret no callback could be trusted.
  const verifier = callbackVerifier(command, callbackSecretOf(values, conn.localCallbackSecret));
  return startCallbackListener({ host: values['listen-host'] ?? '127.0.0.1', port, publicUrl, verifier });
};

export const runTaskCommand = async (
  command: string,
  values: Values,
  positionals: readonly string[],
): Promise<number> => {
  const conn = connectionOf(command, values);
  requireSecret(command, conn.secret);
  const body = buildBody(command, values, positionals);
  const path = `/webhook/${command}`;
  // A standing order may wait up to --wait-for before it is even placed: --wait's default covers that too.
  const waitSeconds = typeof body.wait_seconds === 'number' ? body.wait_seconds : 0;
  const timeoutMs = parseSeconds(command, 'timeout', values.timeout, 900 + waitSeconds) * 1000;
  const intervalMs = parseSeconds(command, 'interval', values.interval, 2) * 1000;
  checkWaitFlags(command, values);

  // The listener starts before the request: a fast task may call back before the 202 arrives.
  const listener = values.wait && !values.poll ? await listenerFor(command, values, conn) : undefined;
  if (listener) body.callback_url = listener.callbackUrl;
  try {
    const res = await send(conn, {
      method: 'POST',
      path,
      body: JSON.stringify(body),
      signed: true,
      idempotencyKey: values['idempotency-key'],
    });
    printAnswer(command, res, { quietBody: Boolean(values.wait) });
    if (!values.wait) return EXIT_OK;
    const taskId: unknown = res.json?.task_id;
    if (typeof taskId !== 'string') throw new CliError(`${command}: the relay's answer has no task_id`);
    err(`queued task ${taskId}`);

    if (listener) {
      const result = await waitWithProgress(listener.next(), {
        timeoutMs,
        label: () =>
          `waiting for task ${taskId} result on ${listener.callbackUrl.replace(/callback\/.*/, 'callback/…')}`,
      });
      return finishWithResult(result, isFailedResult(result));
    }
    const state = { current: 'queued' };
    const record = await waitWithProgress(pollTask(conn, taskId, intervalMs, state), {
      timeoutMs,
      label: () => `waiting for task ${taskId}: ${state.current}`,
    });
    return finishWithResult(record.result ?? record, record.state === 'failed' || isFailedResult(record.result));
  } finally {
    await listener?.close();
  }
};
