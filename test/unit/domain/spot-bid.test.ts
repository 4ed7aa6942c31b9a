import { cappedSpotBid, spotBid, spotBidFor } from '../../../lambdas/domain/leases/spot-bid';
import type { Server } from '../../../lambdas/domain/marketplace-types';

describe('Function: spotBid', () => {
  it('bids 1.1 times the spot price without floating-point noise', () => {
    expect(spotBid(0.3)).toBe(0.33);
    expect(spotBid(5)).toBe(5.5);
  });

  it('keeps tiny crypto prices', () => {
    expect(spotBid(0.00001234)).toBeCloseTo(0.000013574, 12);
    expect(spotBid(0.00001234)).toBeGreaterThan(0);
  });

  it('throws on a non-positive price', () => {
    expect(() => spotBid(0)).toThrow(RangeError);
    expect(() => spotBid(Number.NaN)).toThrow(RangeError);
  });
});

describe('Function: spotBidFor', () => {
  const server = { price: { spot: { bitcoin: 0.002 }, on_demand: {}, usd_per_hour: {} } } as unknown as Server;

  it('uses the spot price of the order currency', () => {
    expect(spotBidFor(server, 'bitcoin')).toBe(0.0022);
  });

  it('returns undefined when the server has no spot price in the currency', () => {
    expect(spotBidFor(server, 'NATIVE-Blockchain')).toBeUndefined();
  });
});

describe('Function: cappedSpotBid (issue 38 §8)', () => {
  it('bids min(1.1 × spot, cap), rounded down so the bid never passes the cap', () => {
    expect(cappedSpotBid(2, 2.0833333333333335)).toBe(2.083333333);
    expect(cappedSpotBid(2, 3)).toBe(2.2);
    expect(cappedSpotBid(2, undefined)).toBe(2.2);
  });

  it('never bids below the listed spot price', () => {
    expect(cappedSpotBid(2, 1.5)).toBe(2);
  });
});

describe('Function: spotBidFor with max_price', () => {
  const server = {
    price: { spot: { coin: 2 }, on_demand: { coin: 10 }, usd_per_hour: { on_demand: { coin: 1.2 }, spot: 0.24 } },
  } as unknown as Server;

  it("converts max_price (USD/h) to the order's coin at the server's rate", () => {
    expect(spotBidFor(server, 'coin', 0.25)).toBe(2.083333333);
    expect(spotBidFor(server, 'coin', 1)).toBe(2.2);
  });
});
