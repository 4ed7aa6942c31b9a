/**
 * Spending budgets and the ledger in the relay table (issue 24), three item families:
 *
 * - `SPEND#<yyyy-mm-dd>`: one item per UTC day with the day's totals, the relay's (`used`, `held`,
 *   `reserved`, `settled`, `orders`, `gpu_hours`) and each key's (`<field>@<key>`), and one attribute
 *   `open@<task>/<segment>` per open reservation. `used` = held + settled: a reservation is one
 *   UpdateItem conditional on `used <= limit − amount` (relay and key in the same condition) and on
 *   its open attribute being absent, so concurrent instances never pass a limit and a retried step
 *   never reserves twice. A settlement removes the open attribute, conditional on it: once.
 * - `SPENDRES#<task>`: the order's reservation (key, server, USD per hour, segments, readiness, cost).
 * - `LEDGER#<order>`: one item per settled order.
 *
 * Every item has a TTL of LEDGER_RETENTION_DAYS. DynamoDB conditions cannot add, hence `used` kept
 * beside `held` and `settled`. No transactions: each multi-item step is ordered so that a crash
 * between writes is completed by the retry (the reservation item is written after the day's entry;
 * settlement marks the reservation settled first, then the ledger, then each day, each conditional).
 */
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import {
  feesOf,
  hoursHeld,
  raiseUsd,
  reservedUsdPerHour,
  roundUsd,
  settledCostUsd,
  settlementShares,
  utcDay,
  worstCaseUsd,
  type BudgetLimits,
  type NewReservation,
  type OrderEnd,
  type Reservation,
  type ReserveOutcome,
  type Settlement,
  type SpendSegment,
  type SpendStore,
} from '../../domain/teams/spend-budget';
import { LEDGER_RETENTION_DAYS } from '../../domain/teams/spend-ledger';
import { isConditionalCheckFailed } from '../aws-clients';
import { updateItem, type ItemUpdate } from './dynamodb-item-writes';

const RETENTION_SECONDS = LEDGER_RETENTION_DAYS * 86_400;

/** The day item's attribute of an open reservation segment. */
const openAttribute = (taskId: string, segmentId: string): string => `open@${taskId}/${segmentId}`;

/** The day totals a change adds to, for the relay and for the key. */
type Field = 'used' | 'held' | 'reserved' | 'settled' | 'orders' | 'gpu_hours';

/**
 * The ADD clauses (`#<field> <value>, #k<field> <value>`) that add each field's value to the relay's
 * day total and to the key's (`<field>@<key>`); the names they use are added to `names`.
 */
const addToTotals = (
  names: Record<string, string>,
  key: string,
  adds: readonly (readonly [field: Field, value: string])[],
): string =>
  adds
    .flatMap(([field, value]) => {
      names[`#${field}`] = field;
      names[`#k${field}`] = `${field}@${key}`;
      return [`#${field} ${value}`, `#k${field} ${value}`];
    })
    .join(', ');

/** The table the spend items live in. */
export interface SpendTable {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
}

export const getReservation = async (t: SpendTable, taskId: string): Promise<Reservation | undefined> => {
  const { Item } = await t.doc.send(
    new GetCommand({ TableName: t.tableName, Key: { pk: keys.spendReservation(taskId) }, ConsistentRead: true }),
  );
  return Item as Reservation | undefined;
};

export const reserveOrder = async (
  t: SpendTable,
  reservation: NewReservation,
  limits: BudgetLimits,
  now: number,
): Promise<ReserveOutcome> => {
  const segmentId = `s${reservation.server_id}`;
  const existing = await getReservation(t, reservation.task_id);
  // The order's worst case with the renter fee on every hour and the creation fee once (issue 29 §3).
  const usd = worstCaseUsd(reservation.usd_per_hour, reservation.hours, reservation.fees, true);
  const day = utcDay(now * 1000);
  if (existing?.state === 'open' && existing.segments[segmentId])
    return { ok: true, usd: existing.segments[segmentId].usd, day: existing.segments[segmentId].day, tracked: true };
  if (existing?.state === 'open') {
    // A placement retry on another server: the earlier server's reservation is given back first.
    for (const segment of Object.values(existing.segments)) await closeSegment(t, existing, segment, 0, false);
  }
  const outcome = await reserveSegment(t, reservation.task_id, reservation.key, { day, usd }, segmentId, limits);
  if (!outcome.ok) return outcome;
  const { hours: _hours, fees, ...rest } = reservation;
  const segment: SpendSegment = { id: segmentId, day, usd, hours: reservation.hours, at: now };
  await t.doc.send(
    new PutCommand({
      TableName: t.tableName,
      Item: {
        pk: keys.spendReservation(reservation.task_id),
        ...rest,
        ...(fees ? { renter_fee_percent: fees.renter_fee_percent, creation_fee_usd: fees.creation_fee_usd } : {}),
        segments: { [segmentId]: segment },
        state: 'open',
        ttl: now + RETENTION_SECONDS,
      },
    }),
  );
  return outcome;
};

