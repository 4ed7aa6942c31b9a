/**
 * `npm run iam:mutations [-- --sample N] [-- --counts FILE]`: the mutation check of issue 30. Each
 * mutation removes one grant, as deleting it from lib/ would: one DynamoDB key family
 * (`family:<name>`, its line of lib/constructs/table-access.ts) or one action from one role
 * (`action:<function>:<action>`). The runtime applies it to the synthesized template (IAM_MUTATION,
 * local/stack-model.ts), and the e2e file that exercised that grant most cheaply in the counted run
 * (IAM_CHECKS_COUNTS, see `npm run iam:report`) is run again: it must fail. A mutation no test file
 * exercised survives by definition, and so does one whose test still passes; both are listed.
 *
 * Running every mutation takes hours (one e2e file each); `--sample N` runs N spread over the list.
 * Actions no local test can reach (local/iam-report.ts NOT_MODELLED) are not mutated.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { keyPattern, keys, type KeyFamily } from '../contract/resources';
import { notModelledReason, readCounts, statementRows, type CountsLine } from '../local/iam-report';
import { synthesizeStackModel } from '../local/stack-model';

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const countsFile = path.resolve(option('counts') ?? process.env.IAM_CHECKS_COUNTS ?? '.iam-counts.jsonl');
const sample = option('sample') ? Number(option('sample')) : undefined;
const only = option('only');
const timeoutSeconds = Number(option('timeout') ?? 240);
/** A test waiting for a result the denied call never produces fails at this timeout instead of its own deadline. */
const testTimeoutMs = Number(option('test-timeout') ?? 30_000);
const JEST = path.join(__dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');

if (!existsSync(countsFile)) {
  console.error(`iam:mutations: no counts at ${countsFile}; run the e2e files with IAM_CHECKS_COUNTS first`);
  process.exit(2);
}
const lines = readCounts(countsFile);
const model = synthesizeStackModel();

/** Calls per source file, to prefer the cheapest file that exercises a grant. */
const weight = new Map<string, number>();
for (const line of lines)
  weight.set(line.source, (weight.get(line.source) ?? 0) + Object.values(line.counts).reduce((a, b) => a + b, 0));

interface Mutation {
  readonly id: string;
  /** Test files (with `#live` for the live-dialect project) that exercised the grant. */
  readonly files: readonly string[];
}

const filesWhere = (test: (line: CountsLine) => boolean): string[] =>
  [...new Set(lines.filter(test).map((l) => l.source))].sort((a, b) => (weight.get(a) ?? 0) - (weight.get(b) ?? 0));

const mutations: Mutation[] = [];
for (const family of Object.keys(keys) as KeyFamily[]) {
  const pattern = keyPattern(family);
  mutations.push({
    id: `family:${family}`,
    files: filesWhere((l) => Object.keys(l.keys ?? {}).some((k) => k.split('\t')[2] === pattern)),
  });
}
const seen = new Set<string>();
for (const row of statementRows(model, lines)) {
  if (row.role.startsWith('(')) continue; // Lambda permissions: no role to take an action from
  for (const { action } of row.actions) {
    const id = `action:${row.principal}:${action}`;
    if (notModelledReason(action, row.resources) || seen.has(id)) continue;
    seen.add(id);
    mutations.push({
      id,
      files: filesWhere((l) =>
        Object.entries(l.counts).some(([k, n]) => {
          const [principal, , a] = k.split('\t');
          return n > 0 && principal === row.principal && a === action;
        }),
      ),
    });
  }
}

/** `n` entries spread evenly over `list`. */
const spread = <T>(list: readonly T[], n: number): T[] =>
  n >= list.length ? [...list] : Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]);
const families = mutations.filter((m) => m.id.startsWith('family:'));
const actions = mutations.filter((m) => m.id.startsWith('action:'));
const chosen = only
  ? mutations.filter((m) => m.id === only)
  : sample
    ? [...spread(families, Math.ceil(sample / 2)), ...spread(actions, Math.floor(sample / 2))]
    : mutations;

console.log(
  `${mutations.length} mutations (${Object.keys(keys).length} key families, the rest role actions); running ${chosen.length}.`,
);
const results: { id: string; outcome: 'killed' | 'SURVIVED' | 'unexercised'; file?: string; why?: string }[] = [];
for (const mutation of chosen) {
  const file = mutation.files[0];
  if (!file) {
    results.push({ id: mutation.id, outcome: 'unexercised', why: 'no counted e2e run exercised this grant' });
    console.log(`${mutation.id}: unexercised (no test file exercised it)`);
    continue;
  }
  const [testPath, dialect] = file.split('#');
  const started = Date.now();
  // jest itself (not through npx), so the timeout's signal ends the test run and nothing is left behind.
  const run = spawnSync(
    process.execPath,
    [
      JEST,
      testPath,
      '--selectProjects',
      dialect === 'live' ? 'e2e-live' : 'e2e',
      '--silent',
      '--testTimeout',
      String(testTimeoutMs),
      '--forceExit',
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, IAM_MUTATION: mutation.id, IAM_CHECKS: 'enforce', IAM_CHECKS_COUNTS: '' },
      timeout: timeoutSeconds * 1000,
    },
  );
  const output = `${run.stdout}${run.stderr}`;
  const denial = /AccessDeniedException: .*/.exec(output)?.[0];
  const timedOut = run.signal !== null;
  const killed = run.status !== 0;
  results.push({ id: mutation.id, outcome: killed ? 'killed' : 'SURVIVED', file, ...(denial ? { why: denial } : {}) });
  console.log(
    `${mutation.id}: ${killed ? 'killed' : 'SURVIVED'} by ${file}${timedOut ? ' (run timed out)' : ''} in ${Math.round((Date.now() - started) / 1000)} s${denial ? `\n    ${denial.slice(0, 300)}` : ''}`,
  );
}
const survived = results.filter((r) => r.outcome !== 'killed');
console.log(
  `\n${results.length - survived.length} of ${results.length} mutations killed; surviving: ${survived.map((r) => `${r.id} (${r.outcome})`).join(', ') || 'none'}`,
);
process.exitCode = survived.length > 0 ? 1 : 0;
