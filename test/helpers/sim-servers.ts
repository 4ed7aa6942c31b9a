/**
 * Servers the e2e tests add to the embedded simulator through its control API, with a GPU name no
 * catalogue server has, so a test decides exactly which servers match. `coin` is the dialect's
 * native coin (`control.nativeCoin`): the control speaks the dialect's coin names.
 */
import type { SimServer } from '../../local/simulator/catalogue';

export const uniqueServer = (id: number, gpu: string, coin: string): SimServer => ({
  id,
  owner: 7,
  mrl: 48,
  rented: false,
  online: true,
  price: { on_demand: { [coin]: 20 }, spot: { [coin]: 8 }, usd: { on_demand_native: 0.9, spot: 0.45 } },
  specs: { gpu: `1x ${gpu}`, cpu: 'test cpu', ram: 64, disk: '1TB nvme' },
  gpu_array: [gpu],
  reliability: 0.99,
  rating: { avg: 4.9, cnt: 10 },
  allowed_coins: [coin],
});
