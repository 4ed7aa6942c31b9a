/** The read-only commands: `marketplace` (unsigned summary: a table of GPU models, or --json) and `task` (one task record, optionally --wait). */
import type { Values } from './args';
import { parseSeconds } from './args';
import { usageError } from './commands';
import { connectionOf, requireSecret } from './connection';
import { EXIT_OK, EXIT_TASK_FAILED, isFailedResult, out, pretty, printAnswer } from './output';
import { send } from './signed-request';
import { recordCreateOrderResult } from './state-files';
import { marketplaceTable, waitingWords } from './tables';
import type { TaskRecord, WaitState } from './wait';
import { getTask, pollTask, waitWithProgress } from './wait';

export const runMarketplace = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length) throw usageError('marketplace', `unexpected argument '${positionals[0]}'`);
  const conn = connectionOf('marketplace', values);
  const res = await send(conn, { method: 'GET', path: '/webhook/marketplace', signed: false });
  // A table of the models (issue 28) unless --json, or when the relay is older and sends none.
  const table = !values.json && res.status === 200 && res.json?.models !== undefined;
  printAnswer('marketplace', res, { quietBody: table });
  if (table) out(marketplaceTable(res.json));
  return EXIT_OK;
};

/** A create-order task's order, remembered for `gpu-relay ssh ORDER_ID`. */
const remember = (taskId: string, record: TaskRecord | undefined): void => {
  if ((record as { kind?: unknown } | undefined)?.kind === 'create-order')
    recordCreateOrderResult(taskId, record?.result);
};

export const runTask = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length !== 1) throw usageError('task', 'expected exactly one TASK_ID');
  const conn = connectionOf('task', values);
  requireSecret('task', conn.secret);
  const [taskId] = positionals;
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(taskId)) throw usageError('task', `TASK_ID looks wrong: '${taskId}'`);
  if (!values.wait) {
    for (const flag of ['interval', 'timeout'] as const)
      if (values[flag] !== undefined) throw usageError('task', `--${flag} only makes sense with --wait`);
    const record = await getTask(conn, taskId);
    remember(taskId, record);
    out(pretty(record));
    return EXIT_OK;
  }
  const state: WaitState = { current: 'unknown' };
  const record = await waitWithProgress(
    pollTask(conn, taskId, parseSeconds('task', 'interval', values.interval, 2) * 1000, state),
    {
      timeoutMs: parseSeconds('task', 'timeout', values.timeout, 900) * 1000,
      label: () => waitingWords(taskId, state.view),
    },
  );
  remember(taskId, record);
  out(pretty(record));
  return record.state === 'failed' || isFailedResult(record.result) ? EXIT_TASK_FAILED : EXIT_OK;
};
