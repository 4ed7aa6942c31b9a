import {
  budgetApplies,
  budgetExceededText,
  hoursHeld,
  settlementShares,
  usdText,
  utcDay,
} from '../../../lambdas/domain/teams/spend-budget';
import { readSpendDay, spendRange, spendReport } from '../../../lambdas/domain/teams/spend-ledger';

describe('Spending budgets: pure rules', () => {
  it('formats money with two decimals and names the limit that refused', () => {
    expect(usdText(4)).toBe('$4.00');
    expect(usdText(0.125)).toBe('$0.13');
    expect(budgetExceededText({ scope: 'relay', key: 'default', used: 18, limit: 20, needed: 4 })).toBe(
      'budget exceeded: $18.00 of $20.00 today; this order needs up to $4.00',
    );
    expect(budgetExceededText({ scope: 'key', key: 'ci', used: 4.5, limit: 5, needed: 1 })).toBe(
      'budget exceeded: $4.50 of $5.00 today (key ci); this order needs up to $1.00',
    );
  });

  it('applies a budget when the relay has a limit or the key has one; days are UTC', () => {
    expect(budgetApplies(undefined, undefined)).toBe(false);
    expect(budgetApplies(undefined, { key: 'ci' })).toBe(false);
    expect(budgetApplies(20, undefined)).toBe(true);
    expect(budgetApplies(undefined, { key: 'ci', budget_usd_per_day: 5 })).toBe(true);
    expect(utcDay(Date.UTC(2026, 10, 25, 23, 59, 59))).toBe('2026-11-25');
  });

  it("holds from readiness (the marketplace's billed hours only without it); charges segments in reservation order, the last takes any excess", () => {
    expect(hoursHeld({ started_at: 0 }, { ended_at: 5400 })).toBe(1.5);
    // Production's spend / current price is off after a raise and includes the fee: readiness wins.
    expect(hoursHeld({ started_at: 0 }, { ended_at: 5400, billed_hours: 1 })).toBe(1.5);
    expect(hoursHeld({}, { ended_at: 5400, billed_hours: 1 })).toBe(1);
    expect(hoursHeld({}, { ended_at: 5400 })).toBe(0);
    const a = { id: 's1', day: 'd1', usd: 4, hours: 8, at: 1 };
    const b = { id: 'x1', day: 'd2', usd: 2, hours: 4, at: 2 };
    expect(settlementShares([b, a], 5).map((s) => [s.segment.id, s.share])).toEqual([
      ['s1', 4],
      ['x1', 1],
    ]);
    expect(settlementShares([a, b], 7).map((s) => s.share)).toEqual([4, 3]);
  });

  it('reads ranges (400 on bad dates, reversed or over 400 days) and reports per key and day', () => {
    expect(spendRange(undefined, undefined, '2026-11-25')).toEqual({ days: ['2026-11-25'] });
    expect(spendRange('2026-02-30', undefined, '2026-11-25')).toEqual({ error: 'from must be a date YYYY-MM-DD' });
    expect(spendRange('2026-11-26', '2026-11-25', '2026-11-25')).toEqual({ error: 'from must not be after to' });
    expect(spendRange('2025-01-01', '2026-11-25', '2026-11-25')).toEqual({ error: 'at most 400 days per request' });
    const day = readSpendDay('2026-11-25', {
      held: 4,
      settled: 1.5,
      orders: 1,
      gpu_hours: 3,
      'held@ci': 4,
      'settled@ops': 1.5,
      'orders@ops': 1,
      'gpu_hours@ops': 3,
      'open@t/s1': 4,
    });
    const report = spendReport(['2026-11-25'], new Map([['2026-11-25', day]]), { limitUsdPerDay: 20 });
    expect(report.days).toEqual([
      { day: '2026-11-25', key: 'ci', reserved_usd: 4, settled_usd: 0, orders: 0, gpu_hours: 0 },
      { day: '2026-11-25', key: 'ops', reserved_usd: 0, settled_usd: 1.5, orders: 1, gpu_hours: 3 },
    ]);
    expect(report.total).toEqual({ reserved_usd: 4, settled_usd: 1.5, orders: 1, gpu_hours: 3 });
    expect(
      spendReport(['2026-11-25'], new Map([['2026-11-25', day]]), { onlyKey: 'ci' }).keys.map((k) => k.key),
    ).toEqual(['ci']);
  });
});
