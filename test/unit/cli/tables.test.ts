/** The CLI's words for people: the status table and what a wait is waiting for (issue 28). */
import { marketplaceTable, statusTable, table, utcTime, waitingWords } from '../../../cli/tables';

const NOW = new Date('2026-11-27T10:00:00Z');
const at = (iso: string): number => Date.parse(iso) / 1000;

describe('CLI tables', () => {
  it('aligns columns under their header', () => {
    expect(table(['A', 'LONG'], [['xyz', '1']]).split('\n')).toEqual(['A    LONG', 'xyz  1']);
  });

  it('writes today as the time only, another day with its date', () => {
    expect(utcTime(at('2026-11-27T14:05:30Z'), NOW)).toBe('14:05 UTC');
    expect(utcTime(at('2026-11-28T01:02:00Z'), NOW)).toBe('2026-11-28 01:02 UTC');
  });

  it('says where a standing order waits: position and end of the wait', () => {
    expect(waitingWords('t-1', { state: 'waiting', position: 2, waiting_until: at('2026-11-27T14:05:00Z') }, NOW)).toBe(
      'waiting for a server (position 2, until 14:05 UTC)',
    );
    expect(waitingWords('t-1', { state: 'waiting' }, NOW)).toBe('waiting for a server');
    expect(waitingWords('t-1', { state: 'running' }, NOW)).toBe('waiting for task t-1: running');
    expect(waitingWords('t-1', undefined, NOW)).toBe('waiting for task t-1');
  });

  it('prints the marketplace models cheapest first, a model without a spot price by its on-demand one', () => {
    const text = marketplaceTable({
      models: {
        H100: { available: 1, total: 2, min_price_usd_per_hour: { spot: 2.2, on_demand: 3 } },
        'RTX 4090': { available: 3, total: 4, min_price_usd_per_hour: { spot: 0.25, on_demand: 0.4 } },
        'RTX 3080': { available: 1, total: 1, min_price_usd_per_hour: { spot: null, on_demand: 0.1 } },
        A100: { available: 0, total: 1, min_price_usd_per_hour: { spot: null, on_demand: null } },
      },
      total_servers: 8,
      total_available: 5,
    }).split('\n');
    expect(text[0]).toMatch(/^GPU TYPE\s+AVAILABLE\s+TOTAL\s+SPOT FROM\s+ON-DEMAND FROM$/);
    expect(text.slice(1, 5).map((l) => l.split(/\s{2,}/))).toEqual([
      ['RTX 3080', '1', '1', '-', '$0.100'],
      ['RTX 4090', '3', '4', '$0.250', '$0.400'],
      ['H100', '1', '2', '$2.20', '$3.00'],
      ['A100', '0', '1', '-', '-'],
    ]);
    expect(text[5]).toBe('5 of 8 servers available; rent one with --gpu "<GPU TYPE>"');
  });

  it('prints an empty account as such', () => {
    expect(statusTable({ total_orders: 0, active: 0, creating: 0, orders: [] }, NOW)).toBe(
      'no orders\n0 orders: 0 running, 0 being created',
    );
  });
});
