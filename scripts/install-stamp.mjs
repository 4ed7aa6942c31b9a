/**
 * The install stamp: what node_modules was installed from (package-lock.json, package.json and the
 * platform), hashed. scripts/setup.mjs writes it after a successful install; scripts/ensure-installed.mjs
 * compares it before `npm start` / `npm test`. Plain Node, no dependencies.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = 'node_modules/.gpu-relay-install';

/** The stamp the current package-lock.json and package.json call for on this platform. */
export const installStamp = (root) => {
  const hash = createHash('sha256');
  for (const file of ['package-lock.json', 'package.json']) hash.update(readFileSync(join(root, file)));
  hash.update(`${process.platform}-${process.arch}`);
  return hash.digest('hex');
};

/** The stamp of the last install, or undefined when there is none. */
export const readStamp = (root) => {
  try {
    return readFileSync(join(root, STAMP), 'utf8').trim();
  } catch {
    return undefined;
  }
};

export const writeStamp = (root) => writeFileSync(join(root, STAMP), `${installStamp(root)}\n`);
