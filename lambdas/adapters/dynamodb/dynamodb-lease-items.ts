/**
 * The items of LeaseBook and LeaseStore in the relay table (dynamodb-lease-book.ts,
 * dynamodb-lease-store.ts): their keys, attributes and claim tokens. The table has a partition key
 * only (`pk`, no sort key, no GSI), so the due index is built from whole items looked up by key:
 *
 * - `LEASE#<order_id>`: the order record (task_id, callback_url, spot, cancelled_at) and its lease
 *   (expires_at, hours, warned_for, cancel_claimed_at, ended_at, end_reason). The source of truth.
 * - `LEASE_DUE#<yyyy-mm-ddThh:mm>`: one item per 15-minute bucket of lease ends; each lease ending in
 *   the bucket is one attribute `d<order_id>_<expires_at>` (value: expires_at). A sweep reads the
 *   buckets from the cursor up to the bucket of `before` by key (BatchGet), then only the lease items
 *   of the entries that are due: O(buckets in range + due), independent of how many leases exist.
 * - `LEASE_DUE#cursor`: the earliest bucket that may hold entries (`from`) and a version (`v`). Writers
 *   add their entry first, then lower the cursor (or bump `v`); a sweep advances it only if `v` did not
 *   move since it read it, so an entry written during a sweep is never skipped.
 * - `WATCH#orders`: one item, one attribute `o<order_id>` per watched order holding
 *   `[status, since, spot]` as JSON (about 35 bytes: ~11,000 watched orders fit the 400 KB item).
 *   The watch must compare every watched order with my_orders anyway; one item makes that one read.
 * - `LEASE_EVENT#<event id>`: an event claimed for sending (dedupe); `SPOT_DECREASE#<order_id>`: the
 *   relay's last spot price decrease on an order.
 *
 * Moving a lease (extend) adds the new due entry first, then moves the lease conditionally, then
 * removes the old entry: a crash in between leaves a stale entry, which the due query skips and
 * prunes, never a lease without an entry. Strongly consistent reads throughout: the cursor protocol
 * relies on reading what was just written.
 *
 * The key prefixes are declared in contract/resources.ts `keys`.
 *
 * Lost answers: a conditional write whose answer is lost (timeout, reset) after it landed is sent
 * again by the SDK and fails its own condition. Every claim therefore writes a random token beside
 * what it claims (`claim_id`, `warn_claim_id`, `cancel_claim_id`, `extend_id`, `status_write_id`),
 * and a failed condition is read back consistently: the call's own token means the write was its
 * own, and it answers as if the first answer had arrived. Another caller's write keeps the refusal.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import { storedAttributes } from '../aws-clients';
import { keys, RELAY_TABLE } from '../../../contract/resources';
import type { Lease, TrackedOrder, WatchedOrder, WatchEntry } from '../../domain/leases/lease';
import { putItem, updateItem, type ItemPut } from './dynamodb-item-writes';

export const TTL_ATTRIBUTE = RELAY_TABLE.ttlAttribute;

/** Width of a due bucket. A sweep reads the buckets from the cursor to `before`, usually one or two. */
export const LEASE_DUE_BUCKET_SECONDS = 900;
/** How long an ended lease, an unwatched order or an event claim is kept. */
export const LEASE_RETENTION_SECONDS = 30 * 24 * 3600;
/** BatchGetItem takes at most 100 keys. */
export const BATCH_GET_LIMIT = 100;

/** The store's keys (contract/resources.ts `keys`), by their short names. */
export const leaseKeys = {
  lease: keys.lease,
  due: keys.leaseDue,
  cursor: keys.leaseDueCursor,
  watch: keys.watch,
  event: keys.leaseEvent,
  spotDecrease: keys.spotDecrease,
} as const;

export const bucketStart = (seconds: number): number =>
  Math.floor(seconds / LEASE_DUE_BUCKET_SECONDS) * LEASE_DUE_BUCKET_SECONDS;
