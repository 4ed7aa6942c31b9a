import {
  gpuGroupKey,
  gpuModelName,
  listedModels,
  summarizeMarketplace,
} from '../../../lambdas/domain/marketplace-summary';
import type { Server } from '../../../lambdas/domain/marketplace-types';

const server = (id: number, gpus: string[], rented: boolean, spot?: number): Server => ({
  id,
  owner: 1,
  mrl: 24,
  rented,
  price: {
    on_demand: {},
    spot: {},
    usd_per_hour: { on_demand: { 'NATIVE-Blockchain': 1 }, ...(spot !== undefined ? { spot } : {}) },
  },
  specs: { gpu: `${gpus.length}x ${gpus[0] ?? ''}`, cpu: 'cpu', ram: 32, disk: 'ssd' },
  gpu_array: gpus,
  reliability: 0.99,
  rating: { avg: 5, cnt: 1 },
  allowed_coins: ['NATIVE-Blockchain'],
});

describe('Function: summarizeMarketplace', () => {
  it('groups by the first word of the first GPU name, counting availability and the lowest spot price', () => {
    // Prepare
    const servers = [
      server(1, ['NVIDIA RTX 4090', 'NVIDIA RTX 4090'], false, 0.5),
      server(2, ['NVIDIA A100'], true, 0.3),
      server(3, ['AMD MI250'], false),
      server(4, ['NVIDIA H100'], false, 0.9),
    ];
    // Act
    const summary = summarizeMarketplace(servers);
    // Assess
    expect(summary).toEqual({
      status: 'ok',
      summary: { NVIDIA: { available: 2, total: 3, min_price: 0.3 }, AMD: { available: 1, total: 1, min_price: null } },
      models: {
        'RTX 4090': {
          available: 1,
          total: 1,
          min_price_usd_per_hour: { spot: 0.5, on_demand: 1 },
          all_in_usd_per_hour: { spot: 0.5, on_demand: 1 },
          creation_fee_usd: 0,
        },
        H100: {
          available: 1,
          total: 1,
          min_price_usd_per_hour: { spot: 0.9, on_demand: 1 },
          all_in_usd_per_hour: { spot: 0.9, on_demand: 1 },
          creation_fee_usd: 0,
        },
        MI250: {
          available: 1,
          total: 1,
          min_price_usd_per_hour: { spot: null, on_demand: 1 },
          all_in_usd_per_hour: { spot: null, on_demand: 1 },
          creation_fee_usd: 0,
        },
        A100: {
          available: 0,
          total: 1,
          min_price_usd_per_hour: { spot: null, on_demand: null },
          all_in_usd_per_hour: { spot: null, on_demand: null },
          creation_fee_usd: 0,
        },
      },
      total_servers: 4,
      total_available: 3,
    });
  });

  it('skips servers without GPUs and leaves them out of the totals', () => {
    const noGpu = { ...server(5, [], false, 0.1) };
    const missing = { ...server(6, ['x'], false, 0.1), gpu_array: undefined } as unknown as Server;
    const blank = server(7, ['   '], false, 0.1);
    const summary = summarizeMarketplace([noGpu, missing, blank, server(8, ['Tesla V100'], true, 0.2)]);
    expect(summary).toEqual({
      status: 'ok',
      summary: { Tesla: { available: 0, total: 1, min_price: 0.2 } },
      models: {
        'Tesla V100': {
          available: 0,
          total: 1,
          min_price_usd_per_hour: { spot: null, on_demand: null },
          all_in_usd_per_hour: { spot: null, on_demand: null },
          creation_fee_usd: 0,
        },
      },
      total_servers: 1,
      total_available: 0,
    });
  });

  it('returns empty totals for an empty marketplace', () => {
    expect(summarizeMarketplace([])).toEqual({
      status: 'ok',
      summary: {},
      models: {},
      total_servers: 0,
      total_available: 0,
    });
  });

  it('keeps a GPU word like __proto__ as an ordinary key', () => {
    const summary = summarizeMarketplace([server(1, ['__proto__ X'], false, 1)]);
    expect(Object.keys(summary.summary)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(summary)).summary.__proto__).toEqual({ available: 1, total: 1, min_price: 1 });
  });

  it.each([
    ['NVIDIA GeForce RTX 4090', 'RTX 4090'],
    ['NVIDIA A100 80GB PCIe', 'A100 80GB PCIe'],
    ['NVIDIA RTX A6000', 'RTX A6000'],
    ['  NVIDIA   L40S ', 'L40S'],
    ['AMD Radeon RX 7900 XTX', 'RX 7900 XTX'],
    ['NVIDIA', 'NVIDIA'],
    ['   ', undefined],
  ])('the model name of %j is %j (what a caller passes as gpu_type)', (gpu, model) => {
    expect(gpuModelName(gpu)).toBe(model);
  });

  it('sorts models by the lowest available spot price, on-demand when there is none', () => {
    const summary = summarizeMarketplace([
      server(1, ['NVIDIA H100'], false, 2),
      server(2, ['NVIDIA GeForce RTX 3090'], false, 0.1),
      server(3, ['NVIDIA GeForce RTX 4090'], false, 0.3),
      server(4, ['NVIDIA GeForce RTX 4090'], false, 0.2),
    ]);
    expect(Object.keys(summary.models)).toEqual(['RTX 3090', 'RTX 4090', 'H100']);
    expect(summary.models['RTX 4090']).toEqual({
      available: 2,
      total: 2,
      min_price_usd_per_hour: { spot: 0.2, on_demand: 1 },
      all_in_usd_per_hour: { spot: 0.2, on_demand: 1 },
      creation_fee_usd: 0,
    });
    expect(listedModels([server(1, ['NVIDIA H100', 'NVIDIA H100'], false), server(2, [], false)])).toEqual(['H100']);
  });

  it('shows the all-in price per hour (price × (1 + renter fee)) and the creation fee beside the prices (issue 31 §6)', () => {
    // Prepare: 5 % renter fee and $0.10 per order, as production charges
    const fees = { renter_fee_percent: 5, creation_fee_usd: 0.1 };
    // Act
    const summary = summarizeMarketplace([server(1, ['NVIDIA H100'], false, 2), server(2, ['AMD MI250'], false)], fees);
    // Assess: the spec's fields are unchanged, the fees come beside them
    expect(summary.models.H100).toEqual({
      available: 1,
      total: 1,
      min_price_usd_per_hour: { spot: 2, on_demand: 1 },
      all_in_usd_per_hour: { spot: 2.1, on_demand: 1.05 },
      creation_fee_usd: 0.1,
    });
    expect(summary.models.MI250.all_in_usd_per_hour).toEqual({ spot: null, on_demand: 1.05 });
  });

  it('splits on any whitespace', () => {
    expect(gpuGroupKey({ gpu_array: ['  NVIDIA\tRTX'] })).toBe('NVIDIA');
  });
});
