import fc from 'fast-check';
import {
  EXTEND_REQUIRED_ERROR,
  GONE,
  HOURS_ERROR,
  MAX_HOURS_ERROR,
  SPOT_PRICE_REQUIRED_ERROR,
  diffWatch,
  extendLease,
  formatHours,
  hoursToSeconds,
  isStop,
  leaseEventId,
  leaseExpiredEvent,
  leaseExpiredText,
  leaseExpiresAt,
  leaseExpiringEvent,
  leaseExpiringText,
  parseMaxHours,
  resolveMaxHours,
  serverFitsLease,
  spotDecreaseRefusal,
  spotPriceRefusedText,
  statusChangedEvent,
  statusChangedText,
  statusEventId,
  type Lease,
  type WatchEntry,
} from '../../../lambdas/domain/leases/lease';
import {
  ExtendOrderBodySchema,
  MaxHoursSchema,
  parseBody,
  SetSpotPriceBodySchema,
} from '../../../lambdas/http/requests';
import { planLeaseSweep } from '../../../lambdas/domain/leases/lease-sweep';
import { anOrder } from '../../fakes/builders';

const lease = (orderId: number, expiresAt: number, fields: Partial<Lease> = {}): Lease => ({
  order_id: orderId,
  task_id: `t${orderId}`,
  expires_at: expiresAt,
  hours: 1,
  ...fields,
});

describe('Function: parseMaxHours', () => {
  it('accepts numbers in (0, 720], fractions included', () => {
    for (const v of [0.01, 0.5, 1, 24, 719.99, 720]) expect(parseMaxHours(v)).toEqual({ ok: true, value: v });
  });

  it('treats absent and null as not sent', () => {
    expect(parseMaxHours(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseMaxHours(null)).toEqual({ ok: true, value: undefined });
  });

  it('refuses everything else with the exact text', () => {
    for (const v of [0, -1, 720.0001, 1e9, Number.NaN, Number.POSITIVE_INFINITY, '2', true, {}, []]) {
      expect(parseMaxHours(v)).toEqual({ ok: false, error: 'max_hours must be a number between 0 and 720' });
    }
    expect(MAX_HOURS_ERROR).toBe('max_hours must be a number between 0 and 720');
  });

  it('agrees with the schema field for any input (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.string(), fc.constant(null), fc.constant(undefined)), (v) => {
        const direct = parseMaxHours(v);
        const viaSchema = MaxHoursSchema.safeParse(v);
        expect(viaSchema.success).toBe(direct.ok);
        if (direct.ok && viaSchema.success) expect(viaSchema.data).toBe(direct.value);
      }),
    );
  });

  it('falls back to DEFAULT_MAX_HOURS only when the request has none', () => {
    expect(resolveMaxHours(undefined, 8)).toBe(8);
    expect(resolveMaxHours(2, 8)).toBe(2);
    expect(resolveMaxHours(undefined, undefined)).toBeUndefined();
  });
});

describe('Schema: ExtendOrderBodySchema', () => {
  it('parses order_id (number or digits), hours and callback_url', () => {
    expect(
      parseBody(ExtendOrderBodySchema, { order_id: '42', hours: 1.5, callback_url: 'https://x.example/cb' }),
    ).toEqual({ ok: true, value: { order_id: 42, hours: 1.5, callback_url: 'https://x.example/cb' } });
  });

  it.each([
    [{}],
    [{ order_id: 42 }],
    [{ hours: 2 }],
    [{ order_id: 42, hours: null }],
    [{ order_id: 0, hours: 2 }],
    [{ order_id: '', hours: 2 }],
  ])('answers "order_id and hours required" for %j', (body) => {
    expect(parseBody(ExtendOrderBodySchema, body)).toEqual({ ok: false, error: EXTEND_REQUIRED_ERROR });
    expect(EXTEND_REQUIRED_ERROR).toBe('order_id and hours required');
  });

  it.each([[0], [-2], [721], ['3'], [false]])(
    'answers the hours range text for a present but invalid hours %j',
    (hours) => {
      expect(parseBody(ExtendOrderBodySchema, { order_id: 42, hours })).toEqual({ ok: false, error: HOURS_ERROR });
      expect(HOURS_ERROR).toBe('hours must be a number between 0 and 720');
    },
  );

  it("keeps order_id's own texts for a malformed id", () => {
    expect(parseBody(ExtendOrderBodySchema, { order_id: 'abc', hours: 1 })).toEqual({
      ok: false,
      error: 'order_id must be an integer',
    });
  });
});

