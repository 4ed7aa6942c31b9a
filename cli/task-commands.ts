/**
 * The task-starting commands (create-order, cancel-order, extend-order, set-spot-price, cancel-task,
 * price-alert, status): send the signed request, print the 202, and with --wait print the task's
 * result, received on a local callback listener or by polling the task record. Against a local relay
 * (its card) waiting is the default, --no-wait returns at once; status prints a table unless --json.
 * A create-order result's order id is remembered with its task id (cli/state-files.ts) for `gpu-relay ssh ORDER_ID`.
 */
import { addPromptedPassword } from './access-flags';
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
import { recordCreateOrderResult } from './state-files';
import { isStatusResult, statusTable, waitingWords } from './tables';
import type { WaitState } from './wait';
import { pollTask, waitWithProgress, watchTask } from './wait';

const finishWithResult = (command: string, values: Values, result: unknown, failed: boolean): number => {
  out(command === 'status' && !values.json && isStatusResult(result) ? statusTable(result) : pretty(result));
  return failed ? EXIT_TASK_FAILED : EXIT_OK;
};

/** How the command waits: not at all, on a callback listener, or by polling the task record. */
type WaitMode = 'none' | 'listen' | 'poll';

/**
 * --wait waits; so does a command sent to a local relay (its card) unless --no-wait. The implicit wait
 * polls when the caller gave a --callback (it stays theirs) and listens otherwise.
 */
const waitModeOf = (command: string, values: Values, local: boolean): WaitMode => {
  if (values.wait && values['no-wait']) throw usageError(command, '--wait and --no-wait contradict each other');
  const explicit = Boolean(values.wait);
  const wait = explicit || (local && !values['no-wait']);
  if (!wait) return 'none';
  if (values.poll || (!explicit && values.callback !== undefined)) return 'poll';
  return 'listen';
};

/** Flags that only make sense with --wait, and the combinations that contradict each other. */
const checkWaitFlags = (command: string, values: Values, mode: WaitMode): void => {
  for (const flag of ['poll', 'interval', 'timeout', 'listen-port', 'listen-host', 'public-url'] as const) {
    if (values[flag] !== undefined && mode === 'none')
      throw usageError(command, `--${flag} only makes sense with --wait`);
  }
  const listen = mode === 'listen';
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
  if (command === 'create-order') await addPromptedPassword(command, values, body);
  const path = `/webhook/${command}`;
  // A standing order may wait up to --wait-for before it is even placed: --wait's default covers that too.
  const waitSeconds = typeof body.wait_seconds === 'number' ? body.wait_seconds : 0;
  const timeoutMs = parseSeconds(command, 'timeout', values.timeout, 900 + waitSeconds) * 1000;
  const intervalMs = parseSeconds(command, 'interval', values.interval, 2) * 1000;
  const mode = waitModeOf(command, values, conn.local);
  checkWaitFlags(command, values, mode);

  // The listener starts before the request: a fast task may call back before the 202 arrives.
  const listener = mode === 'listen' ? await listenerFor(command, values, conn) : undefined;
  if (listener) body.callback_url = listener.callbackUrl;
  // The listener is for the result only: the order's later lifecycle events have nowhere to go once
  // the CLI has exited (issue 28), so the relay sends them only to a callback the caller gave.
  if (listener && command === 'create-order') body.lifecycle_events = false;
  try {
    const res = await send(conn, {
      method: 'POST',
      path,
      body: JSON.stringify(body),
      signed: true,
      idempotencyKey: values['idempotency-key'],
    });
    printAnswer(command, res, { quietBody: mode !== 'none' });
    if (mode === 'none') return EXIT_OK;
    const taskId: unknown = res.json?.task_id;
    if (typeof taskId !== 'string') throw new CliError(`${command}: the relay's answer has no task_id`);
    err(`queued task ${taskId}${values.wait ? '' : ' (waiting for its result; --no-wait returns at once)'}`);

    const state: WaitState = { current: 'queued' };
    if (listener) {
      // The result comes by callback; the task record, read meanwhile, words the progress line.
      const watch = watchTask(conn, taskId, Math.max(intervalMs, 2000), state);
      try {
        const result = await waitWithProgress(listener.next(), {
          timeoutMs,
          label: () => waitingWords(taskId, state.view),
        });
        if (command === 'create-order') recordCreateOrderResult(taskId, result);
        return finishWithResult(command, values, result, isFailedResult(result));
      } finally {
        watch.stop();
      }
    }
    const record = await waitWithProgress(pollTask(conn, taskId, intervalMs, state), {
      timeoutMs,
      label: () => waitingWords(taskId, state.view),
    });
    if (command === 'create-order') recordCreateOrderResult(taskId, record.result);
    return finishWithResult(
      command,
      values,
      record.result ?? record,
      record.state === 'failed' || isFailedResult(record.result),
    );
  } finally {
    await listener?.close();
  }
};
