/**
 * `npm run docs:settings`: rewrites the generated tables of the docs (commit the result): the settings
 * table of docs/configuration.md from contract/settings.ts, and the route table of docs/api.md from
 * contract/routes.ts and contract/route-docs.ts, and its create-order field table from the request schema.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { withRoutesTable } from '../contract/routes-table';
import { withSettingsTable } from '../contract/settings-table';
import { withCreateOrderFieldsTable } from '../lambdas/http/create-order-fields-table';

const docs = path.join(__dirname, '..', 'docs');
const rewrite = (name: string, update: (text: string) => string): void =>
  writeFileSync(path.join(docs, name), update(readFileSync(path.join(docs, name), 'utf8')));

rewrite('configuration.md', withSettingsTable);
rewrite('api.md', (text) => withCreateOrderFieldsTable(withRoutesTable(text)));
