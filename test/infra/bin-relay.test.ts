/** bin/relay.ts: CDK context → validated RelayConfig (the app's only context reader). */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { configFromContext, MISSING_MARKETPLACE_URL_MESSAGE } from '../../bin/relay';

const configOf = (context: Record<string, unknown>) => configFromContext(new App({ context }));
/** The one required value; every other has the spec's default. */
const URL_ONLY = { marketplaceUrl: 'https://market.example.com' };

describe('Function: configFromContext', () => {
  it('fills the spec defaults when only the marketplace URL is given', () => {
    // Act
    const config = configOf(URL_ONLY);
    // Assess
    expect(config).toMatchObject({
      defaultCurrency: 'NATIVE-Blockchain',
      defaultPorts: { '22': 'tcp', '8888': 'http' },
      maxOrdersPerHour: 10,
      maxRequestsPerMinute: 60,
      orderReadyTimeoutSeconds: 120,
      orderPollIntervalSeconds: 5,
    });
    expect(config.alarmEmail).toBeUndefined();
    // Secure defaults of a public endpoint (issue 13 item 3).
    expect(config).toMatchObject({ requireWebhookTimestamp: true, allowUnsignedSlack: false });
    // Issue 20 item 6: ready means ssh answers.
    expect(config.readinessProbe).toBe('ssh-login');
  });

  it('reads readinessProbe none, which turns the ssh check off', () => {
    expect(configOf({ ...URL_ONLY, readinessProbe: 'none' }).readinessProbe).toBe('none');
  });

  it.each([
    ['no context', {}],
    ['an empty marketplaceUrl', { marketplaceUrl: '' }],
    ['a blank marketplaceUrl', { marketplaceUrl: '   ' }],
    ['other context but no marketplaceUrl', { alarmEmail: 'ops@example.com', allowUnsignedSlack: 'true' }],
  ])('refuses to build a deployable config with %s, naming the missing key', (_name, context) => {
    expect(() => configOf(context)).toThrow(MISSING_MARKETPLACE_URL_MESSAGE);
    expect(MISSING_MARKETPLACE_URL_MESSAGE).toMatch(/^context marketplaceUrl is required/);
  });

  it.each([
    [{ requireWebhookTimestamp: 'false' }, { requireWebhookTimestamp: false, allowUnsignedSlack: false }],
    [{ allowUnsignedSlack: 'true' }, { requireWebhookTimestamp: true, allowUnsignedSlack: true }],
    [
      { requireWebhookTimestamp: false, allowUnsignedSlack: true },
      { requireWebhookTimestamp: false, allowUnsignedSlack: true },
    ],
    [
      { requireWebhookTimestamp: 'true', allowUnsignedSlack: 'false' },
      { requireWebhookTimestamp: true, allowUnsignedSlack: false },
    ],
  ])('reads the relaxing flags %j', (flags, expected) => {
    expect(configOf({ ...URL_ONLY, ...flags })).toMatchObject(expected);
  });

  it('parses `-c key=value` strings into numbers, JSON ports and throttle settings', () => {
    // Act
    const config = configOf({
      marketplaceUrl: 'https://market.example.com',
      defaultPorts: '{"22":"tcp","7860":"http"}',
      maxOrdersPerHour: '3',
      maxRequestsPerMinute: '120',
      orderReadyTimeoutSeconds: '90',
      orderPollIntervalSeconds: '10',
      alarmEmail: 'ops@example.com',
      apiThrottleRate: '5',
      apiThrottleBurst: '9',
      logRetentionDays: '90',
      defaultImage: 'pytorch/pytorch:latest',
      defaultCurrency: 'USDC',
    });
    // Assess
    expect(config).toMatchObject({
      marketplaceUrl: 'https://market.example.com',
      defaultPorts: { '22': 'tcp', '7860': 'http' },
      maxOrdersPerHour: 3,
      maxRequestsPerMinute: 120,
      orderReadyTimeoutSeconds: 90,
      orderPollIntervalSeconds: 10,
      alarmEmail: 'ops@example.com',
      apiThrottle: { rateLimit: 5, burstLimit: 9 },
      logRetentionDays: 90,
      defaultImage: 'pytorch/pytorch:latest',
      defaultCurrency: 'USDC',
    });
  });

  it("reads marketplacePricePeriod (hour | day), unset by default (each listing element's dialect decides)", () => {
    expect(configOf(URL_ONLY).marketplacePricePeriod).toBeUndefined();
    expect(configOf({ ...URL_ONLY, marketplacePricePeriod: 'day' }).marketplacePricePeriod).toBe('day');
  });

  it('accepts JSON values as cdk.json gives them', () => {
    expect(configOf({ ...URL_ONLY, defaultPorts: { '22': 'tcp' }, maxOrdersPerHour: 4 })).toMatchObject({
      defaultPorts: { '22': 'tcp' },
      maxOrdersPerHour: 4,
    });
  });

  it.each([
    ['maxOrdersPerHour', 'ten'],
    ['defaultPorts', '{22:tcp}'],
    ['defaultPorts', '{"22":"udp"}'],
    ['marketplaceUrl', 'not a url'],
    ['alarmEmail', 'nobody'],
    ['apiThrottleRate', '-1'],
    ['allowUnsignedSlack', 'yes'],
    ['requireWebhookTimestamp', 'no'],
    ['marketplacePricePeriod', 'week'],
    ['readinessProbe', 'tcp'],
  ])('throws on an invalid %s (%s)', (key, value) => {
    // With a valid URL, so each case fails for its own key, not the missing marketplaceUrl.
    expect(() => configOf(URL_ONLY)).not.toThrow();
    expect(() => configOf({ ...URL_ONLY, [key]: value })).toThrow(
      key === 'apiThrottleRate' ? /rateLimit/ : new RegExp(key),
    );
  });

  it('reads the Slack allowlists from `-c key=T1,T2` strings or cdk.json arrays', () => {
    expect(
      configOf({ ...URL_ONLY, slackAllowedTeamIds: 'T0OURS, T0PARTNER', slackAllowedUserIds: 'U0ALICE' }),
    ).toMatchObject({ slackAllowedTeamIds: ['T0OURS', 'T0PARTNER'], slackAllowedUserIds: ['U0ALICE'] });
    expect(configOf({ ...URL_ONLY, slackAllowedTeamIds: ['T0OURS'] })).toMatchObject({
      slackAllowedTeamIds: ['T0OURS'],
    });
    const unset = configOf(URL_ONLY);
    expect(unset.slackAllowedTeamIds).toBeUndefined();
    expect(unset.slackAllowedUserIds).toBeUndefined();
  });

  it.each([
    ['slackAllowedTeamIds', 't0lower'],
    ['slackAllowedTeamIds', ','],
    ['slackAllowedUserIds', 'U0ALICE;U0BOB'],
  ])('throws on an invalid %s (%j), naming it', (key, value) => {
    expect(() => configOf({ ...URL_ONLY, [key]: value })).toThrow(new RegExp(key));
  });
});

describe('The CDK app without marketplaceUrl (npm run synth, issue 28)', () => {
  it('exits 1 with the one-line message, no stack trace', () => {
    // Act: the app as cdk runs it, with no context at all
    const run = spawnSync(path.resolve(__dirname, '../../node_modules/.bin/tsx'), ['bin/relay.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      encoding: 'utf8',
    });
    // Assess
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(`cdk: ${MISSING_MARKETPLACE_URL_MESSAGE}`);
  });
});
