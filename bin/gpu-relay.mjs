#!/usr/bin/env node
/**
 * gpu-relay: the package's bin. The client is TypeScript (cli/main.ts, type-checked with the rest);
 * this shim loads it through tsx (a devDependency that `npm install` / `npm run setup` already
 * installs), so `npx gpu-relay` runs with no build step on Node 20 as on the pinned Node 24. tsx's
 * CommonJS API, not its ESM loader: no loader thread. Registered for the whole process rather than
 * through `tsx.require`, whose per-call namespace is part of tsx's compile-cache key: with it, no run
 * ever found the previous run's compiled files (each compiled the client again: 0.45 s a run instead
 * of 0.25 s; cli/main.ts also lets the cache writes finish before it exits).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
require('tsx/cjs/api').register();
require('../cli/main.ts');
