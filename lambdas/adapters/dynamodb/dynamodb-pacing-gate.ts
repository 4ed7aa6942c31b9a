/**
 * Marketplace pacing shared by every Lambda instance: one item per API key holds the key's pacing
 * schedule (lambdas/marketplace/pacing-schedule.ts), claimed with optimistic conditional writes.
 * Runs unchanged against dynalite.
 *
 * Item: `next_free` (epoch ms), `reserved` (future lane slots), `lanes` (per lane, its next slot),
 * `busy_until` (until when ordinary calls are constrained: the fast path's condition), `rev` (bumped by every write), `ttl`.
 * After a rate-limited answer also the widened interval: `interval_ms`, `extra_ms` (added to every
 * caller's spacing), `quiet_until` (in force until then; also closes the fast path), `widened_at`
 * (slots claimed before it are void) and `widen_token` (which report wrote the last widening).
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { storedAttributes } from '../aws-clients';
import { ConcurrentUpdateError } from '../../domain/errors';
import type { PacingGate, PacingLaneRequest, PacingWidening, RateLimitReport } from '../../domain/ports';
import {
  busyUntil,
  claimLaneSlot,
  claimSlot,
  EMPTY_SCHEDULE,
  scheduleHorizon,
  wideningAt,
  widenSchedule,
  type Claim,
  type PacingSchedule,
  type Widening,
} from '../../marketplace/pacing-schedule';
import { keys, RELAY_TABLE } from '../../../contract/resources';
import { updateItem } from './dynamodb-item-writes';

/** Lost races before giving up; each lost race means another caller got a slot, so this is ample. */
const MAX_ATTEMPTS = 50;
/** Pacing items outlive their schedule by an hour, then TTL removes them. */
const TTL_MARGIN_SECONDS = 3600;

const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;

const scheduleOf = (item: Record<string, unknown> | undefined): PacingSchedule => {
  if (!item) return EMPTY_SCHEDULE;
  const reserved = Array.isArray(item.reserved) ? item.reserved.filter((r): r is number => typeof r === 'number') : [];
  const lanes =
    item.lanes && typeof item.lanes === 'object'
      ? Object.fromEntries(
          Object.entries(item.lanes as Record<string, unknown>).filter(
            (e): e is [string, number] => typeof e[1] === 'number',
          ),
        )
      : {};
  const widening: Widening | undefined = [item.interval_ms, item.extra_ms, item.quiet_until, item.widened_at].every(
    (v) => typeof v === 'number',
  )
    ? {
        intervalMs: item.interval_ms as number,
        extraMs: item.extra_ms as number,
        quietUntil: item.quiet_until as number,
        widenedAt: item.widened_at as number,
      }
    : undefined;
  return {
    nextFree: numberOr(item.next_free, Number.NEGATIVE_INFINITY),
    reserved,
    lanes,
    ...(widening ? { widening } : {}),
  };
};

