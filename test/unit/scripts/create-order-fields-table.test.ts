/** docs/api.md's create-order fields are what the request schema takes (issue 37 §6). */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { createOrderFieldsTable, withCreateOrderFieldsTable } from '../../../lambdas/http/create-order-fields-table';
import { CreateOrderLeaseBodySchema } from '../../../lambdas/http/create-order-requests';

const DOC = path.join(__dirname, '..', '..', '..', 'docs', 'api.md');

describe('docs/api.md create-order fields', () => {
  it('is what the request schema generates now (else: npm run docs:settings, and commit the result)', () => {
    const committed = readFileSync(DOC, 'utf8');
    expect(withCreateOrderFieldsTable(committed)).toBe(committed);
  });

  it('has one row per field of the schema, the ones the issue found missing and the access fields among them', () => {
    const rows = createOrderFieldsTable().split('\n').slice(2);
    const fields = Object.keys(CreateOrderLeaseBodySchema.def.shape);
    expect(rows.map((row) => /^\| `([a-z_]+)` \|/.exec(row)?.[1])).toEqual(fields);
    for (const name of [
      'min_reliability',
      'min_rating',
      'min_rating_count',
      'exclude_servers',
      'prefer',
      'ssh_public_key',
      'ssh_password',
      'jupyter_token',
      'ports',
      'command',
    ])
      expect(fields).toContain(name);
  });

  it('notices a drift: an edited row no longer matches', () => {
    const committed = readFileSync(DOC, 'utf8');
    const edited = committed.replace('| `use_spot` | no | boolean |', '| `use_spot` | yes | boolean |');
    expect(edited).not.toBe(committed);
    expect(withCreateOrderFieldsTable(edited)).not.toBe(edited);
  });
});
