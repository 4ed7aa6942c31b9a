/**
 * Secure defaults of the deployed stack (issue 13 item 3): the app refuses to build without a
 * marketplace URL, every function requires X-Webhook-Timestamp and refuses unsigned Slack commands
 * unless the operator relaxes it with context flags.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp, MISSING_MARKETPLACE_URL_MESSAGE } from '../../bin/relay';

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
    expect(() => buildApp(new App({ context: { 'aws:cdk:bundling-stacks': [] } }))).toThrow(MISSING_MARKETPLACE_URL_MESSAGE);
  });

  it('requires the webhook timestamp and refuses unsigned Slack commands by default', () => {
    // Act
    const environments = environmentsOf({ marketplaceUrl: MARKETPLACE_URL });
    // Assess: every relay function, so a function added later cannot miss the settings.
    expect(environments.length).toBeGreaterThan(10);
    for (const vars of environments) {
      expect(vars).toMatchObject({ MARKETPLACE_URL, REQUIRE_WEBHOOK_TIMESTAMP: 'true', ALLOW_UNSIGNED_SLACK: 'false' });
    }
  });

  it('relaxes both only when the operator opts in with context flags', () => {
    const environments = environmentsOf({ marketplaceUrl: MARKETPLACE_URL, requireWebhookTimestamp: 'false', allowUnsignedSlack: 'true' });
    expect(environments.length).toBeGreaterThan(10);
    for (const vars of environments) expect(vars).toMatchObject({ REQUIRE_WEBHOOK_TIMESTAMP: 'false', ALLOW_UNSIGNED_SLACK: 'true' });
  });
});