/** The limits an order's later reservations (extensions, price changes) are checked against. */
const orderLimits = (existing: Reservation, relayLimit: number | undefined): BudgetLimits => ({
  ...(relayLimit !== undefined ? { relay: relayLimit } : {}),
  ...(existing.key_budget_usd_per_day !== undefined ? { key: existing.key_budget_usd_per_day } : {}),
});

/** An UpdateItem of an order's reservation item: its answer, or undefined when its condition failed. */
const updateReservation = (t: SpendTable, taskId: string, update: ItemUpdate) =>
  updateItem(t.doc, t.tableName, keys.spendReservation(taskId), update);

/**
 * Reserves one more segment `segmentId` of an open reservation on today's day, priced by `price` from
 * the reservation, then records it on the reservation. Once: a segment the reservation has already is
 * answered as it was reserved; a reservation that is not open reserves nothing.
 */
const addSegment = async (
  t: SpendTable,
  taskId: string,
  segmentId: string,
  relayLimit: number | undefined,
  now: number,
  price: (existing: Reservation) => Pick<SpendSegment, 'usd' | 'hours' | 'usd_per_hour'>,
): Promise<ReserveOutcome> => {
  const existing = await getReservation(t, taskId);
  const day = utcDay(now * 1000);
  if (existing?.state !== 'open') return { ok: true, usd: 0, day, tracked: false };
  const done = existing.segments[segmentId];
  if (done) return { ok: true, usd: done.usd, day: done.day, tracked: true };
  const segment: SpendSegment = { id: segmentId, day, ...price(existing), at: now };
  const outcome = await reserveSegment(
    t,
    taskId,
    existing.key,
    { day, usd: segment.usd },
    segmentId,
    orderLimits(existing, relayLimit),
  );
  if (!outcome.ok) return outcome;
  const recorded = await updateReservation(t, taskId, {
    UpdateExpression: 'SET #segments.#id = :segment',
    ConditionExpression: '#state = :open',
    ExpressionAttributeNames: { '#segments': 'segments', '#id': segmentId, '#state': 'state' },
    ExpressionAttributeValues: { ':segment': segment, ':open': 'open' },
  });
  if (recorded) return outcome;
  // Settled meanwhile: the order ended, nothing to extend; the day's entry is given back.
  await closeSegment(t, existing, segment, 0, false);
  return { ok: true, usd: 0, day, tracked: false };
};

/**
 * Reserves an extension (extend-order) as the segment `x<id>` of the order's reservation: addSegment
 * priced at the highest USD per hour reserved for the order so far (a raise included), the renter fee on top.
 */
export const extendReservation = (
  t: SpendTable,
  taskId: string,
  extension: { readonly id: string; readonly hours: number },
  relayLimit: number | undefined,
  now: number,
): Promise<ReserveOutcome> =>
  addSegment(t, taskId, `x${extension.id}`, relayLimit, now, (existing) => ({
    usd: worstCaseUsd(reservedUsdPerHour(existing), extension.hours, feesOf(existing)),
    hours: extension.hours,
  }));

/**
 * Reserves a price change (set-spot-price, an outbid rebid) as the segment `r<id>` of the order's
 * reservation: addSegment priced as the raise to the new USD per hour over the hours left.
 */
