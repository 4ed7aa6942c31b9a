/**
 * `npm run state:snapshot -- <dir>`: a copy of `npm start`'s kept state (STATE_DIR from the
 * environment or `.env`, default `.relay/state`) as a new state folder at `<dir>`, which a stopped
 * relay starts from with `STATE_DIR=<dir> npm start`. While a relay runs on the state, the relay
 * takes the snapshot itself through its loopback control (the state at one instant; requests go on
 * being served); while none runs, the folder is read directly, its lock held so none starts meanwhile.
 */
import * as path from 'node:path';
import { loadDotenv } from '../local/dotenv';
import { requestSnapshot } from '../local/state-control';
import { captureStoppedState, writeSnapshot } from '../local/state-snapshot';
import { DEFAULT_STATE_DIR, statePaths } from '../local/state-dir';

const main = async (): Promise<void> => {
  loadDotenv(path.resolve(process.cwd(), '.env'));
  const args = process.argv.slice(2);
  if (args.length !== 1 || args[0]!.startsWith('-')) throw new Error('usage: npm run state:snapshot -- <new folder>');
  const source = statePaths(path.resolve(process.cwd(), process.env.STATE_DIR || DEFAULT_STATE_DIR));
  const dest = path.resolve(process.cwd(), args[0]!);
  if (dest === source.dir || dest.startsWith(`${source.dir}${path.sep}`))
    throw new Error(`the snapshot cannot go inside the state it copies (${source.dir})`);
  const fromRelay = await requestSnapshot(source.dir);
  const lines = fromRelay ?? (await captureStoppedState(source.dir));
  const { items } = await writeSnapshot(dest, lines);
  const header = lines[0]!;
  console.log(
    `state:snapshot: ${fromRelay ? 'the running relay' : 'the stopped state'} in ${source.dir}` +
      `${header.kind === 'header' ? ` at ${header.takenAt}` : ''}: ${items} table item(s) and the journals written to ${dest}.\n` +
      `Start a stopped relay on it with STATE_DIR=${dest} npm start (never alongside the relay it was taken of:` +
      ' both would carry on the same tasks).',
  );
};

main().catch((error: unknown) => {
  console.error(`state:snapshot failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
