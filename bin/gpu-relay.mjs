#!/usr/bin/env node
/**
 * gpu-relay: the package's bin. The client is TypeScript (cli/main.ts, type-checked with the rest);
 * this shim loads it through tsx (a devDependency that `npm install` / `npm run setup` already
 * installs), so `npx gpu-relay` runs with no build step on Node 20 as on the pinned Node 24. tsx's
 * CommonJS API, not its ESM loader: no loader thread, so the CLI starts in about half a second.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
require('tsx/cjs/api').require('../cli/main.ts', import.meta.url);
