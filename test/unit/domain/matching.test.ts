import {
  chosenText,
  findMatchingServer,
  findMatchingServers,
  noMatchMessage,
  noMatchText,
  serverMatches,
} from '../../../lambdas/domain/hosts/matching';
import type { Server } from '../../../lambdas/domain/marketplace-types';

const NATIVE = 'NATIVE-Blockchain';
const server = (
  id: number,
  patch: Partial<Server> & { spot?: Record<string, number>; usdSpot?: number; usdOnDemand?: number } = {},
): Server => {
  const { spot, usdSpot, usdOnDemand, ...rest } = patch;
  return {
    id,
    owner: 1,
    mrl: 24,
    rented: false,
    price: {
      on_demand: { [NATIVE]: 10, bitcoin: 0.0001 },
      spot: spot ?? { [NATIVE]: 5, bitcoin: 0.00005 },
      usd_per_hour: { on_demand: { 'NATIVE-Blockchain': usdOnDemand ?? 1.2 }, spot: usdSpot ?? 0.6 },
    },
    specs: { gpu: '1x NVIDIA GeForce RTX 4090', cpu: 'x', ram: 64, disk: '1TB' },
    gpu_array: ['NVIDIA RTX 4090'],
    reliability: 0.99,
    rating: { avg: 5, cnt: 3 },
    allowed_coins: [NATIVE, 'bitcoin'],
    ...rest,
  };
};
const spot = { gpu_type: '4090', currency: NATIVE, use_spot: true };

describe('Function: findMatchingServer', () => {
  it('returns the first match in marketplace order', () => {
    // Prepare
    const servers = [server(1, { gpu_array: ['NVIDIA A100'] }), server(2), server(3)];
    // Act
    const match = findMatchingServer(servers, spot);
    // Assess
    expect(match?.id).toBe(2);
  });

  it('matches gpu_type case-insensitively as a substring of any gpu_array entry', () => {
    const servers = [server(1, { gpu_array: ['AMD MI300', 'nvidia h100 sxm'] })];
    expect(findMatchingServer(servers, { ...spot, gpu_type: 'H100' })?.id).toBe(1);
    expect(findMatchingServer(servers, { ...spot, gpu_type: 'mi3' })?.id).toBe(1);
    expect(findMatchingServer(servers, { ...spot, gpu_type: 'A100' })).toBeUndefined();
  });

  it('skips rented servers, servers without the currency and (for spot) without a spot price in it', () => {
    const servers = [
      server(1, { rented: true }),
      server(2, { allowed_coins: ['bitcoin'] }),
      server(3, { spot: { bitcoin: 0.1 } }),
      server(4),
    ];
    expect(findMatchingServer(servers, spot)?.id).toBe(4);
    // On-demand does not need a spot price.
    expect(findMatchingServer(servers, { ...spot, use_spot: false })?.id).toBe(3);
  });

  it('treats max_price as inclusive, against usd_per_hour.spot for spot and the on-demand USD price in the order currency', () => {
    const servers = [server(1, { usdSpot: 0.61, usdOnDemand: 0.5 }), server(2, { usdSpot: 0.6, usdOnDemand: 0.9 })];
    expect(findMatchingServer(servers, { ...spot, max_price: 0.6 })?.id).toBe(2);
    expect(findMatchingServer(servers, { ...spot, max_price: 0.59 })).toBeUndefined();
    expect(findMatchingServer(servers, { ...spot, use_spot: false, max_price: 0.5 })?.id).toBe(1);
    expect(findMatchingServer(servers, { ...spot, use_spot: false, max_price: 0.49 })).toBeUndefined();
  });

  it('does not match a capped request when the compared price is missing', () => {
    const s = server(1);
    const noUsd: Server = { ...s, price: { ...s.price, usd_per_hour: { on_demand: {} } } };
    expect(serverMatches(noUsd, { ...spot, max_price: 100 })).toBe(false);
    expect(serverMatches(noUsd, spot)).toBe(true);
  });

  it('compares an on-demand cap with the USD price of the coin the order is paid in', () => {
    const s = server(1);
    const perCoin: Server = {
      ...s,
      allowed_coins: ['CLORE-Blockchain', 'bitcoin'],
      price: { ...s.price, usd_per_hour: { on_demand: { 'CLORE-Blockchain': 0.4, bitcoin: 0.7 } } },
    };
    const onDemand = { ...spot, use_spot: false, max_price: 0.5 };
    expect(serverMatches(perCoin, { ...onDemand, currency: 'CLORE-Blockchain' })).toBe(true);
    expect(serverMatches(perCoin, { ...onDemand, currency: 'bitcoin' })).toBe(false);
  });

  it('skips a spot candidate whose spot price in the order currency is 0 or missing, and takes the next', () => {
    const zero: Server = { ...server(1), price: { ...server(1).price, spot: { 'NATIVE-Blockchain': 0 } } };
    const otherCoin: Server = { ...server(2), price: { ...server(2).price, spot: { bitcoin: 0.0001 } } };
    expect(findMatchingServer([zero, otherCoin, server(3)], spot)?.id).toBe(3);
  });

  it('leaves out excluded and claimed servers', () => {
    const servers = [server(1), server(2), server(3)];
    expect(findMatchingServer(servers, { ...spot, exclude: [1] })?.id).toBe(2);
    expect(findMatchingServer(servers, { ...spot, exclude: [1], claimed: new Set([2]) })?.id).toBe(3);
    expect(findMatchingServers(servers, { ...spot, claimed: [1, 3] }).map((s) => s.id)).toEqual([2]);
  });
});