export const dueAttribute = (orderId: number, expiresAt: number): string => `d${orderId}_${expiresAt}`;
export const watchAttribute = (orderId: number): string => `o${orderId}`;
export const encodeWatch = (entry: WatchEntry): string =>
  JSON.stringify([entry.status, entry.since, entry.spot ? 1 : 0]);
const LeaseItemSchema = z.object({
  order_id: z.int(),
  task_id: z.string(),
  callback_url: z.optional(z.string()),
  spot: z.optional(z.boolean()),
  key: z.optional(z.string()),
  on_outbid: z.optional(z.enum(['rebid', 'replace', 'rebid_then_replace'])),
  max_price: z.optional(z.number()),
  spend_task_id: z.optional(z.string()),
  expires_at: z.optional(z.number()),
  hours: z.optional(z.number()),
  warned_for: z.optional(z.number()),
  cancel_claimed_at: z.optional(z.number()),
  end_reason: z.optional(z.enum(['cancelled', 'order_gone'])),
  cancelled_at: z.optional(z.number()),
});

/** The optional fields of a watched order, stored in its lease item when set. */
const ORDER_OPTIONS = ['callback_url', 'spot', 'key', 'on_outbid', 'max_price', 'spend_task_id'] as const;

/** The optional fields of `order` that are set (an item holds no undefined attribute). */
export const setOrderOptions = (order: Omit<WatchedOrder, 'order_id' | 'task_id'>): Partial<WatchedOrder> =>
  Object.fromEntries(ORDER_OPTIONS.filter((name) => order[name] !== undefined).map((name) => [name, order[name]]));

export const toTracked = (item: Record<string, unknown> | undefined): TrackedOrder | undefined => {
  const parsed = LeaseItemSchema.safeParse(item);
  if (!parsed.success) return undefined;
  const i = parsed.data;
  const order: WatchedOrder = {
    order_id: i.order_id,
    task_id: i.task_id,
    ...setOrderOptions(i),
    ...(i.cancelled_at !== undefined ? { cancelled_at: i.cancelled_at } : {}),
  };
  if (i.expires_at === undefined || i.hours === undefined) return order;
  const lease: Lease = {
    ...order,
    expires_at: i.expires_at,
    hours: i.hours,
    ...(i.warned_for !== undefined ? { warned_for: i.warned_for } : {}),
    ...(i.cancel_claimed_at !== undefined ? { cancel_claimed_at: i.cancel_claimed_at } : {}),
    ...(i.end_reason !== undefined ? { ended: i.end_reason } : {}),
  };
  return lease;
};

/**
 * A conditional update of the due cursor (`from` and its version `v`, both named in the expressions):
 * false when its condition failed.
 */
export const updateCursor = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  update: { readonly UpdateExpression: string; readonly ConditionExpression: string },
  values: Record<string, unknown>,
): Promise<boolean> => {
  const updated = await updateItem(doc, tableName, leaseKeys.cursor(), {
    ...update,
    ExpressionAttributeNames: { '#from': 'from', '#v': 'v' },
    ExpressionAttributeValues: values,
  });
  return updated !== undefined;
};

/** The token attributes of the claims (see the module comment). */
export const CLAIM_TOKEN = {
  event: 'claim_id',
  spotDecrease: 'claim_id',
  warning: 'warn_claim_id',
  cancel: 'cancel_claim_id',
  extend: 'extend_id',
  status: 'status_write_id',
} as const;

/**
 * Puts the claim item `item` with a fresh token in `tokenAttribute`, under `condition`: the token, and
 * whether the put landed (false: its condition failed; the token read back tells whether it was ours).
 */
export const putClaim = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  item: Record<string, unknown>,
  tokenAttribute: string,
  condition: ItemPut,
): Promise<{ readonly token: string; readonly landed: boolean }> => {
  const token = randomUUID();
  const landed = await putItem(doc, tableName, { ...item, [tokenAttribute]: token }, condition);
  return { token, landed: landed !== undefined };
};

/** A token attribute's current value, read consistently (after a failed condition: was the write ours?). */
export const storedToken = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  attribute: string,
): Promise<unknown> => (await storedAttributes(doc, tableName, pk, [attribute]))[attribute];

export const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
