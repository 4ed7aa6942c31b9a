#!/usr/bin/env node
/**
 * npm's `prestart` / `pretest` hook: install what is missing before `npm start` or `npm test`, so a
 * fresh clone needs no other command. The check is cheap (one hash of package-lock.json and
 * package.json, compared with the stamp `npm run setup` writes into node_modules); only when it
 * differs, or node_modules/.bin/node is missing, does it run `npm run setup` (scripts/setup.mjs:
 * `npm ci` on the pinned Node 24 from the npm registry).
 *
 * Plain Node, no dependencies: it runs before anything is installed, on whatever Node starts it.
 * `GPU_RELAY_SKIP_INSTALL_CHECK=1` skips it (for a node_modules managed by other means), and so does a
 * node_modules that is a symbolic link (shared with another checkout): `npm ci` there would first empty
 * the folder it points to, under every checkout that shares it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { installStamp, readStamp } from './install-stamp.mjs';

if (process.env.GPU_RELAY_SKIP_INSTALL_CHECK === '1') process.exit(0);

const root = fileURLToPath(new URL('..', import.meta.url));
const pinnedNode = `${root}node_modules/.bin/node`;
if (existsSync(pinnedNode) && readStamp(root) === installStamp(root)) process.exit(0);

const symlinked = (() => {
  try {
    return lstatSync(`${root}node_modules`).isSymbolicLink();
  } catch {
    return false;
  }
})();
if (symlinked) {
  console.error(
    'install: node_modules is a symbolic link (shared with another checkout): not installing here; run npm run setup where it points if it is out of date',
  );
  process.exit(0);
}

console.error(
  existsSync(`${root}node_modules`)
    ? 'install: package-lock.json changed since the last install; running npm run setup'
    : 'install: first run in this folder; running npm run setup (Node 24 from the npm registry, then npm ci)',
);
const setup = (command) =>
  spawnSync(process.execPath, [`${root}scripts/setup.mjs`, command, '--no-audit', '--no-fund'], {
    stdio: 'inherit',
    cwd: root,
  }).status;
// DESIGN.md: a lock file once lacked optional resolver bindings; `npm install` (same Node) is the fallback.
if (setup('ci') === 0) process.exit(0);
console.error('install: npm ci failed; falling back to npm install');
process.exit(setup('install') ?? 1);
