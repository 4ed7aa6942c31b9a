/** bin/relay.ts: CDK context → validated RelayConfig (the app's only context reader). */
import { App } from 'aws-cdk-lib';
import { configFromContext } from '../../bin/relay';

const configOf = (context: Record<string, unknown>) => configFromContext(new App({ context }));

describe('Function: configFromContext', () => {
  it('fills the spec defaults when no context is given', () => {
    // Act
    const config = configOf({});
    // Assess
    expect(config).toMatchObject({
      defaultCurrency: 'NATIVE-Blockchain', defaultPorts: { '22': 'tcp', '8888': 'http' },
      maxOrdersPerHour: 10, maxRequestsPerMinute: 60, orderReadyTimeoutSeconds: 120, orderPollIntervalSeconds: 5,
    });
    expect(config.alarmEmail).toBeUndefined();
  });

  it('parses `-c key=value` strings into numbers, JSON ports and throttle settings', () => {
    // Act
    const config = configOf({
      marketplaceUrl: 'https://market.example.com', defaultPorts: '{"22":"tcp","7860":"http"}', maxOrdersPerHour: '3',
      maxRequestsPerMinute: '120', orderReadyTimeoutSeconds: '90', orderPollIntervalSeconds: '10', alarmEmail: 'ops@example.com',
      apiThrottleRate: '5', apiThrottleBurst: '9', logRetentionDays: '90', defaultImage: 'pytorch/pytorch:latest', defaultCurrency: 'USDC',
    });
    // Assess
    expect(config).toMatchObject({
      marketplaceUrl: 'https://market.example.com', defaultPorts: { '22': 'tcp', '7860': 'http' }, maxOrdersPerHour: 3,
      maxRequestsPerMinute: 120, orderReadyTimeoutSeconds: 90, orderPollIntervalSeconds: 10, alarmEmail: 'ops@example.com',
      apiThrottle: { rateLimit: 5, burstLimit: 9 }, logRetentionDays: 90, defaultImage: 'pytorch/pytorch:latest', defaultCurrency: 'USDC',
    });
  });

  it('accepts JSON values as cdk.json gives them', () => {
    expect(configOf({ defaultPorts: { '22': 'tcp' }, maxOrdersPerHour: 4 })).toMatchObject({ defaultPorts: { '22': 'tcp' }, maxOrdersPerHour: 4 });
  });

  it.each([
    ['maxOrdersPerHour', 'ten'],
    ['defaultPorts', '{22:tcp}'],
    ['defaultPorts', '{"22":"udp"}'],
    ['marketplaceUrl', 'not a url'],
    ['alarmEmail', 'nobody'],
    ['apiThrottleRate', '-1'],
  ])('throws on an invalid %s (%s)', (key, value) => {
    expect(() => configOf({ [key]: value })).toThrow();
  });
});
