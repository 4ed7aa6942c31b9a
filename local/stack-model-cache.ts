/**
 * The synthesized stack model, kept on disk between runs: synthesizing the relay stack (aws-cdk-lib
 * loaded, every construct built, the template resolved) is most of a local runtime's start-up — 3–4 s
 * of CPU on the 2-core machine, once per `npm start` and once per e2e file. The model is a pure
 * function of the stack's source (lib/, contract/, this folder's stack-model.ts and asl.ts) and of
 * the installed packages (package-lock.json), so it is cached under a hash of exactly those files:
 * any edit to them, or another install, is a miss and synthesizes again. This module imports nothing
 * of aws-cdk-lib: a hit costs the hash (~400 small files read) and one JSON parse.
 *
 * IAM_MUTATION (mutation testing only) always synthesizes: its template differs from the cached one.
 * `STACK_MODEL_CACHE=off` turns the cache off (a run that must prove synthesis itself).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { StackModel } from './stack-model';

const REPO_ROOT = path.resolve(__dirname, '..');
/** Folders and files whose content decides the template; paths relative to the repository. */
export const STACK_MODEL_INPUTS = ['lib', 'contract', 'local/stack-model.ts', 'local/asl.ts', 'package-lock.json'];
/** Bumped when the cached file's shape changes (a new field of StackModel). */
const CACHE_FORMAT = 1;

const filesUnder = (root: string, relative: string): string[] => {
  const full = path.join(root, relative);
  let entries;
  try {
    entries = readdirSync(full, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return [relative];
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return entries
    .flatMap((entry) =>
      entry.isDirectory() ? filesUnder(root, path.join(relative, entry.name)) : [path.join(relative, entry.name)],
    )
    .sort();
};

/** A SHA-256 over every input file's path and content, in a fixed order. */
export const stackModelHash = (root: string = REPO_ROOT): string => {
  const hash = createHash('sha256').update(`format ${CACHE_FORMAT}\0`);
  for (const file of STACK_MODEL_INPUTS.flatMap((input) => filesUnder(root, input))) {
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(root, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 32);
};

export const stackModelCacheDir = (): string =>
  process.env.STACK_MODEL_CACHE_DIR || path.join(REPO_ROOT, 'node_modules', '.cache', 'gpu-relay');

const PREFIX = 'stack-model-';

export type StackModelSource = 'cache' | 'synth';

/**
 * The stack model: the cached one when its hash matches, else `synthesize()`'s, then cached (written
 * to a temporary file and renamed, so a second process reading at the same time never sees half a
 * file; older models are removed). A cache that cannot be written is only a slower next start.
 */
export const loadStackModel = async (
  synthesize: () => StackModel | Promise<StackModel>,
  opts: {
    readonly dir?: string;
    /** The repository whose inputs are hashed (tests point it at a copy). */
    readonly root?: string;
    readonly onSource?: (source: StackModelSource) => void;
  } = {},
): Promise<StackModel> => {
  if (process.env.IAM_MUTATION || process.env.STACK_MODEL_CACHE === 'off') {
    opts.onSource?.('synth');
    return await synthesize();
  }
  const dir = opts.dir ?? stackModelCacheDir();
  const file = path.join(dir, `${PREFIX}${stackModelHash(opts.root)}.json`);
  try {
    const model = JSON.parse(readFileSync(file, 'utf8')) as StackModel;
    opts.onSource?.('cache');
    return model;
  } catch {
    // A miss (or a file another process is renaming over): synthesize.
  }
  const model = await synthesize();
  opts.onSource?.('synth');
  try {
    mkdirSync(dir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(model));
    renameSync(temporary, file);
    for (const name of readdirSync(dir)) {
      if (name.startsWith(PREFIX) && path.join(dir, name) !== file && !name.endsWith('.tmp'))
        rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    // Read-only install or a full disk: the model is still right, only not kept.
  }
  return model;
};
