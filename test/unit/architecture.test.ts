/**
 * The dependency rules of DESIGN.md "Layout", checked on the import graph (ESLint enforces the same
 * rules per file; this test also catches `require()`/`import()` and files ESLint may skip):
 * - lib/ (what is deployed) and lambdas/ (what runs) never import each other;
 * - contract/ imports nothing outside itself and no package but zod (tiny, side-effect free);
 * - lambdas/domain imports only itself, the contract's rule parts, zod and Node built-ins other
 *   than timers;
 * - lambdas/ and contract/ (what is bundled) import zod only as `zod/mini`: one import of classic
 *   zod puts its ~107 KB back into every bundle that reaches it (BENCHMARKS.md §7);
 * - lambdas/domain holds no request schema and no OpenAPI text: those live in lambdas/http/
 *   (requests.ts, response-schemas.ts, openapi-document.ts);
 * - no import circle, type-only imports included (ESLint's import-x/no-cycle sees value imports only);
 * - no new file directly in lambdas/domain/ (issue 32 §3, issue 40 §2): a new rule goes into its capability's
 *   folder, and the failure names which (the folder it imports most from, or the one named like it).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** Contract files the domain may import: rules and names, not infrastructure facts. */
const DOMAIN_CONTRACT = new Set([
  'contract/limits',
  'contract/error-names',
  'contract/shapes',
  'contract/scopes',
  'contract/retry-policy',
  'contract/wait-and-outbid',
  'contract/ssh-keys',
]);
const TIMERS = /^(node:)?timers(\/|$)/;
/** zod/mini, and its English texts alone (lambdas/domain/zod-texts.ts); classic 'zod' only outside what is bundled. */
const ZOD_BUNDLED = new Set(['zod/mini', 'zod/v4/locales']);
const ZOD = new Set(['zod', ...ZOD_BUNDLED]);

/**
 * The files directly in lambdas/domain/ (issue 32 §3): what every capability shares (ports, task,
 * errors, marketplace types, …). Nothing is added here: a new rule goes into its capability's folder.
 */
const DOMAIN_ROOT_FILES = new Set([
  'address-policy.ts',
  'defined-fields.ts',
  'errors.ts',
  'marketplace-summary.ts',
  'marketplace-types.ts',
  'ports.ts',
  'signing.ts',
  'sliding-window.ts',
  'task.ts',
  'usd-per-hour.ts',
  'zod-texts.ts',
]);
/** The capability folders of lambdas/domain/. */
const DOMAIN_CAPABILITIES = ['access', 'create-order', 'leases', 'recovery', 'teams', 'requests', 'hosts'];

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
  specifier.startsWith('.')
    ? path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.(ts|js|mjs)$/, '')
    : undefined;

const under = (target: string, folder: string): boolean => target === folder || target.startsWith(`${folder}/`);