describe('Schema: SetSpotPriceBodySchema', () => {
  it('parses order_id and desired_price', () => {
    expect(parseBody(SetSpotPriceBodySchema, { order_id: 7, desired_price: 0.25 })).toEqual({
      ok: true,
      value: { order_id: 7, desired_price: 0.25 },
    });
  });

  it.each([[{}], [{ order_id: 7 }], [{ desired_price: 1 }], [{ order_id: null, desired_price: 1 }]])(
    'answers "order_id and desired_price required" for %j',
    (body) => {
      expect(parseBody(SetSpotPriceBodySchema, body)).toEqual({ ok: false, error: SPOT_PRICE_REQUIRED_ERROR });
      expect(SPOT_PRICE_REQUIRED_ERROR).toBe('order_id and desired_price required');
    },
  );

  it('refuses a non-positive or non-numeric price', () => {
    expect(parseBody(SetSpotPriceBodySchema, { order_id: 7, desired_price: 0 })).toEqual({
      ok: false,
      error: 'desired_price must be a positive number',
    });
    expect(parseBody(SetSpotPriceBodySchema, { order_id: 7, desired_price: '1' })).toEqual({
      ok: false,
      error: 'desired_price must be a positive number',
    });
  });

  it.each([[0.000000009], [10_000_000.5], [1e300]])(
    'refuses %p: outside what a price in the order currency per day can be',
    (desired) => {
      expect(parseBody(SetSpotPriceBodySchema, { order_id: 7, desired_price: desired })).toEqual({
        ok: false,
        error: 'desired_price must be between 0.00000001 and 10000000 (order currency per day)',
      });
    },
  );

  it.each([[0.00000001], [0.0000431], [1540], [10_000_000]])('accepts %p (bounds included)', (desired) => {
    expect(parseBody(SetSpotPriceBodySchema, { order_id: 7, desired_price: desired })).toEqual({
      ok: true,
      value: { order_id: 7, desired_price: desired },
    });
  });
});

describe('Function: lease arithmetic', () => {
  it('counts a lease from readiness in whole seconds', () => {
    expect(leaseExpiresAt(1_000, 2)).toBe(8_200);
    expect(leaseExpiresAt(1_000, 0.1)).toBe(1_360);
    expect(hoursToSeconds(0.7)).toBe(2_520); // 0.7 × 3600 is 2520.0000000000005 in floating point
  });

  it('extends from the later of now and the current end', () => {
    expect(extendLease(5_000, 1_000, 1)).toBe(8_600);
    expect(extendLease(500, 1_000, 1)).toBe(4_600);
    expect(extendLease(undefined, 1_000, 0.5)).toBe(2_800);
  });

  const hours = fc.double({ min: 0.001, max: 720, noNaN: true });
  const time = fc.integer({ min: 0, max: 4_000_000_000 });

  it('never ends an extended lease before now + hours or the old end + hours (property)', () => {
    fc.assert(
      fc.property(fc.option(time, { nil: undefined }), time, hours, (end, now, h) => {
        const next = extendLease(end, now, h);
        expect(next).toBe(Math.max(now, end ?? now) + hoursToSeconds(h));
        expect(next).toBeGreaterThanOrEqual(now + hoursToSeconds(h));
        if (end !== undefined) expect(next).toBeGreaterThan(end);
        expect(Number.isInteger(next)).toBe(true);
      }),
    );
  });

  it('rounds hours to within half a second and keeps them monotonic (property)', () => {
    fc.assert(
      fc.property(hours, hours, (a, b) => {
        expect(Math.abs(hoursToSeconds(a) - a * 3600)).toBeLessThanOrEqual(0.5);
        if (a <= b) expect(hoursToSeconds(a)).toBeLessThanOrEqual(hoursToSeconds(b));
      }),
    );
  });

  it('skips servers whose mrl is below the lease', () => {
    expect(serverFitsLease({ mrl: 24 }, 24)).toBe(true);
    expect(serverFitsLease({ mrl: 24 }, 24.5)).toBe(false);
    expect(serverFitsLease({ mrl: 1 }, undefined)).toBe(true);
  });
});

