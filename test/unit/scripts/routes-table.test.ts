/** docs/api.md's route table is what contract/routes.ts (and contract/route-docs.ts) declare (issue 28). */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROUTE_DOCS } from '../../../contract/route-docs';
import { ROUTES } from '../../../contract/routes';
import { routeKey, routesTable, withRoutesTable } from '../../../contract/routes-table';

const DOC = path.join(__dirname, '..', '..', '..', 'docs', 'api.md');

describe('docs/api.md route table', () => {
  it('is what contract/routes.ts generates now (else: npm run docs:settings, and commit the result)', () => {
    const committed = readFileSync(DOC, 'utf8');
    expect(withRoutesTable(committed)).toBe(committed);
  });

  it('has one row per route, and route-docs.ts describes exactly the routes there are', () => {
    const rows = routesTable().split('\n').slice(2);
    expect(rows).toHaveLength(ROUTES.length);
    for (const route of ROUTES) expect(rows.some((row) => row.startsWith(`| \`${routeKey(route)}\` |`))).toBe(true);
    expect(Object.keys(ROUTE_DOCS).sort()).toEqual(ROUTES.map(routeKey).sort());
  });

  it('names the routes the issue found missing', () => {
    const table = routesTable();
    for (const route of ['POST /webhook/cancel-task', 'GET /webhook/spend', 'POST /admin/keys'])
      expect(table).toContain(`| \`${route}\` |`);
  });

  it('notices a drift: an edited row no longer matches', () => {
    const committed = readFileSync(DOC, 'utf8');
    const edited = committed.replace(
      '| `GET /webhook/marketplace` | no | none |',
      '| `GET /webhook/marketplace` | yes | none |',
    );
    expect(edited).not.toBe(committed);
    expect(withRoutesTable(edited)).not.toBe(edited);
  });
});
