/**
 * The install stamp: what node_modules was installed from (package-lock.json, the fields of package.json
 * that decide an install, and the platform), hashed. Scripts, description and bin are left out: editing
 * a script must not reinstall everything. scripts/setup.mjs writes it after a successful install; scripts/ensure-installed.mjs
 * compares it before `npm start` / `npm test`. Plain Node, no dependencies.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = 'node_modules/.gpu-relay-install';

/** package.json's fields that change what `npm ci` installs. */
const INSTALL_FIELDS = [
  'engines',
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
  'overrides',
  'allowScripts',
];

/** The stamp the current package-lock.json and package.json call for on this platform. */
export const installStamp = (root) => {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(root, 'package-lock.json')));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  hash.update(JSON.stringify(INSTALL_FIELDS.map((field) => [field, pkg[field] ?? null])));
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
