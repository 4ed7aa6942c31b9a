import { marketplacePriceUsdPerHour, usdPerHourPerUnit } from '../../../lambdas/domain/usd-per-hour';
import { aServer } from '../../fakes/builders';

describe('Function: marketplacePriceUsdPerHour', () => {
  // 8002.07 CLORE a day is $10/day = $0.416667/h (live-v2 marketplace-prices-per-day.json, server 111444).
  const server = aServer(1, {
    price: {
      on_demand: { 'CLORE-Blockchain': 8002.07 },
      spot: { 'CLORE-Blockchain': 4000, bitcoin: 0.0001 },
      usd_per_hour: { on_demand: { 'CLORE-Blockchain': 0.416667 }, spot: 0.2 },
    },
  });

  it('uses the on-demand prices of the currency (the exact per-coin rate)', () => {
    expect(marketplacePriceUsdPerHour(server, 'CLORE-Blockchain', 8002.07)).toBe(0.416667);
    expect(marketplacePriceUsdPerHour(server, 'CLORE-Blockchain', 1540)).toBe(0.0801876);
  });

  it('falls back to the spot prices when the currency has no on-demand pair', () => {
    expect(usdPerHourPerUnit(server, 'bitcoin')).toBeCloseTo(2000, 9);
    expect(marketplacePriceUsdPerHour(server, 'bitcoin', 0.00015)).toBe(0.3);
  });

  it('is null when the server states no rate for the currency, or is unknown', () => {
    expect(marketplacePriceUsdPerHour(server, 'USD-Blockchain', 2)).toBeNull();
    expect(marketplacePriceUsdPerHour(undefined, 'CLORE-Blockchain', 2)).toBeNull();
  });
});
