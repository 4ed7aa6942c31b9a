/**
 * The folder `npm start` keeps its state in across restarts (STATE_DIR, default `.relay/state`):
 * dynalite's LevelDB store (`table/`), the job queue's journal (`queue.jsonl`) and the workflow
 * executions' journal (`executions.jsonl`), under a version stamp (`state.json`). A state written
 * by a relay whose format differs is refused with the command that resets it, never read half-way.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The state's format. Raise it whenever a change makes an older state unreadable or wrong to read
 * (the table's key schema or indexes, a journal's line shape, the meaning of a stored item).
 */
export const STATE_FORMAT = 1;

/** `npm start`'s default folder, relative to the folder it runs in. */
export const DEFAULT_STATE_DIR = path.join('.relay', 'state');

/** The commands that start with an empty state, named in every refusal. */
export const RESET_COMMANDS = '`npm run state:reset` (or `npm start -- --fresh`)';

export const STAMP = 'state.json';

/**
 * Secrets the relay generated for a state and keeps with it (a backup carries them): the callback
 * signing key receivers verify deliveries with.
 */
export const CALLBACK_SIGNING_SECRET_FILE = 'callback-signing-secret';
export const KEPT_SECRET_FILES: readonly string[] = [CALLBACK_SIGNING_SECRET_FILE];

export interface StateStamp {
  readonly format: number;
  /** The relay version (package.json) that created the state; informative only. */
  readonly createdBy: string;
  readonly createdAt: string;
  /** Set on a state written by `npm run state:snapshot`: when the copy was taken, and of which folder. */
  readonly snapshot?: { readonly takenAt: string; readonly of: string };
}

/** A state folder this relay cannot read. Its message names the folder and the reset command. */
export class StateVersionError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'StateVersionError';
  }
}

export interface StatePaths {
  /** The folder itself (absolute). */
  readonly dir: string;
  /** dynalite's LevelDB folder. */
  readonly table: string;
  /** The job queue's journal. */
  readonly queue: string;
  /** The workflow executions' journal. */
  readonly executions: string;
  /** True when the folder held no state before (first start, or after a reset). */
  readonly created: boolean;
}

export const statePaths = (dir: string): Omit<StatePaths, 'created'> => {
  const abs = path.resolve(dir);
  return {
    dir: abs,
    table: path.join(abs, 'table'),
    queue: path.join(abs, 'queue.jsonl'),
    executions: path.join(abs, 'executions.jsonl'),
  };
};

/** Empties the state folder (keeps the folder). */
export const resetStateDir = (dir: string): void => {
  const abs = path.resolve(dir);
  if (!existsSync(abs)) return;
  for (const entry of readdirSync(abs)) rmSync(path.join(abs, entry), { recursive: true, force: true });
};

const relayVersion = (): string => {
  try {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
};

/**
 * Opens (creating if needed) the state folder: an empty or absent folder gets a fresh stamp; a
 * folder with state and this format's stamp is used as it is; anything else is refused.
 * `fresh` empties it first.
 */
export const openStateDir = (dir: string, options: { readonly fresh?: boolean } = {}): StatePaths => {
  const paths = statePaths(dir);
  if (options.fresh) resetStateDir(paths.dir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const stampFile = path.join(paths.dir, STAMP);
  const entries = readdirSync(paths.dir);
  if (entries.length === 0) {
    const stamp: StateStamp = { format: STATE_FORMAT, createdBy: relayVersion(), createdAt: new Date().toISOString() };
    writeFileSync(stampFile, `${JSON.stringify(stamp, null, 2)}\n`, { mode: 0o600 });
    return { ...paths, created: true };
  }
  if (!entries.includes(STAMP)) {
    throw new StateVersionError(
      `state folder ${paths.dir} is not empty and has no ${STAMP}: it was not written by this relay. ` +
        `Point STATE_DIR elsewhere, or empty it with ${RESET_COMMANDS}.`,
    );
  }
  let stamp: Partial<StateStamp>;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as Partial<StateStamp>;
  } catch (error) {
    throw new StateVersionError(
      `state folder ${paths.dir}: ${STAMP} cannot be read (${(error as Error).message}). ` +
        `Start with an empty state with ${RESET_COMMANDS}.`,
    );
  }
  if (stamp.format !== STATE_FORMAT) {
    throw new StateVersionError(
      `state folder ${paths.dir} was written by relay ${stamp.createdBy ?? 'unknown'} in state format ` +
        `${String(stamp.format)}; this relay (${relayVersion()}) reads format ${STATE_FORMAT} only. ` +
        `Keep a copy of the folder if you need its contents, then run ${RESET_COMMANDS}.`,
    );
  }
  return { ...paths, created: false };
};
