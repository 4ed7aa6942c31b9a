/**
 * Marketplace pacing shared by every Lambda instance: one item per API key holds the key's pacing
 * schedule (lambdas/marketplace/pacing-schedule.ts), claimed with optimistic conditional writes.
 * Runs unchanged against dynalite.
 *
 * Item: `next_free` (epoch ms), `reserved` (future lane slots), `lanes` (per lane, its next slot),
 * `busy_until` (until when ordinary calls are constrained: the fast path's condition), `rev` (bumped by every write), `ttl`.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from './aws-clients';
import { ConcurrentUpdateError } from '../domain/errors';
import type { PacingGate, PacingLaneRequest } from '../domain/ports';
import { busyUntil, claimLaneSlot, claimSlot, EMPTY_SCHEDULE, scheduleHorizon, type Claim, type PacingSchedule } from '../marketplace/pacing-schedule';
import { keys, RELAY_TABLE } from '../../contract/resources';

/** Lost races before giving up; each lost race means another caller got a slot, so this is ample. */
const MAX_ATTEMPTS = 50;
/** Pacing items outlive their schedule by an hour, then TTL removes them. */
const TTL_MARGIN_SECONDS = 3600;


const numberOr = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

const scheduleOf = (item: Record<string, unknown> | undefined): PacingSchedule => {
  if (!item) return EMPTY_SCHEDULE;
  const reserved = Array.isArray(item.reserved) ? item.reserved.filter((r): r is number => typeof r === 'number') : [];
  const lanes = item.lanes && typeof item.lanes === 'object'
    ? Object.fromEntries(Object.entries(item.lanes as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number'))
    : {};
  return { nextFree: numberOr(item.next_free, Number.NEGATIVE_INFINITY), reserved, lanes };
};

export class DynamoDbPacingGate implements PacingGate {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Claims the earliest slot at or after `now` that is `intervalMs` away from every other claim. */
  public async acquire(keyId: string, intervalMs: number, now: number): Promise<number> {
    const pk = keys.pacing(keyId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      // Fast path, one write: the key is idle (nothing handed out or reserved ahead), so the slot is now.
      if (await this.claimIdle(pk, now, intervalMs)) return now;
      const claim = await this.claimFromSchedule(pk, (schedule) => claimSlot(schedule, now, intervalMs), intervalMs);
      if (claim) return claim.slot;
    }
    throw new ConcurrentUpdateError(`marketplace pacing slot for ${keyId} stayed contended`);
  }

  public async acquireInLane(keyId: string, intervalMs: number, now: number, lane: PacingLaneRequest): Promise<number | undefined> {
    const pk = keys.pacing(keyId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      let refused = false;
      const claim = await this.claimFromSchedule(pk, (schedule) => {
        const c = claimLaneSlot(schedule, now, intervalMs, lane);
        refused = c === undefined;
        return c;
      }, intervalMs);
      if (claim) return claim.slot;
      if (refused) return undefined;
    }
    throw new ConcurrentUpdateError(`marketplace pacing lane ${lane.name} for ${keyId} stayed contended`);
  }

  private async claimIdle(pk: string, now: number, intervalMs: number): Promise<boolean> {
    const next = now + intervalMs;
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk },
        UpdateExpression: 'SET next_free = :next, busy_until = :next, #ttl = :ttl ADD rev :one',
        ConditionExpression: '(attribute_not_exists(next_free) OR next_free <= :now) AND (attribute_not_exists(busy_until) OR busy_until <= :now)',
        ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
        ExpressionAttributeValues: { ':next': next, ':now': now, ':one': 1, ':ttl': Math.ceil(next / 1000) + TTL_MARGIN_SECONDS },
      }));
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** Reads the schedule, lets `decide` claim, writes it back if nobody wrote in between. Undefined: refused or lost the race. */
  private async claimFromSchedule(pk: string, decide: (schedule: PacingSchedule) => Claim | undefined, intervalMs: number): Promise<Claim | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }));
    const claim = decide(scheduleOf(Item));
    if (!claim) return undefined;
    const horizon = scheduleHorizon(claim.schedule, intervalMs);
    const rev = typeof Item?.rev === 'number' ? Item.rev : undefined;
    const condition = !Item
      ? 'attribute_not_exists(pk)'
      : rev === undefined
        ? 'attribute_not_exists(rev)'
        : 'rev = :rev';
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk },
        UpdateExpression: 'SET next_free = :next, reserved = :reserved, lanes = :lanes, busy_until = :busy, rev = :newRev, #ttl = :ttl',
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
        ExpressionAttributeValues: {
          // -Infinity is not a DynamoDB number: an empty schedule's next_free is written as 0.
          ':next': Number.isFinite(claim.schedule.nextFree) ? claim.schedule.nextFree : 0,
          ':reserved': [...claim.schedule.reserved],
          ':lanes': { ...claim.schedule.lanes },
          // Lanes do not constrain ordinary calls, so they do not keep the fast path closed.
          ':busy': Math.max(0, busyUntil(claim.schedule, intervalMs)),
          ':newRev': (rev ?? 0) + 1,
          ':ttl': Math.ceil(horizon / 1000) + TTL_MARGIN_SECONDS,
          ...(rev === undefined ? {} : { ':rev': rev }),
        },
      }));
      return claim;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }
}
