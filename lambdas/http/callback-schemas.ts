/**
 * The callback payloads (order-relay.md §2.3) as the OpenAPI document describes them: a task's result
 * and an order's lifecycle event. The document is built in openapi-document.ts.
 */
import * as z from 'zod/mini';
import type { OrderEvent } from '../domain/leases/lease';
import type { TaskResult } from '../domain/task';
import { describe } from './request-fields';

/** A payload the document names `title`: an object of `shape`. */
/* @__NO_SIDE_EFFECTS__ */
const titled = <S extends z.core.$ZodLooseShape>(title: string, shape: S) => describe(z.object(shape), { title });

// ---- callback payloads (order-relay.md §2.3) ------------------------------------------------------
// Documented from zod schemas checked against the domain's TaskResult type below, so a change to the
// result shapes fails compilation here instead of silently leaving the document behind.

/** How to get into a ready order (issue 37 §4). */
const AccessSchema = titled('OrderAccess', {
  ssh: describe(
    z.optional(
      z.object({
        host: z.string(),
        port: z.int(),
        user: describe(z.string(), {
          description: 'Always `root`: the marketplace installs the key and password for root',
        }),
        command: describe(z.string(), { example: 'ssh -p 1277 root@n1.example' }),
        host_key: describe(z.optional(z.string()), {
          description:
            'The full host key seen at the readiness login (READINESS_PROBE=ssh-login), to pin: `ssh-ed25519 AAAA…`',
        }),
        known_hosts: describe(z.optional(z.string()), {
          description: 'The known_hosts line for that key: `[host]:port key` (`host key` on port 22)',
          example: '[n1.example]:1277 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI…',
        }),
      }),
    ),
    {
      description:
        "How to log in: with the key of `ssh_public_key` (or the caller key's stored one) or the caller's `ssh_password`",
    },
  ),
  http: describe(z.optional(z.record(z.string(), z.string())), {
    description: "Container port → public URL of each http port the order maps (production's `http_pub`)",
  }),
  jupyter: describe(z.optional(z.object({ url: z.optional(z.string()), token: z.optional(z.string()) })), {
    description:
      "Present when the order maps an http port: `url` is container port 8888's (Jupyter's) when mapped; `token` is the order's Jupyter token (given or generated), in the signed result and in GET /webhook/tasks/{task_id} for the task's own key only, until the lease ends",
  }),
});

const CreateOrderSuccessSchema = titled('CreateOrderSuccess', {
  success: z.literal(true),
  order_id: z.int(),
  server_id: z.int(),
  status: z.string(),
  ssh_connection: z.string(),
  gpu: z.array(z.string()),
  price_usd: describe(z.nullable(z.number()), { description: 'Spot price of the chosen server in USD per hour' }),
  bid_usd_per_hour: describe(z.optional(z.number()), {
    description:
      'What the order was placed at, in USD per hour: a spot order bids min(1.1 × the spot price, `max_price`) (never below the spot price, never above `max_price`), an on-demand order the on-demand price. ' +
      "Absent when the server states no USD rate for the order's coin. The budget's reservation and the ledger use this figure",
  }),
  all_in_usd_per_hour: describe(z.optional(z.number()), {
    description:
      '`bid_usd_per_hour` with the renter fee (RENTER_FEE_PERCENT), when the relay is configured with one; the creation fee (ORDER_CREATION_FEE_USD) is charged once on top',
  }),
  lease_expires_at: describe(z.optional(z.int()), {
    description:
      'Leased orders only (`max_hours` or DEFAULT_MAX_HOURS): Unix seconds at which the relay cancels the order, counted from readiness',
  }),
  chosen: describe(z.optional(z.string()), {
    description:
      'Why this server (issue 31 §3): the `prefer` rule, how many servers matched and the USD/h of the order type, e.g. `cheapest of 7 matches at $0.31/h`; with fees (issue 31 §6) the all-in price and the creation fee follow: `($0.33/h with the 5 % renter fee, + $0.10 per order)`',
  }),
  ssh_host_key_sha256: describe(z.optional(z.string()), {
    description:
      'READINESS_PROBE=ssh-login: the SHA-256 fingerprint of the host key seen at the first successful login (`SHA256:<base64>`), to pin it',
  }),
  access: z.optional(AccessSchema),
});
const CancelSuccessSchema = titled('CancelSuccess', {
  success: z.literal(true),
  order_id: z.int(),
  status: z.literal('cancelled'),
});
const CancelTaskSuccessSchema = titled('CancelTaskSuccess', {
  success: z.literal(true),
  task_id: z.string(),
  state: z.literal('cancelled'),
});
const StatusResultSchema = titled('StatusResult', {
  total_orders: z.int(),
  active: describe(z.int(), { description: 'Orders with status running' }),
  creating: describe(z.int(), { description: 'Orders with status creating_order' }),
  orders: z.array(
    z.object({
      order_id: z.int(),
      status: z.string(),
      ssh: z.nullable(z.string()),
      lease_expires_at: describe(z.optional(z.int()), {
        description: 'Leased orders only: Unix seconds at which the relay cancels the order',
      }),
    }),
  ),
});
const ExtendOrderSuccessSchema = titled('ExtendOrderSuccess', {
  success: z.literal(true),
  order_id: z.int(),
  lease_expires_at: describe(z.int(), {
    description: 'The new end of the lease (Unix seconds): max(now, previous end) + hours',
  }),
});
const SetSpotPriceSuccessSchema = titled('SetSpotPriceSuccess', {
  success: z.literal(true),
  order_id: z.int(),
  desired_price: describe(z.number(), {
    description: "The spot price now bid, in the marketplace's unit: `currency` per day",
  }),
  currency: describe(z.string(), { description: "The order's currency" }),
  desired_price_usd_per_hour: describe(z.nullable(z.number()), {
    description: "The same price in USD per hour at the server's rates; null when the listing does not state them",
  }),
});
const PriceAlertMatchedSchema = titled('PriceAlertMatched', {
  success: z.literal(true),
  message: z.string(),
  task_id: describe(z.string(), { description: 'The create-order task the match queued' }),
});
const PriceNotMetSchema = titled('PriceNotMet', { success: z.literal(false), message: z.string() });
const FailureResultSchema = titled('Failure', { success: z.literal(false), error: z.string() });

