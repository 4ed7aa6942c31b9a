/**
 * Waiting for a task: the task record (GET /webhook/tasks/{task_id}), polling it to a final state, and
 * a --timeout with a progress line meanwhile.
 */
import type { Connection } from './connection';
import { CliError, EXIT_TASK_FAILED, printAnswer, progress } from './output';
import { send } from './signed-request';

/** The task record as the relay shows it; only `state`, `result` and a waiting task's place are read here. */
export interface TaskRecord {
  readonly state?: string;
  readonly result?: unknown;
  readonly waiting_until?: number;
  readonly position?: number;
}

/** What a wait knows of the task so far (for the progress line). */
export interface WaitState {
  current: string;
  view?: TaskRecord;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Races `promise` against the --timeout and prints a progress line every few seconds meanwhile. */
export const waitWithProgress = async <T>(
  promise: Promise<T>,
  { timeoutMs, label }: { timeoutMs: number; label: () => string },
): Promise<T> => {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const tick = (): void => progress.show(`${label()} (${Math.round((Date.now() - started) / 1000)} s)`);
  tick();
  const ticker = setInterval(tick, process.stderr.isTTY ? 1000 : 5000);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CliError(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for the result`, EXIT_TASK_FAILED),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearInterval(ticker);
    clearTimeout(timer);
    progress.done();
  }
};

export const getTask = async (conn: Connection, taskId: string, command = 'task'): Promise<TaskRecord | undefined> => {
  const res = await send(conn, { method: 'GET', path: `/webhook/tasks/${encodeURIComponent(taskId)}`, signed: true });
  if (res.status !== 200) printAnswer(command, res);
  return res.json as TaskRecord | undefined;
};

/** Polls the task record until it reaches a final state; resolves with the record. */
export const pollTask = async (
  conn: Connection,
  taskId: string,
  intervalMs: number,
  state: WaitState,
): Promise<TaskRecord> => {
  for (;;) {
    const record = await getTask(conn, taskId);
    state.current = record?.state ?? 'unknown';
    state.view = record;
    if (record && (record.state === 'succeeded' || record.state === 'failed')) return record;
    await sleep(intervalMs);
  }
};

/**
 * Reads the task record every `intervalMs` into `state` until `stop()` (for the progress line while the
 * result comes by callback). Quiet: a failed read just leaves the last state.
 */
export const watchTask = (conn: Connection, taskId: string, intervalMs: number, state: WaitState): { stop(): void } => {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const read = async (): Promise<void> => {
    try {
      const res = await send(conn, {
        method: 'GET',
        path: `/webhook/tasks/${encodeURIComponent(taskId)}`,
        signed: true,
      });
      if (res.status === 200 && res.json && typeof res.json === 'object') {
        state.view = res.json as TaskRecord;
        state.current = state.view.state ?? state.current;
      }
    } catch {
      // The next read may work; the result comes by callback anyway.
    }
    if (!stopped) timer = setTimeout(() => void read(), intervalMs);
  };
  void read();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
};