describe('Function: noMatchMessage', () => {
  it('names the gpu and the price cap', () => {
    expect(noMatchMessage('H100', 2.5)).toBe('No H100 available under $2.5/hr');
  });

  it('leaves out the price part without a cap', () => {
    expect(noMatchMessage('H100')).toBe('No H100 available');
  });
});

describe('Function: noMatchText', () => {
  const listing = [
    server(1, { gpu_array: ['NVIDIA GeForce RTX 4090'], rented: true }),
    server(2, { gpu_array: ['NVIDIA GeForce RTX 3090'] }),
    server(3, { gpu_array: ['NVIDIA GeForce RTX 4090'] }),
    server(4, { gpu_array: [] }),
  ];

  it('lists the models on offer when no server has that GPU at all (issue 28)', () => {
    expect(noMatchText(listing, 'RTX 9999')).toBe('No RTX 9999 available; models listed now: RTX 4090, RTX 3090');
  });

  it('keeps the plain text when some server has the GPU (rented, or over the cap)', () => {
    expect(noMatchText(listing, 'rtx 4090', 0.01)).toBe('No rtx 4090 available under $0.01/hr');
  });

  it('lists at most 12 models, then …', () => {
    const many = Array.from({ length: 14 }, (_, i) => server(i + 10, { gpu_array: [`NVIDIA Model ${i}`] }));
    expect(noMatchText(many, 'X1')).toMatch(/; models listed now: Model 0, .*, Model 11, …$/);
  });
});

describe('Function: chosenText', () => {
  it('names the rule, the matches and the price, without fees when the marketplace charges none', () => {
    expect(chosenText('cheapest', 7, 0.31)).toBe('cheapest of 7 matches at $0.31/h');
    expect(chosenText(undefined, 1, undefined)).toBe('first of 1 match');
  });

  it('adds the all-in price per hour and the creation fee, each only when it is not zero (issue 31 §6)', () => {
    const fees = { renter_fee_percent: 5, creation_fee_usd: 0.1 };
    expect(chosenText('cheapest', 7, 0.31, fees)).toBe(
      'cheapest of 7 matches at $0.31/h ($0.33/h with the 5 % renter fee, + $0.10 per order)',
    );
    expect(chosenText('reliable', 2, 2, { ...fees, creation_fee_usd: 0 })).toBe(
      'reliable of 2 matches at $2/h ($2.10/h with the 5 % renter fee)',
    );
    expect(chosenText('first', 2, 2, { ...fees, renter_fee_percent: 0 })).toBe(
      'first of 2 matches at $2/h (+ $0.10 per order)',
    );
    expect(chosenText('first', 2, undefined, fees)).toBe('first of 2 matches');
  });
});
