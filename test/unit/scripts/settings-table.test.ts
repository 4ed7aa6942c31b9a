/** docs/configuration.md's settings table is what contract/settings.ts declares (issue 22, item 1). */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { settingsTable, withSettingsTable } from '../../../contract/settings-table';
import { SETTINGS } from '../../../contract/settings';

const DOC = path.join(__dirname, '..', '..', '..', 'docs', 'configuration.md');

describe('docs/configuration.md settings table', () => {
  it('is what contract/settings.ts generates now (else: npm run docs:settings, and commit the result)', () => {
    const committed = readFileSync(DOC, 'utf8');
    expect(withSettingsTable(committed)).toBe(committed);
  });

  it('has one row per setting, naming its env variable', () => {
    const rows = settingsTable().split('\n').slice(2);
    expect(rows).toHaveLength(Object.keys(SETTINGS).length);
    for (const s of Object.values(SETTINGS)) expect(rows.some((row) => row.startsWith(`| \`${s.env}\` |`))).toBe(true);
  });

  it('notices a drift: an edited row no longer matches', () => {
    const committed = readFileSync(DOC, 'utf8');
    const edited = committed.replace(
      '| `MAX_ORDERS_PER_HOUR` | `maxOrdersPerHour` | `10` |',
      '| `MAX_ORDERS_PER_HOUR` | `maxOrdersPerHour` | `11` |',
    );
    expect(edited).not.toBe(committed);
    expect(withSettingsTable(edited)).not.toBe(edited);
  });
});
