/**
 * Servers `npm start`'s simulator lists besides its seeded catalogue (issue 28): enough cheap single
 * RTX 4090s and A100s that every `gpu-relay` example of README.md and docs/, run in document order
 * against one `npm start`, finds a server (test/e2e/docs-cli-examples.test.ts runs them). The seeded
 * catalogue alone has three RTX 4090s under $0.50/h payable in the default coin. Tests that start the
 * simulator themselves keep the seeded catalogue unless they ask for these.
 */
import { USD_PER } from './catalogue';
import type { SimServer } from './catalogue';

/** Ids of these servers start here, well after the seeded catalogue's. */
export const FIRST_DOCS_SERVER_ID = 2000;

const RTX_4090 = {
  name: 'NVIDIA GeForce RTX 4090',
  cpu: 'AMD Ryzen 9 7950X 16-Core Processor',
  ram: 64,
  spotUsd: [0.24, 0.25, 0.26, 0.27, 0.28, 0.29, 0.3, 0.31, 0.32, 0.33],
  onDemandUsd: 0.4,
};
const A100 = {
  name: 'NVIDIA A100 80GB PCIe',
  cpu: 'AMD EPYC 7763 64-Core Processor',
  ram: 128,
  spotUsd: [0.95, 0.99],
  onDemandUsd: 1.15,
};

const round = (value: number, digits: number): number => Number(value.toFixed(digits));
const perDay = (usdPerHour: number, coin: keyof typeof USD_PER): number =>
  round((usdPerHour * 24) / USD_PER[coin], coin === 'bitcoin' ? 8 : 4);

/** The extra servers, in listing order: every one online, free, with a spot market, paid in any coin. */
export const documentedExampleServers = (): SimServer[] =>
  [RTX_4090, A100]
    .flatMap((model) => model.spotUsd.map((spotUsd) => ({ model, spotUsd })))
    .map(({ model, spotUsd }, i) => ({
      id: FIRST_DOCS_SERVER_ID + i,
      owner: 150,
      mrl: 720,
      rented: false,
      online: true,
      price: {
        on_demand: {
          bitcoin: perDay(model.onDemandUsd, 'bitcoin'),
          'NATIVE-Blockchain': perDay(model.onDemandUsd, 'NATIVE-Blockchain'),
          'USD-Blockchain': perDay(model.onDemandUsd, 'USD-Blockchain'),
        },
        spot: { bitcoin: perDay(spotUsd, 'bitcoin'), 'NATIVE-Blockchain': perDay(spotUsd, 'NATIVE-Blockchain') },
        usd: { on_demand_native: model.onDemandUsd, spot: spotUsd },
      },
      specs: { gpu: `1x ${model.name}`, cpu: model.cpu, ram: model.ram, disk: 'Samsung SSD 980 PRO 1000GB' },
      gpu_array: [model.name],
      reliability: 0.99,
      rating: { avg: 4.8, cnt: 40 },
      allowed_coins: ['bitcoin', 'NATIVE-Blockchain', 'USD-Blockchain'],
    }));