describe('Function: planLeaseSweep', () => {
  const now = 10_000;

  it('expires ended leases and warns those within the warning window once per end', () => {
    const plan = planLeaseSweep(
      [
        lease(1, now), // ends now: expired
        lease(2, now - 500), // long past: expired, no late warning
        lease(3, now + 600), // at the window's edge: warn
        lease(4, now + 601), // outside the window
        lease(5, now + 100, { warned_for: now + 100 }), // already warned for this end
        lease(6, now + 100, { warned_for: now - 50 }), // warned for an older end: extended since, warn again
        lease(7, now - 1, { ended: 'cancelled' }), // done
      ],
      now,
      600,
    );
    expect(plan.expire.map((l) => l.order_id)).toEqual([1, 2]);
    expect(plan.warn.map((l) => l.order_id)).toEqual([3, 6]);
  });

  it('partitions: no lease is both warned and expired, and every unended lease past its end is expired (property)', () => {
    const arb = fc.array(
      fc.record({
        id: fc.integer({ min: 1, max: 1e6 }),
        end: fc.integer({ min: 0, max: 20_000 }),
        warned: fc.boolean(),
      }),
      { maxLength: 50 },
    );
    fc.assert(
      fc.property(arb, fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 0, max: 3600 }), (rows, t, w) => {
        const leases = rows.map((r, i) => lease(i + 1, r.end, r.warned ? { warned_for: r.end } : {}));
        const plan = planLeaseSweep(leases, t, w);
        const expired = new Set(plan.expire.map((l) => l.order_id));
        for (const l of plan.warn) expect(expired.has(l.order_id)).toBe(false);
        expect(plan.expire.length).toBe(leases.filter((l) => l.expires_at <= t).length);
        for (const l of plan.warn)
          expect(l.expires_at - w <= t && t < l.expires_at && l.warned_for !== l.expires_at).toBe(true);
      }),
    );
  });
});

describe('Function: diffWatch', () => {
  const watched = new Map<number, WatchEntry>([
    [1, { status: 'running', since: 100 }],
    [2, { status: 'running', since: 100, spot: true }],
    [3, { status: 'creating_order', since: 90 }],
    [4, { status: 'running', since: 80 }],
  ]);

  it('reports changed, expired and gone orders of the watch only', () => {
    const changes = diffWatch(watched, [
      anOrder(1, { status: 'running' }),
      anOrder(2, { status: 'paused', type: 'spot' }),
      anOrder(3, { status: 'expired' }),
      anOrder(99, { status: 'paused' }), // not placed by the relay
    ]);
    expect(changes).toEqual([
      { order_id: 2, from: 'running', to: 'paused', since: 100, spot: true, terminal: false },
      { order_id: 3, from: 'creating_order', to: 'expired', since: 90, spot: false, terminal: true },
      { order_id: 4, from: 'running', to: GONE, since: 80, spot: false, terminal: true },
    ]);
  });

  it('reports nothing when every status is unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('running', 'paused', 'creating_order'), { minLength: 1, maxLength: 20 }),
        (statuses) => {
          const w = new Map(statuses.map((s, i) => [i + 1, { status: s, since: 1 }] as const));
          expect(
            diffWatch(
              w,
              statuses.map((s, i) => anOrder(i + 1, { status: s })),
            ),
          ).toEqual([]);
        },
      ),
    );
  });

  it('names stops: paused, expired, gone, and a running order going offline', () => {
    expect(isStop('running', 'paused')).toBe(true);
    expect(isStop('running', GONE)).toBe(true);
    expect(isStop('running', 'creating_order')).toBe(true);
    expect(isStop('creating_order', 'running')).toBe(false);
    expect(isStop('paused', 'running')).toBe(false);
  });
});

