/**
 * The dependency rules of DESIGN.md "Layout", checked on the import graph (ESLint enforces the same
 * rules per file; this test also catches `require()`/`import()` and files ESLint may skip):
 * - lib/ (what is deployed) and lambdas/ (what runs) never import each other;
 * - contract/ imports nothing outside itself and no package but zod (tiny, side-effect free);
 * - lambdas/domain imports only itself, the contract's rule parts, zod and Node built-ins other
 *   than timers;
 * - lambdas/ and contract/ (what is bundled) import zod only as `zod/mini`: one import of classic
 *   zod puts its ~107 KB back into every bundle that reaches it (BENCHMARKS.md §7).
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** Contract files the domain may import: rules and names, not infrastructure facts. */
const DOMAIN_CONTRACT = new Set(['contract/limits', 'contract/error-names', 'contract/shapes', 'contract/scopes', 'contract/retry-policy', 'contract/wait-and-outbid']);
const TIMERS = /^(node:)?timers(\/|$)/;
/** zod/mini, and its English texts alone (lambdas/domain/zod-texts.ts); classic 'zod' only outside what is bundled. */
const ZOD_BUNDLED = new Set(['zod/mini', 'zod/v4/locales']);
const ZOD = new Set(['zod', ...ZOD_BUNDLED]);

const sourceFiles = (dir: string): string[] =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(rel);
    return /\.(ts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [rel] : [];
  });

/** Every module specifier of a file: static imports/exports, `import()` and `require()`. */
export const specifiersOf = (source: string): string[] => {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
};

/** Repo-relative target of a relative specifier (no extension), or undefined for a package. */
const resolveSpecifier = (file: string, specifier: string): string | undefined =>
  specifier.startsWith('.') ? path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.(ts|js|mjs)$/, '') : undefined;

const under = (target: string, folder: string): boolean => target === folder || target.startsWith(`${folder}/`);

/** The rule a file's import breaks, or undefined. */
export const violation = (file: string, specifier: string): string | undefined => {
  const target = resolveSpecifier(file, specifier);
  if (under(file, 'lib') && target && under(target, 'lambdas')) return 'lib/ imports lambdas/';
  if (under(file, 'lambdas') && target && under(target, 'lib')) return 'lambdas/ imports lib/';
  if (under(file, 'contract') && (target ? !under(target, 'contract') : !ZOD.has(specifier))) return 'contract/ imports something outside itself';
  if (under(file, 'lambdas/domain')) {
    if (target) {
      if (under(target, 'lambdas/domain') || DOMAIN_CONTRACT.has(target)) return undefined;
      return `lambdas/domain imports ${target}`;
    }
    if (ZOD.has(specifier)) return undefined;
    if (specifier.startsWith('node:') && !TIMERS.test(specifier)) return undefined;
    return `lambdas/domain imports the package ${specifier}`;
  }
  return undefined;
};

const violations = (files: readonly string[]): string[] =>
  files.flatMap((file) =>
    specifiersOf(readFileSync(path.join(ROOT, file), 'utf8')).flatMap((specifier) => {
      const broken = violation(file, specifier);
      return broken ? [`${file}: '${specifier}' (${broken})`] : [];
    }),
  );

describe('Architecture: import rules', () => {
  it('lets no import run between lib/ and lambdas/ in either direction', () => {
    // Prepare
    const files = [...sourceFiles('lib'), ...sourceFiles('lambdas')];
    // Act
    const broken = violations(files).filter((line) => line.includes('imports lib/') || line.includes('imports lambdas/'));
    // Assess
    expect(broken).toEqual([]);
  });

  it('keeps contract/ free of imports from outside itself', () => {
    expect(violations(sourceFiles('contract'))).toEqual([]);
  });

  it('keeps lambdas/domain pure: only itself, the contract rules, zod and Node built-ins (no timers)', () => {
    expect(violations(sourceFiles('lambdas/domain'))).toEqual([]);
  });

  it('bundles no classic zod: lambdas/ and contract/ import zod/mini only', () => {
    // Prepare
    const files = [...sourceFiles('lambdas'), ...sourceFiles('contract')];
    // Act
    const classic = files.filter((file) => specifiersOf(readFileSync(path.join(ROOT, file), 'utf8')).some((s) => (s === 'zod' || s.startsWith('zod/')) && !ZOD_BUNDLED.has(s)));
    // Assess
    expect(classic).toEqual([]);
  });

  it('flags each kind of forbidden import (the checker itself)', () => {
    expect(violation('lib/constructs/x.ts', '../../lambdas/adapters/observability')).toBe('lib/ imports lambdas/');
    expect(violation('lambdas/handlers/api/x.ts', '../../../lib/config')).toBe('lambdas/ imports lib/');
    expect(violation('contract/x.ts', '@aws-sdk/client-sqs')).toBeDefined();
    expect(violation('contract/x.ts', '../lambdas/domain/task')).toBeDefined();
    expect(violation('lambdas/domain/x.ts', '../adapters/env')).toBeDefined();
    expect(violation('lambdas/domain/x.ts', '../../contract/routes')).toBeDefined();
    expect(violation('lambdas/domain/x.ts', '@aws-sdk/client-sqs')).toBeDefined();
    expect(violation('lambdas/domain/x.ts', 'node:timers/promises')).toBeDefined();
    expect(violation('lambdas/domain/x.ts', '../../contract/limits')).toBeUndefined();
    expect(violation('lambdas/domain/x.ts', 'zod')).toBeUndefined();
    expect(violation('lambdas/domain/x.ts', 'zod/mini')).toBeUndefined();
    expect(violation('contract/x.ts', 'zod/mini')).toBeUndefined();
    expect(specifiersOf("const m = require('../../lib/x');\nimport type { A } from './a';\nexport * from \"./b\";\nawait import('./c');"))
      .toEqual(['./a', './b', './c', '../../lib/x']);
  });
});
