#!/usr/bin/env node
/**
 * `npm run setup`: `npm ci` run by the Node.js major the functions run on in Lambda (package.json
 * `engines`, the same major as `RELAY_NODE_RUNTIME` in contract/runtime.ts), whatever Node started it.
 *
 * npm checks every package's `engines` against the Node that runs npm itself, so a clean `npm ci`
 * started by an older system Node warns (EBADENGINE) about packages that need a newer one, even
 * though everything afterwards runs on the pinned binary. When the running major differs, this
 * script runs npm through `npm exec` with the pinned `node-<platform>-<arch>` package of
 * package.json `optionalDependencies` (a Node.js binary published on the npm registry) first on
 * PATH. The install then links that same binary as node_modules/.bin/node, which npm scripts put
 * first on PATH: `npm test`, `npm start`, `npx cdk …` and every child they spawn run on it.
 *
 * Plain Node, no dependencies: it runs before anything is installed, on whatever Node starts it.
 * Usage: node scripts/setup.mjs [npm arguments…]   (default: ci)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeStamp } from './install-stamp.mjs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const wanted = Number(/^(\d+)/.exec(pkg.engines.node)?.[1]);
const running = Number(process.versions.node.split('.')[0]);
const binaryPackage = `node-${process.platform}-${process.arch}`;
const pinned = pkg.optionalDependencies?.[binaryPackage];
const npmArgs = process.argv.length > 2 ? process.argv.slice(2) : ['ci'];

let args;
if (running === wanted) {
  args = npmArgs;
} else if (pinned) {
  console.error(
    `setup: this is Node ${process.versions.node}; running npm ${npmArgs.join(' ')} on Node ${pinned} (${binaryPackage} from the npm registry)`,
  );
  args = ['exec', '--yes', `--package=${binaryPackage}@${pinned}`, '--', 'npm', ...npmArgs];
} else {
  console.error(
    `setup: Node ${wanted} is required (the functions run on nodejs${wanted}.x) and this is Node ${process.versions.node}; ` +
      `package.json pins no ${binaryPackage} binary package. Install Node ${wanted}, then run npm ${npmArgs.join(' ')}.`,
  );
  process.exit(1);
}

/**
 * `npx gpu-relay` runs the package's own bin by first linking this checkout into npm's npx cache
 * (~/.npm/_npx/<hash>), once per checkout; that link step checks package.json `engines` against the
 * Node running npm, so on a system Node 20 the first `npx gpu-relay` printed two EBADENGINE blocks (the
 * link and its target), although the CLI itself then runs on the pinned Node (node_modules/.bin/node
 * is first on npx's PATH). Making that link here, with npm on the pinned Node, leaves nothing for a
 * later npx to check. Best effort: a failure only means the first npx warns as before.
 */
const primeNpx = (root) => {
  const path = `${root}node_modules/.bin${delimiter}${process.env.PATH ?? ''}`;
  spawnSync('npm', ['exec', '--yes', '--', 'gpu-relay', 'help'], {
    cwd: root,
    env: { ...process.env, PATH: path },
    stdio: 'ignore',
    shell: process.platform === 'win32',
  });
};

const result = spawnSync('npm', args, { stdio: 'inherit', shell: process.platform === 'win32' });
if (result.error) {
  console.error(`setup: could not run npm: ${result.error.message}`);
  process.exit(1);
}
if (result.status === 0 && (npmArgs[0] === 'ci' || npmArgs[0] === 'install')) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  // scripts/ensure-installed.mjs (npm's prestart/pretest) skips the install while this stamp matches.
  writeStamp(root);
  primeNpx(root);
}
process.exit(result.status ?? 1);
