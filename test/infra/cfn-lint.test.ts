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
  console.warn('cfn-lint is not installed: test/infra/cfn-lint.test.ts is SKIPPED (pip install cfn-lint; REQUIRE_CFN_LINT=true makes this a failure)');
}

/** cfn-lint's findings on the template synthesized with `context`, or [] when it reports nothing. */
const lint = (context: Record<string, unknown>): string[] => {
  const dir = mkdtempSync(path.join(tmpdir(), 'relay-cfn-lint-'));
  try {
    const { stack } = buildApp(new App({ context: { 'aws:cdk:bundling-stacks': [], marketplaceUrl: 'https://market.example.com', ...context } }));
    const file = path.join(dir, 'relay.template.json');
    writeFileSync(file, JSON.stringify(Template.fromStack(stack).toJSON(), null, 1));
    const run = spawnSync('cfn-lint', ['--config-file', path.join(REPO, '.cfnlintrc.yaml'), '--format', 'parseable', '--', file], { encoding: 'utf8', cwd: REPO });
    if (run.error) throw run.error;
    if (run.status === 0) return [];
    return [`cfn-lint exited ${run.status}`, ...`${run.stdout}\n${run.stderr}`.split('\n').filter((line) => line.trim() !== '')];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

(available || required ? describe : describe.skip)(`cfn-lint (${available ? version.stdout.trim() : 'not installed'}) on the synthesized template`, () => {
  it('finds the cfn-lint binary (a failure only with REQUIRE_CFN_LINT=true)', () => {
    expect(available).toBe(true);
  });

  it.each([
    ['the defaults', {}],
    ['Slack allowlists, alarm e-mail and relaxed flags', { slackAllowedTeamIds: 'T0OURS', alarmEmail: 'ops@example.com', allowUnsignedSlack: 'true' }],
  ])('reports nothing unsuppressed with %s', (_name, context) => {
    expect(lint(context)).toEqual([]);
  }, 120_000);
});