/** The rule a file's import breaks, or undefined. */
export const violation = (file: string, specifier: string): string | undefined => {
  const target = resolveSpecifier(file, specifier);
  if (under(file, 'lib') && target && under(target, 'lambdas')) return 'lib/ imports lambdas/';
  if (under(file, 'lambdas') && target && under(target, 'lib')) return 'lambdas/ imports lib/';
  if (under(file, 'contract') && (target ? !under(target, 'contract') : !ZOD.has(specifier)))
    return 'contract/ imports something outside itself';
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

/** The import graph of `files`: each file → the files it imports (relative specifiers that resolve to one of them). */
const importGraph = (files: readonly string[]): Map<string, string[]> => {
  const known = new Set(files);
  const fileOf = (file: string, specifier: string): string | undefined => {
    const target = resolveSpecifier(file, specifier);
    return target === undefined
      ? undefined
      : [`${target}.ts`, `${target}.mjs`, `${target}.js`, `${target}/index.ts`].find((candidate) =>
          known.has(candidate),
        );
  };
  return new Map(
    files.map((file) => [
      file,
      [...new Set(specifiersOf(readFileSync(path.join(ROOT, file), 'utf8')).flatMap((s) => fileOf(file, s) ?? []))],
    ]),
  );
};

/** The import circles of a graph: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
export const importCircles = (graph: ReadonlyMap<string, readonly string[]>): string[][] => {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) circles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
};

/**
 * Where a file found directly in lambdas/domain/ should go: the capability folder it imports most
 * from, else the folder named like it (`host-x.ts` → hosts/), else the folder holding files named
 * like it (its name's first word: `spend-alerts.ts` → teams/, beside spend-budget.ts). Undefined
 * when nothing tells.
 */
export const domainFolderFor = (
  name: string,
  specifiers: readonly string[],
  folders: ReadonlyMap<string, readonly string[]>,
): { readonly folder: string; readonly why: string } | undefined => {
  const imported = new Map<string, string[]>();
  for (const specifier of specifiers) {
    const folder = /^\.\/([^/]+)\//.exec(specifier)?.[1];
    if (folder && folders.has(folder)) imported.set(folder, [...(imported.get(folder) ?? []), specifier]);
  }
  const mostImported = [...imported].sort((a, b) => b[1].length - a[1].length)[0];
  if (mostImported) return { folder: mostImported[0], why: `it imports ${mostImported[1].join(', ')}` };
  const word = name.replace(/\.(ts|mjs|js)$/, '').split('-')[0];
  const named = [...folders.keys()].find((folder) => folder === word || folder === `${word}s`);
  if (named) return { folder: named, why: `its name says ${named}` };
  for (const [folder, files] of folders) {
    const alike = files.filter((file) => file.split(/[-.]/)[0] === word);
    if (alike.length > 0) return { folder, why: `beside ${alike.join(', ')}` };
  }
  return undefined;
};

/** The message for a file added directly in lambdas/domain/: the folder to move it to, and why. */
const domainRootMessage = (name: string, folders: ReadonlyMap<string, readonly string[]>): string => {
  const home = domainFolderFor(
    name,
    specifiersOf(readFileSync(path.join(ROOT, 'lambdas/domain', name), 'utf8')),
    folders,
  );
  return home
    ? `lambdas/domain/${name}: move it into lambdas/domain/${home.folder}/ (${home.why})`
    : `lambdas/domain/${name}: move it into the capability folder it serves, one of ${[...folders.keys()].join('/, ')}/`;
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
    const broken = violations(files).filter(
      (line) => line.includes('imports lib/') || line.includes('imports lambdas/'),
    );
    // Assess
    expect(broken).toEqual([]);
  });

  it('keeps contract/ free of imports from outside itself', () => {
    expect(violations(sourceFiles('contract'))).toEqual([]);
  });

  it('keeps lambdas/domain pure: only itself, the contract rules, zod and Node built-ins (no timers)', () => {
    expect(violations(sourceFiles('lambdas/domain'))).toEqual([]);
  });

  it('keeps request schemas and OpenAPI text out of lambdas/domain (they live in lambdas/http/)', () => {
    // Prepare
    const files = sourceFiles('lambdas/domain');
    // Act
    const found = files.flatMap((file) => {
      const source = readFileSync(path.join(ROOT, file), 'utf8');
      return [
        ...(/\bz\.meta\(/.test(source) ? [`${file}: OpenAPI metadata (z.meta)`] : []),
        ...[...source.matchAll(/export const (\w+BodySchema)\b/g)].map(
          (match) => `${file}: request schema ${match[1]}`,
        ),
      ];
    });
    // Assess
    expect(files.length).toBeGreaterThan(30);
    expect(found).toEqual([]);
  });

  it('adds no file directly in lambdas/domain/: a new rule goes into a capability folder, named in the failure', () => {
    // Prepare
    const entries = readdirSync(path.join(ROOT, 'lambdas/domain'), { withFileTypes: true });
    const folders = new Map(
      entries
        .filter((entry) => entry.isDirectory())
        .map((entry) => [entry.name, readdirSync(path.join(ROOT, 'lambdas/domain', entry.name))] as const),
    );
    // Act
    const added = entries
      .filter((entry) => entry.isFile() && /\.(ts|mjs|js)$/.test(entry.name) && !DOMAIN_ROOT_FILES.has(entry.name))
      .map((entry) => domainRootMessage(entry.name, folders));
    // Assess
    expect([...folders.keys()]).toEqual(expect.arrayContaining(DOMAIN_CAPABILITIES));
    expect(added).toEqual([]);
  });

  it('names the folder a new domain file goes to (the checker itself)', () => {
    const folders = new Map([
      ['hosts', ['matching.ts', 'host-records.ts']],
      ['leases', ['lease.ts', 'lease-sweep.ts']],
      ['teams', ['spend-budget.ts', 'caller-keys.ts']],
    ]);
    expect(
      domainFolderFor('grace.ts', ['./leases/lease', './teams/spend-budget', './leases/lease-sweep'], folders),
    ).toEqual({
      folder: 'leases',
      why: 'it imports ./leases/lease, ./leases/lease-sweep',
    });
    expect(domainFolderFor('host-scores.ts', ['./task', 'zod/mini'], folders)).toEqual({
      folder: 'hosts',
      why: 'its name says hosts',
    });
    expect(domainFolderFor('spend-alerts.ts', [], folders)).toEqual({ folder: 'teams', why: 'beside spend-budget.ts' });
    expect(domainFolderFor('misc.ts', ['./errors'], folders)).toBeUndefined();
  });

  it('bundles no classic zod: lambdas/ and contract/ import zod/mini only', () => {
    // Prepare
    const files = [...sourceFiles('lambdas'), ...sourceFiles('contract')];
    // Act
    const classic = files.filter((file) =>
      specifiersOf(readFileSync(path.join(ROOT, file), 'utf8')).some(
        (s) => (s === 'zod' || s.startsWith('zod/')) && !ZOD_BUNDLED.has(s),
      ),
    );
    // Assess
    expect(classic).toEqual([]);
  });

  it('names every handler factory one way: create<Name>Handler (workflow steps create<Step>StepHandler)', () => {
    // Prepare
    const files = sourceFiles('lambdas/handlers');
    // Act
    const factories = files.flatMap((file) =>
      [
        ...readFileSync(path.join(ROOT, file), 'utf8').matchAll(
          /export (?:async )?(?:function|const) ((?:make|create|build)[A-Za-z0-9]*)/g,
        ),
      ].map((match) => `${file}: ${match[1]}`),
    );
    // Assess
    expect(factories.length).toBeGreaterThan(20);
    expect(factories.filter((line) => !/: create[A-Z][A-Za-z0-9]*Handler$/.test(line))).toEqual([]);
  });

  it('has no import circle anywhere, type-only imports included', () => {
    // Prepare
    const files = ['lambdas', 'lib', 'contract', 'local', 'bin', 'scripts', 'bench', 'test']
      .filter((dir) => existsSync(path.join(ROOT, dir)))
      .flatMap(sourceFiles);
    // Act
    const circles = importCircles(importGraph(files));
    // Assess
    expect(files.length).toBeGreaterThan(300);
    expect(circles).toEqual([]);
  });

  it('finds an import circle (the checker itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(importCircles(graph)).toEqual([['a', 'b', 'c'], ['e']]);
    expect(
      importCircles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
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
    expect(
      specifiersOf(
        "const m = require('../../lib/x');\nimport type { A } from './a';\nexport * from \"./b\";\nawait import('./c');",
      ),
    ).toEqual(['./a', './b', './c', '../../lib/x']);
  });
});