export const repriceReservation = (
  t: SpendTable,
  taskId: string,
  change: { readonly id: string; readonly usd_per_hour: number; readonly hours_left: number },
  relayLimit: number | undefined,
  now: number,
): Promise<ReserveOutcome> =>
  addSegment(t, taskId, `r${change.id}`, relayLimit, now, (existing) => {
    const hours = Math.max(0, change.hours_left);
    return {
      usd: raiseUsd(reservedUsdPerHour(existing), change.usd_per_hour, hours, feesOf(existing)),
      hours: roundUsd(hours),
      usd_per_hour: change.usd_per_hour,
    };
  });

export const unpriceReservation = async (t: SpendTable, taskId: string, changeId: string): Promise<void> => {
  const existing = await getReservation(t, taskId);
  const segmentId = `r${changeId}`;
  const segment = existing?.segments[segmentId];
  if (existing?.state !== 'open' || !segment) return;
  // The day's entry first (conditional on it being open), then the segment: a retry finishes either.
  await closeSegment(t, existing, segment, 0, false);
  await updateReservation(t, taskId, {
    UpdateExpression: 'REMOVE #segments.#id',
    ConditionExpression: '#state = :open',
    ExpressionAttributeNames: { '#segments': 'segments', '#id': segmentId, '#state': 'state' },
    ExpressionAttributeValues: { ':open': 'open' },
  });
};

export const markRepriced = async (t: SpendTable, taskId: string, changeId: string, at: number): Promise<void> => {
  // A failed condition: settled meanwhile, or no such change; nothing to move.
  await updateReservation(t, taskId, {
    UpdateExpression: 'SET #segments.#id.#from = :at',
    ConditionExpression: '#state = :open AND attribute_exists(#segments.#id)',
    ExpressionAttributeNames: { '#segments': 'segments', '#id': `r${changeId}`, '#from': 'from', '#state': 'state' },
    ExpressionAttributeValues: { ':at': at, ':open': 'open' },
  });
};

/** The methods of an extension's or a raise's reservation (the job worker's extend-order and set-spot-price). */
export type SpendExtensionMethods = 'extend' | 'reprice' | 'unprice' | 'repriced';

/** Only the reservation changes of an extension or a raise, on `t`: the job worker's part of the store. */
export const spendExtensions = (t: SpendTable): Pick<SpendStore, SpendExtensionMethods> => ({
  extend: (taskId, extension, relayLimit, now) => extendReservation(t, taskId, extension, relayLimit, now),
  reprice: (taskId, change, relayLimit, now) => repriceReservation(t, taskId, change, relayLimit, now),
  unprice: (taskId, changeId) => unpriceReservation(t, taskId, changeId),
  repriced: (taskId, changeId, at) => markRepriced(t, taskId, changeId, at),
});

export const markStarted = async (
  t: SpendTable,
  taskId: string,
  order: { readonly order_id: number; readonly started_at: number },
): Promise<void> => {
  await updateReservation(t, taskId, {
    UpdateExpression: 'SET order_id = :order, started_at = if_not_exists(started_at, :started)',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':order': order.order_id, ':started': order.started_at },
  });
};

export const settleReservation = async (
  t: SpendTable,
  taskId: string,
  end: OrderEnd,
  now: number,
): Promise<Settlement | undefined> => {
  let reservation = await getReservation(t, taskId);
  if (!reservation) return undefined;
  if (reservation.state === 'open') {
    const hours = hoursHeld(reservation, end);
    const cost = settledCostUsd(reservation, end);
    const settled = await updateReservation(t, taskId, {
      UpdateExpression: 'SET #state = :settled, ended_at = :ended, hours_held = :hours, cost_usd = :cost',
      ConditionExpression: '#state = :open',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':settled': 'settled',
        ':open': 'open',
        ':ended': end.ended_at,
        ':hours': roundUsd(hours),
        ':cost': cost,
      },
      ReturnValues: 'ALL_NEW',
    });
    reservation = (settled ? settled.Attributes : await getReservation(t, taskId)) as Reservation;
  }
  // Settled (now or by an earlier attempt that stopped halfway): the ledger and each day, once each.
  const cost = reservation.cost_usd ?? 0;
  const hours = reservation.hours_held ?? 0;
  if (reservation.order_id !== undefined) await putLedger(t, reservation, now);
  const shares = settlementShares(Object.values(reservation.segments), cost);
  let released = 0;
  for (const [index, { segment, share }] of shares.entries()) {
    const gpuHours =
      cost > 0
        ? roundUsd((reservation.gpus * hours * share) / cost)
        : index === 0
          ? roundUsd(reservation.gpus * hours)
          : 0;
    if (await closeSegment(t, reservation, segment, share, reservation.order_id !== undefined && index === 0, gpuHours))
      released += Math.max(0, segment.usd - share);
  }
  return {
    task_id: taskId,
    key: reservation.key,
    ...(reservation.order_id !== undefined ? { order_id: reservation.order_id } : {}),
    cost_usd: cost,
    hours_held: hours,
    released_usd: roundUsd(released),
  };
};