/** DynamoDB numbers: -Infinity (an empty schedule's next_free) is written as 0. */
const finiteOrZero = (value: number): number => (Number.isFinite(value) ? value : 0);

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
      const claim = await this.claimFromSchedule(pk, (schedule) => claimSlot(schedule, now, intervalMs));
      if (claim) return claim.slot;
    }
    throw new ConcurrentUpdateError(`marketplace pacing slot for ${keyId} stayed contended`);
  }

  public async acquireInLane(
    keyId: string,
    intervalMs: number,
    now: number,
    lane: PacingLaneRequest,
  ): Promise<number | undefined> {
    const pk = keys.pacing(keyId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      let refused = false;
      const claim = await this.claimFromSchedule(pk, (schedule) => {
        const c = claimLaneSlot(schedule, now, intervalMs, lane);
        refused = c === undefined;
        return c;
      });
      if (claim) return claim.slot;
      if (refused) return undefined;
    }
    throw new ConcurrentUpdateError(`marketplace pacing lane ${lane.name} for ${keyId} stayed contended`);
  }

  /**
   * Widens the shared interval (pacing-schedule.ts `widenSchedule`) with a conditional write on the
   * revision read, like a claim. A widening carries a fresh token: when its condition fails because
   * the SDK retried a write whose answer was lost, the token read back says the widening is ours.
   * A report that widens nothing only moves `quiet_until` later.
   */
  public async rateLimited(
    keyId: string,
    intervalMs: number,
    now: number,
    report: RateLimitReport,
  ): Promise<PacingWidening> {
    const pk = keys.pacing(keyId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const item = await this.read(pk);
      const schedule = scheduleOf(item);
      const { schedule: after, ...outcome } = widenSchedule(schedule, now, intervalMs, report);
      const widening = after.widening;
      if (!outcome.widened) {
        const inForce = wideningAt(schedule, now);
        if (!inForce || !widening || widening.quietUntil <= inForce.quietUntil) return outcome;
        if (await this.extendQuiet(pk, now, widening.quietUntil)) return outcome;
        continue;
      }
      if (!widening) throw new Error('a widening without its interval');
      const token = randomUUID();
      const spacingMs = intervalMs + widening.extraMs;
      const written = await this.writeSchedule(pk, item, {
        schedule: after,
        spacingMs,
        horizon: Math.max(scheduleHorizon(after, spacingMs), widening.quietUntil),
        widening: {
          set: 'interval_ms = :interval, extra_ms = :extra, quiet_until = :quiet, widened_at = :widened, widen_token = :token',
          values: {
            ':interval': widening.intervalMs,
            ':extra': widening.extraMs,
            ':quiet': widening.quietUntil,
            ':widened': widening.widenedAt,
            ':token': token,
          },
        },
      });
      if (written) return outcome;
      const stored = await storedAttributes(this.doc, this.tableName, pk, ['widen_token']);
      if (stored.widen_token === token) return outcome;
    }
    throw new ConcurrentUpdateError(`marketplace pacing interval for ${keyId} stayed contended`);
  }

  public async widenedAt(keyId: string): Promise<number | undefined> {
    const stored = await storedAttributes(this.doc, this.tableName, keys.pacing(keyId), ['widened_at']);
    return typeof stored.widened_at === 'number' ? stored.widened_at : undefined;
  }

  /** Moves `quiet_until` to `quietUntil` while the widening is still in force; false: it ended meanwhile (read again). */
  private async extendQuiet(pk: string, now: number, quietUntil: number): Promise<boolean> {
    const moved = await updateItem(this.doc, this.tableName, pk, {
      UpdateExpression: 'SET quiet_until = :quiet',
      ConditionExpression: 'quiet_until > :now',
      ExpressionAttributeValues: { ':quiet': quietUntil, ':now': now },
    });
    return moved !== undefined;
  }

  private async claimIdle(pk: string, now: number, intervalMs: number): Promise<boolean> {
    const next = now + intervalMs;
    const claimed = await updateItem(this.doc, this.tableName, pk, {
      UpdateExpression: 'SET next_free = :next, busy_until = :next, #ttl = :ttl ADD rev :one',
      // A widened interval in force takes the read path, which knows the wider spacing.
      ConditionExpression:
        '(attribute_not_exists(next_free) OR next_free <= :now) AND (attribute_not_exists(busy_until) OR busy_until <= :now)' +
        ' AND (attribute_not_exists(quiet_until) OR quiet_until <= :now)',
      ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
      ExpressionAttributeValues: {
        ':next': next,
        ':now': now,
        ':one': 1,
        ':ttl': Math.ceil(next / 1000) + TTL_MARGIN_SECONDS,
      },
    });
    return claimed !== undefined;
  }

  /** Reads the schedule, lets `decide` claim, writes it back if nobody wrote in between. Undefined: refused or lost the race. */
  private async claimFromSchedule(
    pk: string,
    decide: (schedule: PacingSchedule) => Claim | undefined,
  ): Promise<Claim | undefined> {
    const item = await this.read(pk);
    const claim = decide(scheduleOf(item));
    if (!claim) return undefined;
    const horizon = scheduleHorizon(claim.schedule, claim.spacingMs);
    const written = await this.writeSchedule(pk, item, {
      schedule: claim.schedule,
      spacingMs: claim.spacingMs,
      horizon,
    });
    return written ? claim : undefined;
  }

  /** The key's pacing item, read consistently (undefined: none yet). */
  private async read(pk: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }),
    );
    return Item;
  }

  /**
   * Writes `schedule` back (and a widening's attributes) if nobody wrote since `read` was read (the
   * same revision, or still no item): false when somebody did. `busy_until` is the schedule's end for
   * ordinary calls at `spacingMs` (lanes do not constrain them, so they do not keep the fast path
   * closed); the TTL runs from `horizon`.
   */
  private async writeSchedule(
    pk: string,
    read: Record<string, unknown> | undefined,
    write: {
      readonly schedule: PacingSchedule;
      readonly spacingMs: number;
      readonly horizon: number;
      readonly widening?: { readonly set: string; readonly values: Record<string, unknown> };
    },
  ): Promise<boolean> {
    const { schedule, widening } = write;
    const rev = typeof read?.rev === 'number' ? read.rev : undefined;
    const sets = ['next_free = :next', 'reserved = :reserved', 'lanes = :lanes', 'busy_until = :busy'];
    if (widening) sets.push(widening.set);
    sets.push('rev = :newRev', '#ttl = :ttl');
    const written = await updateItem(this.doc, this.tableName, pk, {
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: !read
        ? 'attribute_not_exists(pk)'
        : rev === undefined
          ? 'attribute_not_exists(rev)'
          : 'rev = :rev',
      ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
      ExpressionAttributeValues: {
        // -Infinity is not a DynamoDB number: an empty schedule's next_free is written as 0.
        ':next': finiteOrZero(schedule.nextFree),
        ':reserved': [...schedule.reserved],
        ':lanes': { ...schedule.lanes },
        ':busy': Math.max(0, busyUntil(schedule, write.spacingMs)),
        ...widening?.values,
        ':newRev': (rev ?? 0) + 1,
        ':ttl': Math.ceil(write.horizon / 1000) + TTL_MARGIN_SECONDS,
        ...(rev === undefined ? {} : { ':rev': rev }),
      },
    });
    return written !== undefined;
  }
}