/** Every result a task can end with, as POSTed to callback_url and shown by GET /webhook/tasks/{task_id}. */
export const TaskResultSchema = z.union([
  CreateOrderSuccessSchema,
  CancelSuccessSchema,
  CancelTaskSuccessSchema,
  StatusResultSchema,
  PriceAlertMatchedSchema,
  PriceNotMetSchema,
  ExtendOrderSuccessSchema,
  SetSpotPriceSuccessSchema,
  FailureResultSchema,
]);

/** A lifecycle event of an order the relay placed (issue 14), POSTed to the placing request's callback_url. */
export const OrderEventSchema = titled('OrderEvent', {
  event: describe(
    z.enum([
      'order.lease_expiring',
      'order.lease_expired',
      'order.status_changed',
      'order.orphan_cancelled',
      'order.outbid',
      'order.rebid',
      'order.replaced',
      'order.recovery_failed',
    ]),
    {
      description:
        '`order.orphan_cancelled`: an order placed for this task that the task did not keep (its answer was lost, or it showed in my_orders too late) was cancelled by the fleet watch. ' +
        'Outbid recovery (`on_outbid`, docs/outbid-recovery.md): `order.outbid` (a spot order stopped while another renter has its server), ' +
        '`order.rebid` (one accepted bid raise), `order.replaced` (a new order runs instead of the lost one, which was cancelled; its `order_id` is the new order), `order.recovery_failed` (nothing more will be tried)',
    },
  ),
  order_id: z.int(),
  task_id: describe(z.string(), { description: 'The task that placed (or first extended) the order' }),
  occurred_at: describe(z.int(), { description: 'Unix seconds' }),
  lease_expires_at: describe(z.optional(z.int()), { description: 'Lease events: the end of the lease (Unix seconds)' }),
  from: describe(z.optional(z.string()), { description: '`order.status_changed`: the previous marketplace status' }),
  to: describe(z.optional(z.string()), {
    description: '`order.status_changed`: the new status, or `gone` when the order left my_orders',
  }),
  old_price: describe(z.optional(z.number()), {
    description: "`order.rebid`: the bid before the raise, in the order currency per day (the marketplace's unit)",
  }),
  new_price: describe(z.optional(z.number()), { description: '`order.rebid`: the accepted new bid, same unit' }),
  currency: describe(z.optional(z.string()), { description: '`order.rebid`: the order currency' }),
  from_order_id: describe(z.optional(z.int()), { description: '`order.replaced`: the lost order (cancelled)' }),
  to_order_id: describe(z.optional(z.int()), {
    description: '`order.replaced`: the new order, which the lease, extend-order and set-spot-price now follow',
  }),
  ssh_connection: describe(z.optional(z.string()), { description: '`order.replaced`: how to reach the new order' }),
  reason: describe(z.optional(z.string()), { description: '`order.recovery_failed`: why the relay stopped trying' }),
});

type Mutable<T> = T extends readonly (infer U)[]
  ? Mutable<U>[]
  : T extends object
    ? { -readonly [K in keyof T]: Mutable<T[K]> }
    : T;
type Assert<T extends true> = T;
type MutuallyAssignable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compile-time drift check: the documented results are exactly the domain's TaskResult. */
export type TaskResultSchemaMatchesDomain = Assert<
  MutuallyAssignable<z.infer<typeof TaskResultSchema>, Mutable<TaskResult>>
>;
/** Compile-time drift check: the documented event is exactly the domain's OrderEvent. */
export type OrderEventSchemaMatchesDomain = Assert<
  MutuallyAssignable<z.infer<typeof OrderEventSchema>, Mutable<OrderEvent>>
>;
