/**
 * Secure defaults of the deployed stack (issue 13 item 3): the app refuses to build without a
 * marketplace URL, every function requires X-Webhook-Timestamp and refuses unsigned Slack commands
 * unless the operator relaxes it with context flags.
 */
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp, MISSING_MARKETPLACE_URL_MESSAGE } from '../../bin/relay';
import { SLACK_TEAMS_UNSET_WARNING_ID } from '../../lib/relay-stack';

type Resource = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };

const MARKETPLACE_URL = 'https://market.example.com';

/** Every function's environment variables, from one synth of the app as `cdk deploy` builds it (bundling skipped). */
const environmentsOf = (context: Record<string, unknown>): Record<string, unknown>[] => {
  const { stack } = buildApp(new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } }));
  const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as Resource[];
  return functions.map((fn) => fn.Properties.Environment?.Variables ?? {}).filter((vars) => 'TABLE_NAME' in vars);
};

describe('App: secure defaults when deployed', () => {
  it('fails with a clear error instead of building a stack without a marketplace URL', () => {
    expect(() => buildApp(new App({ context: { 'aws:cdk:bundling-stacks': [] } }))).toThrow(
      MISSING_MARKETPLACE_URL_MESSAGE,
    );
  });

  it('requires the webhook timestamp and refuses unsigned Slack commands by default', () => {
    // Act
    const environments = environmentsOf({ marketplaceUrl: MARKETPLACE_URL });
    // Assess: every relay function, so a function added later cannot miss the settings.
    expect(environments.length).toBeGreaterThan(10);
    for (const vars of environments) {
      expect(vars).toMatchObject({
        MARKETPLACE_URL,
        REQUIRE_WEBHOOK_TIMESTAMP: 'true',
        ALLOW_UNSIGNED_SLACK: 'false',
        SIGNATURE_VERSIONS: 'v2',
      });
    }
  });

  it('denies unmapped Slack users and keeps the ssh probe off private addresses by default (issue 29 §7)', () => {
    const environments = environmentsOf({ marketplaceUrl: MARKETPLACE_URL });
    expect(environments.length).toBeGreaterThan(10);
    for (const vars of environments)
      expect(vars).toMatchObject({ SLACK_UNMAPPED_USERS: 'deny', ALLOW_PRIVATE_SSH_PROBE: 'false' });
    const optedIn = environmentsOf({ marketplaceUrl: MARKETPLACE_URL, slackUnmappedUsers: 'default' });
    for (const vars of optedIn) expect(vars).toMatchObject({ SLACK_UNMAPPED_USERS: 'default' });
  });

  it('relaxes both only when the operator opts in with context flags', () => {
    const environments = environmentsOf({
      marketplaceUrl: MARKETPLACE_URL,
      requireWebhookTimestamp: 'false',
      allowUnsignedSlack: 'true',
    });
    expect(environments.length).toBeGreaterThan(10);
    for (const vars of environments)
      expect(vars).toMatchObject({ REQUIRE_WEBHOOK_TIMESTAMP: 'false', ALLOW_UNSIGNED_SLACK: 'true' });
  });

  describe('Slack allowlist (issue 21 item 4)', () => {
    const warningsOf = (context: Record<string, unknown>) => {
      const { stack } = buildApp(
        new App({ context: { 'aws:cdk:bundling-stacks': [], marketplaceUrl: MARKETPLACE_URL, ...context } }),
      );
      return Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp(SLACK_TEAMS_UNSET_WARNING_ID));
    };

    it('warns at synth when the Slack route is deployed without a team list, on the Slack function', () => {
      const warnings = warningsOf({});
      expect(warnings).toHaveLength(1);
      expect(warnings[0].id).toMatch(/SlackCommand/);
      expect(String(warnings[0].entry.data)).toMatch(/slackAllowedTeamIds is not set/);
      expect(String(warningsOf({ allowUnsignedSlack: 'true' })[0].entry.data)).toMatch(/from anyone at all/);
    });

    it("does not warn with a team list, and gives the lists to the Slack function's environment", () => {
      expect(warningsOf({ slackAllowedTeamIds: 'T0OURS' })).toEqual([]);
      const environments = environmentsOf({
        marketplaceUrl: MARKETPLACE_URL,
        slackAllowedTeamIds: 'T0OURS,T0PARTNER',
        slackAllowedUserIds: 'U0ALICE',
      });
      for (const vars of environments)
        expect(vars).toMatchObject({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS,T0PARTNER', SLACK_ALLOWED_USER_IDS: 'U0ALICE' });
      for (const vars of environmentsOf({ marketplaceUrl: MARKETPLACE_URL }))
        expect('SLACK_ALLOWED_TEAM_IDS' in vars).toBe(false);
    });
  });
});
