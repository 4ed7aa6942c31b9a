import { spotBid, spotBidFor } from '../../../lambdas/domain/leases/spot-bid';
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
