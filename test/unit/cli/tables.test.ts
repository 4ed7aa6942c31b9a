/** The CLI's words for people: the status table and what a wait is waiting for (issue 28). */
import { statusTable, table, utcTime, waitingWords } from '../../../cli/tables';

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

  it('prints an empty account as such', () => {
    expect(statusTable({ total_orders: 0, active: 0, creating: 0, orders: [] }, NOW)).toBe(
      'no orders\n0 orders: 0 running, 0 being created',
    );
  });
});