const putLedger = async (t: SpendTable, reservation: Reservation, now: number): Promise<void> => {
  const started = reservation.started_at;
  await t.doc.send(
    new PutCommand({
      TableName: t.tableName,
      Item: {
        pk: keys.spendLedger(reservation.order_id as number),
        order_id: reservation.order_id,
        task_id: reservation.task_id,
        key: reservation.key,
        server_id: reservation.server_id,
        gpu: reservation.gpu,
        gpus: reservation.gpus,
        usd_per_hour: reservation.usd_per_hour,
        ...(started !== undefined ? { started_at: new Date(started * 1000).toISOString() } : {}),
        ended_at: new Date((reservation.ended_at ?? now) * 1000).toISOString(),
        hours: reservation.hours_held ?? 0,
        cost_usd: reservation.cost_usd ?? 0,
        days: Object.values(reservation.segments)
          .map((s) => s.day)
          .sort(),
        ttl: now + RETENTION_SECONDS,
      },
    }),
  );
};

/** Adds `usd` to the day's held totals (relay and key) if the limits allow it; once per segment. */
const reserveSegment = async (
  t: SpendTable,
  taskId: string,
  key: string,
  at: { readonly day: string; readonly usd: number },
  segmentId: string,
  limits: BudgetLimits,
): Promise<ReserveOutcome> => {
  const names: Record<string, string> = { '#open': openAttribute(taskId, segmentId), '#ttl': 'ttl' };
  const values: Record<string, unknown> = {
    ':usd': at.usd,
    ':ttl': Math.floor(Date.parse(at.day) / 1000) + 86_400 + RETENTION_SECONDS,
  };
  const adds = addToTotals(names, key, [
    ['used', ':usd'],
    ['held', ':usd'],
    ['reserved', ':usd'],
  ]);
  const conditions = ['attribute_not_exists(#open)'];
  const refusal = (scope: 'relay' | 'key', used: number, limit: number, keyUsed: number): ReserveOutcome => ({
    ok: false,
    refusal: {
      scope,
      key,
      used,
      limit,
      needed: at.usd,
      key_used: keyUsed,
      ...(limits.key !== undefined ? { key_limit: limits.key } : {}),
    },
  });
  const readDay = async () =>
    (
      await t.doc.send(
        new GetCommand({ TableName: t.tableName, Key: { pk: keys.spendDay(at.day) }, ConsistentRead: true }),
      )
    ).Item;
  // More than a whole limit: refused without a write, with the day's real figures (never "$0.00 of").
  if ((limits.relay !== undefined && at.usd > limits.relay) || (limits.key !== undefined && at.usd > limits.key)) {
    const item = await readDay();
    const used = Number(item?.used ?? 0);
    const keyUsed = Number(item?.[`used@${key}`] ?? 0);
    return limits.relay !== undefined && at.usd > limits.relay
      ? refusal('relay', used, limits.relay, keyUsed)
      : refusal('key', keyUsed, limits.key as number, keyUsed);
  }
  // Nothing to add (a price decrease, a lease of 0 h): recorded whatever the day has used.
  if (limits.relay !== undefined && at.usd > 0) {
    conditions.push('(attribute_not_exists(#used) OR #used <= :relayMax)');
    values[':relayMax'] = roundUsd(limits.relay - at.usd);
  }
  if (limits.key !== undefined && at.usd > 0) {
    conditions.push('(attribute_not_exists(#kused) OR #kused <= :keyMax)');
    values[':keyMax'] = roundUsd(limits.key - at.usd);
  }
  let usedToday: number | undefined;
  try {
    const { Attributes } = await t.doc.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: { pk: keys.spendDay(at.day) },
        UpdateExpression: `ADD ${adds} SET #open = :usd, #ttl = if_not_exists(#ttl, :ttl)`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    usedToday = typeof Attributes?.used === 'number' ? Attributes.used : undefined;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    const Item = await readDay();
    // Our own earlier attempt (a retried step, or a write whose answer was lost) reserved it.
    if (Item?.[openAttribute(taskId, segmentId)] !== undefined)
      return { ok: true, usd: Number(Item[openAttribute(taskId, segmentId)]), day: at.day, tracked: true };
    const used = Number(Item?.used ?? 0);
    const keyUsed = Number(Item?.[`used@${key}`] ?? 0);
    if (limits.relay !== undefined && used + at.usd > limits.relay)
      return refusal('relay', used, limits.relay, keyUsed);
    if (limits.key !== undefined) return refusal('key', keyUsed, limits.key, keyUsed);
    throw error;
  }
  return {
    ok: true,
    usd: at.usd,
    day: at.day,
    tracked: true,
    ...(usedToday !== undefined ? { used_today: usedToday } : {}),
  };
};

