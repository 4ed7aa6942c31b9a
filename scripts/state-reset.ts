/**
 * `npm run state:reset`: empties the folder `npm start` keeps its state in (STATE_DIR from the
 * environment or `.env`, default `.relay/state`): caller keys, budgets, the ledger, leases, waiting
 * standing orders, queued jobs and workflow executions are gone. Refused while a relay uses it.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { loadDotenv } from '../local/dotenv';
import { checkLevelFolder } from '../local/dynalite';
import { DEFAULT_STATE_DIR, resetStateDir, statePaths } from '../local/state-dir';

const main = async (): Promise<void> => {
  loadDotenv(path.resolve(process.cwd(), '.env'));
  const paths = statePaths(path.resolve(process.cwd(), process.env.STATE_DIR || DEFAULT_STATE_DIR));
  if (!existsSync(paths.dir)) {
    console.log(`state:reset: ${paths.dir} does not exist; nothing to do.`);
    return;
  }
  // The table's LevelDB lock tells whether an npm start holds the folder.
  if (existsSync(paths.table)) await checkLevelFolder(paths.table);
  resetStateDir(paths.dir);
  console.log(`state:reset: emptied ${paths.dir}; the next npm start begins with an empty state.`);
};

main().catch((error: unknown) => {
  console.error(`state:reset refused: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