describe('Function: events', () => {
  it('builds the event bodies with deterministic ids', () => {
    const l = lease(5, 9_000, { callback_url: 'https://x.example' });
    expect(leaseExpiredEvent(l, 9_030)).toEqual({
      id: 'lease_expired:5:9000',
      body: { event: 'order.lease_expired', order_id: 5, task_id: 't5', occurred_at: 9_030, lease_expires_at: 9_000 },
    });
    expect(leaseExpiringEvent(l, 8_500).id).toBe('lease_expiring:5:9000');
    const change = { order_id: 5, from: 'running', to: 'paused', since: 100, spot: false, terminal: false };
    expect(statusChangedEvent(change, l, 200)).toEqual({
      id: 'status_changed:5:running:paused:100',
      body: {
        event: 'order.status_changed',
        order_id: 5,
        task_id: 't5',
        occurred_at: 200,
        lease_expires_at: 9_000,
        from: 'running',
        to: 'paused',
      },
    });
    expect(statusChangedEvent(change, { order_id: 5, task_id: 't5' }, 200).body).not.toHaveProperty('lease_expires_at');
  });

  it('gives one id per occurrence, whatever the sweep time (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1 }),
        fc.integer({ min: 0 }),
        fc.integer({ min: 0 }),
        fc.integer({ min: 0 }),
        (id, end, t1, t2) => {
          expect(leaseExpiredEvent(lease(id, end), t1).id).toBe(leaseExpiredEvent(lease(id, end), t2).id);
          expect(leaseEventId('lease_expired', id, end)).not.toBe(leaseEventId('lease_expiring', id, end));
          expect(statusEventId({ order_id: id, from: 'a', to: 'b', since: end })).not.toBe(
            statusEventId({ order_id: id, from: 'a', to: 'b', since: end + 1 }),
          );
        },
      ),
    );
  });
});

describe('Function: chat texts', () => {
  it('says an order was cancelled at the end of its lease, exactly', () => {
    expect(leaseExpiredText(42, 2)).toBe('Order 42 cancelled: its 2 h lease ended');
    expect(leaseExpiredText(42, 0.1 + 0.2)).toBe('Order 42 cancelled: its 0.3 h lease ended');
    expect(formatHours(0.25)).toBe('0.25');
  });

  it('warns in whole minutes, rounded up', () => {
    expect(leaseExpiringText(42, 1_600, 1_000)).toBe('Order 42: its lease ends in 10 min');
    expect(leaseExpiringText(42, 1_061, 1_000)).toBe('Order 42: its lease ends in 2 min');
    expect(leaseExpiringText(42, 1_001, 1_000)).toBe('Order 42: its lease ends in 1 min');
  });

  it('names a spot order that stops as possibly outbid', () => {
    expect(statusChangedText({ order_id: 7, from: 'running', to: 'paused', spot: true })).toBe(
      'Order 7 is now paused (was running): spot order, possibly outbid',
    );
    expect(statusChangedText({ order_id: 7, from: 'running', to: GONE, spot: true })).toBe(
      'Order 7 is gone from the active orders (was running): spot order, possibly outbid',
    );
    expect(statusChangedText({ order_id: 7, from: 'running', to: 'paused', spot: false })).toBe(
      'Order 7 is now paused (was running)',
    );
    expect(statusChangedText({ order_id: 7, from: 'paused', to: 'running', spot: true })).toBe(
      'Order 7 is now running (was paused)',
    );
  });
});

describe('Function: spot price decrease rule', () => {
  it('refuses a decrease within 600 s of the previous one', () => {
    expect(spotDecreaseRefusal(7, 1_000, 1_250)).toBe(
      'spot price of order 7 was lowered 250 s ago; the marketplace allows one decrease per 600 s (retry in 350 s)',
    );
    expect(spotDecreaseRefusal(7, 1_000, 1_600)).toBeUndefined();
    expect(spotDecreaseRefusal(7, undefined, 1_000)).toBeUndefined();
  });

  it('refuses exactly when less than 600 s passed (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 5_000 }), (last, ago) => {
        expect(spotDecreaseRefusal(1, last, last + ago) !== undefined).toBe(ago < 600);
      }),
    );
  });

  it('names the marketplace reason and its numbers', () => {
    expect(spotPriceRefusedText(7, 0.1, 'too_low_price', { min_price: 0.2 })).toBe(
      'marketplace refused spot price 0.1 for order 7: too_low_price (min_price 0.2)',
    );
    expect(spotPriceRefusedText(7, 0.1, 'exceeded_max_step')).toBe(
      'marketplace refused spot price 0.1 for order 7: exceeded_max_step',
    );
  });
});