/**
 * Closes one segment on its day: its held amount leaves, `share` is settled (counted in `used`),
 * and with `countOrder` the order and its GPU hours count on that day. Conditional on the segment
 * still being open: false when an earlier call closed it.
 */
const closeSegment = async (
  t: SpendTable,
  reservation: Pick<Reservation, 'task_id' | 'key' | 'order_id'>,
  segment: SpendSegment,
  share: number,
  countOrder: boolean,
  gpuHours = 0,
): Promise<boolean> => {
  const add: Partial<Record<Field, number>> = { held: roundUsd(-segment.usd), used: roundUsd(share - segment.usd) };
  if (reservation.order_id !== undefined) {
    add.settled = share;
    add.gpu_hours = gpuHours;
  }
  if (countOrder) add.orders = 1;
  const names: Record<string, string> = { '#open': openAttribute(reservation.task_id, segment.id) };
  const fields = Object.entries(add) as [Field, number][];
  const values: Record<string, unknown> = Object.fromEntries(fields.map(([field, value]) => [`:${field}`, value]));
  let update = `REMOVE #open ADD ${addToTotals(
    names,
    reservation.key,
    fields.map(([field]) => [field, `:${field}`]),
  )}`;
  if (countOrder && reservation.order_id !== undefined) {
    names['#ledger'] = 'ledger_orders';
    values[':order'] = new Set([reservation.order_id]);
    update += ', #ledger :order';
  }
  const closed = await updateItem(t.doc, t.tableName, keys.spendDay(segment.day), {
    UpdateExpression: update,
    ConditionExpression: 'attribute_exists(#open)',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
  return closed !== undefined;
};

/** The SpendStore port over the functions above (each a module function, so a bundle takes only what it calls). */
export class DynamoDbSpendStore implements SpendStore {
  private readonly t: SpendTable;

  public constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.t = { doc, tableName };
  }

  public reservation(taskId: string): Promise<Reservation | undefined> {
    return getReservation(this.t, taskId);
  }

  public reserve(reservation: NewReservation, limits: BudgetLimits, now: number): Promise<ReserveOutcome> {
    return reserveOrder(this.t, reservation, limits, now);
  }

  public extend(
    taskId: string,
    extension: { readonly id: string; readonly hours: number },
    relayLimit: number | undefined,
    now: number,
  ): Promise<ReserveOutcome> {
    return extendReservation(this.t, taskId, extension, relayLimit, now);
  }

  public reprice(
    taskId: string,
    change: { readonly id: string; readonly usd_per_hour: number; readonly hours_left: number },
    relayLimit: number | undefined,
    now: number,
  ): Promise<ReserveOutcome> {
    return repriceReservation(this.t, taskId, change, relayLimit, now);
  }

  public unprice(taskId: string, changeId: string): Promise<void> {
    return unpriceReservation(this.t, taskId, changeId);
  }

  public repriced(taskId: string, changeId: string, at: number): Promise<void> {
    return markRepriced(this.t, taskId, changeId, at);
  }

  public started(taskId: string, order: { readonly order_id: number; readonly started_at: number }): Promise<void> {
    return markStarted(this.t, taskId, order);
  }

  public settle(taskId: string, end: OrderEnd, now: number): Promise<Settlement | undefined> {
    return settleReservation(this.t, taskId, end, now);
  }
}
