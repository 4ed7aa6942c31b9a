/**
 * Request bodies of the routes that act on an order or a task: cancel-order, status, cancel-task,
 * extend-order and set-spot-price, one module each in task-bodies/ (a route's bundle imports its own
 * module only, so it builds no other route's body at import; BENCHMARKS.md §15). Gathered here for
 * requests.ts, the OpenAPI document and the tests. The rules they apply are in lambdas/domain
 * (request-rules.ts, lease.ts, standing-orders.ts).
 */
export * from './task-bodies/cancel-order';
export * from './task-bodies/status';
export * from './task-bodies/cancel-task';
export * from './task-bodies/extend-order';
export * from './task-bodies/set-spot-price';
