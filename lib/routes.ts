/** Kept for importers outside the project's own code (bench/): the route table lives in contract/routes.ts. */
import { EXECUTION_ENDED_ENTRY, FLEET_WATCH_ENTRY, JOB_WORKER_ENTRY, ROUTES, WORKFLOW_TASKS } from '../contract/routes';

export * from '../contract/routes';

/**
 * Every deployed handler entry: the API routes, the workflow tasks, execution-ended, the job worker and
 * the fleet watch. For the tools that build every function (the stack reader, the bundle bench, the
 * budget test); here rather than in contract/ so no function bundle evaluates it.
 */
export const HANDLER_ENTRIES: readonly string[] = [
  ...ROUTES.map((r) => r.entry),
  ...Object.values(WORKFLOW_TASKS),
  EXECUTION_ENDED_ENTRY,
  JOB_WORKER_ENTRY,
  FLEET_WATCH_ENTRY,
];
