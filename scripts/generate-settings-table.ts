/** `npm run docs:settings`: rewrites the settings table of docs/configuration.md from contract/settings.ts (commit the result). */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { withSettingsTable } from '../contract/settings-table';

const file = path.join(__dirname, '..', 'docs', 'configuration.md');
writeFileSync(file, withSettingsTable(readFileSync(file, 'utf8')));
