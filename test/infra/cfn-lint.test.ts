/**
 * cfn-lint on the synthesized template (issue 21): it must report nothing beyond the checks
 * .cfnlintrc.yaml ignores, each with its reason. cfn-lint is a Python tool, not an npm package: when
 * the binary is missing the test is skipped with a visible message, unless REQUIRE_CFN_LINT=true
 * (CI machines that have it set it, so a lost install cannot pass silently).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../bin/relay';

const REPO = path.resolve(__dirname, '..', '..');
const version = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' });
const available = version.status === 0;
const required = process.env.REQUIRE_CFN_LINT === 'true';

if (!available && !required) {
  console.warn(
    'cfn-lint is not installed: test/infra/cfn-lint.test.ts is SKIPPED (pip install cfn-lint; REQUIRE_CFN_LINT=true makes this a failure)',
  );
}

const CONTEXTS = [
  ['the defaults', {}],
  [
    'Slack allowlists, alarm e-mail and relaxed flags',
    { slackAllowedTeamIds: 'T0OURS', alarmEmail: 'ops@example.com', allowUnsignedSlack: 'true' },
  ],
] as const satisfies readonly (readonly [string, Record<string, unknown>])[];

/**
 * cfn-lint's findings on the templates synthesized with each of `contexts`, per template ([] when it
 * reports nothing). One cfn-lint process lints them all: its start-up (loading the resource specs)
 * is most of a run, so one run per template cost the suite a start-up per context.
 */
const lintAll = (contexts: readonly Record<string, unknown>[]): string[][] => {
  const dir = mkdtempSync(path.join(tmpdir(), 'relay-cfn-lint-'));
  try {
    const files = contexts.map((context, i) => {
      const { stack } = buildApp(
        new App({
          context: { 'aws:cdk:bundling-stacks': [], marketplaceUrl: 'https://market.example.com', ...context },
        }),
      );
      const file = path.join(dir, `relay-${i}.template.json`);
      writeFileSync(file, JSON.stringify(Template.fromStack(stack).toJSON(), null, 1));
      return file;
    });
    const run = spawnSync(
      'cfn-lint',
      ['--config-file', path.join(REPO, '.cfnlintrc.yaml'), '--format', 'parseable', '--', ...files],
      { encoding: 'utf8', cwd: REPO },
    );
    if (run.error) throw run.error;
    if (run.status === 0) return files.map(() => []);
    const lines = `${run.stdout}\n${run.stderr}`.split('\n').filter((line) => line.trim() !== '');
    // A finding names its template; anything else (a crash, a config error) counts against every one.
    const general = lines.filter((line) => !files.some((file) => line.includes(file)));
    return files.map((file) => {
      const own = lines.filter((line) => line.includes(file));
      return own.length + general.length > 0 ? [`cfn-lint exited ${run.status}`, ...own, ...general] : [];
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

(available || required ? describe : describe.skip)(
  `cfn-lint (${available ? version.stdout.trim() : 'not installed'}) on the synthesized template`,
  () => {
    let findings: string[][] = [];
    beforeAll(() => {
      if (available) findings = lintAll(CONTEXTS.map(([, context]) => context));
    }, 120_000);

    it('finds the cfn-lint binary (a failure only with REQUIRE_CFN_LINT=true)', () => {
      expect(available).toBe(true);
    });

    it.each(CONTEXTS.map(([name], i) => [name, i] as const))('reports nothing unsuppressed with %s', (_name, i) => {
      expect(findings[i]).toEqual([]);
    });
  },
);
