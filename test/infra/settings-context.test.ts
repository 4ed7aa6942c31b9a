/**
 * Every setting the stack deploys can be set with `-c <key>=<value>` (issue 22, item 1): the CDK app
 * reads context by looping over contract/settings.ts, so a new setting cannot be forgotten there. One
 * synth with every deployed setting given a non-default value as a `-c` string; each must arrive in
 * the functions' environment under its env name.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../bin/relay';
import { encodeSetting, SETTINGS, type Setting } from '../../contract/settings';

type Resource = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };

/** A value other than the deployed default, as `-c` would pass it (a string), and how the function sees it. */
const sampleOf = (key: string, s: Setting): { context: string; value: string } => {
  const fallback = s.deployedDefault ?? s.default;
  switch (s.kind) {
    case 'int': {
      // WATCH_INTERVAL_SECONDS is a whole number of minutes in AWS: doubling a default keeps that true.
      const wanted = typeof fallback === 'number' && fallback > 0 ? fallback * 2 : 7;
      // A default at the maximum: one less (still a whole number of minutes is not asked of those).
      const capped = s.max ? Math.min(wanted, s.max.value) : wanted;
      const value = capped === fallback ? capped - 1 : capped;
      if (value === fallback) throw new Error(`no non-default sample for ${key}`);
      return { context: String(value), value: String(value) };
    }
    case 'hours': {
      // Under the setting's ceiling (DEFAULT_MIN_RELIABILITY is at most 1).
      const value = s.max && s.max.value < 3.5 ? String(s.max.value / 2) : '3.5';
      return { context: value, value };
    }
    case 'amount':
      return { context: '2.5', value: '2.5' };
    case 'bool':
      return { context: String(!fallback), value: String(!fallback) };
    case 'ports':
      return { context: '{"22":"tcp","9000":"http"}', value: encodeSetting('ports', { '22': 'tcp', '9000': 'http' }) };
    case 'ids':
      return { context: 'T0001,T0002', value: 'T0001,T0002' };
    case 'choice': {
      const other = (s.choices ?? []).find((choice) => choice !== fallback);
      if (other === undefined) throw new Error(`no non-default choice for ${key}`);
      return { context: other, value: other };
    }
    case 'url':
      return { context: 'https://market.example.com', value: 'https://market.example.com' };
    case 'ssh-key': {
      // An ed25519 public key line (32 zero bytes: its shape is all a setting checks).
      const line = `ssh-ed25519 ${Buffer.concat([Buffer.from([0, 0, 0, 11]), Buffer.from('ssh-ed25519'), Buffer.from([0, 0, 0, 32]), Buffer.alloc(32)]).toString('base64')} ops@relay`;
      return { context: line, value: line };
    }
    default:
      return { context: `sample-${key}`, value: `sample-${key}` };
  }
};

describe('bin/relay.ts: every deployed setting is CDK context', () => {
  const deployed = (Object.entries(SETTINGS) as [string, Setting][]).filter(([, s]) => s.deployed !== false);
  const samples = deployed.map(([key, s]) => ({ key, name: s.env, ...sampleOf(key, s) }));
  let variables: Record<string, unknown>[];

  beforeAll(() => {
    const context: Record<string, unknown> = { 'aws:cdk:bundling-stacks': [] };
    for (const sample of samples) context[sample.key] = sample.context;
    const { stack } = buildApp(new App({ context }));
    const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as Resource[];
    variables = functions.map((fn) => fn.Properties.Environment?.Variables ?? {}).filter((v) => 'TABLE_NAME' in v);
  });

  it('covers at least the settings the issue named', () => {
    expect(samples.map((s) => s.key)).toEqual(
      expect.arrayContaining([
        'allowPrivateCallbacks',
        'defaultMaxHours',
        'watchIntervalSeconds',
        'leaseWarningSeconds',
      ]),
    );
    expect(variables.length).toBeGreaterThan(10);
  });

  it.each(samples.map((s) => [s.key, s] as const))('-c %s reaches every function environment', (_key, sample) => {
    for (const env of variables)
      expect(`${sample.name}=${String(env[sample.name])}`).toBe(`${sample.name}=${sample.value}`);
  });
});
