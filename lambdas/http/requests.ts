/**
 * Request shapes of the relay's HTTP routes (order-relay.md §4), as zod schemas. They validate the
 * signed bodies with the spec's exact 400 messages and also generate the OpenAPI document, so the two
 * cannot drift. Unknown fields are refused with 400 `unknown field <name>` (issue 29: a body dropped
 * silently of what it did not know is how one route's signed body passed as another's).
 *
 * This module gathers them for the OpenAPI document and the tests. Handlers import from the module
 * that holds their own body (issue 32: a route's bundle carries no other route's schemas):
 * request-fields.ts (shared fields, parsing), task-requests.ts, order-requests.ts (price-alert and the
 * fields it shares with create-order), create-order-requests.ts, admin-requests.ts.
 */
export * from './request-fields';
export * from './task-requests';
export * from './order-requests';
export * from './price-alert-requests';
export * from './create-order-requests';
export * from './admin-requests';
export * from './access-requests';
