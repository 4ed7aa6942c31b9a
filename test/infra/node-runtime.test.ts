/**
 * The functions' Lambda runtime (contract/runtime.ts): the newest Node.js runtime the pinned
 * aws-cdk-lib offers, on every function, and compliant with cdk-nag's AwsSolutions-L1 without an
 * acknowledgement. test/unit/node-runtime.test.ts checks that local runs use the same major.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { LAMBDA_NODE_RUNTIME, NODE_BUNDLE_TARGET, NODE_MAJOR } from '../../contract/runtime';
import { relayConfig } from '../../lib/config';
import { relayBuildOptions } from '../../lib/constructs/relay-bundling';
import { RelayStack } from '../../lib/relay-stack';
import { acknowledgements, unsuppressedNagErrors } from './helpers';

const nodeMajorOf = (runtime: string): number | undefined => {
  const match = /^nodejs(\d+)\.x$/.exec(runtime);
  return match ? Number(match[1]) : undefined;
};

describe('Lambda Node.js runtime', () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new RelayStack(app, 'Relay', {
    config: relayConfig({}),
    env: { account: '111111111111', region: 'eu-west-1' },
  });
  const template = Template.fromStack(stack);

  it('is the newest Node.js runtime aws-cdk-lib offers', () => {
    const majors = lambda.Runtime.ALL.map((runtime) => nodeMajorOf(runtime.name)).filter(
      (major) => major !== undefined,
    );
    expect(majors.length).toBeGreaterThan(1);
    expect(Math.max(...majors)).toBe(NODE_MAJOR);
    expect(lambda.Runtime.NODEJS_24_X.name).toBe(LAMBDA_NODE_RUNTIME);
  });

  it('runs every function of the stack, bundled for that Node', () => {
    const runtimes = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (fn) => (fn.Properties as { Runtime?: string }).Runtime,
    );
    expect(runtimes.length).toBeGreaterThan(10);
    expect(new Set(runtimes)).toEqual(new Set([LAMBDA_NODE_RUNTIME]));
    expect(relayBuildOptions('/repo').target).toBe(NODE_BUNDLE_TARGET);
  });

  it('passes cdk-nag AwsSolutions-L1 (latest runtime) without an acknowledgement', () => {
    expect(acknowledgements(stack).filter((ack) => ack.id.startsWith('AwsSolutions-L1'))).toEqual([]);
    expect(
      unsuppressedNagErrors(stack).filter((violation) => violation.ruleName.startsWith('AwsSolutions-L1')),
    ).toEqual([]);
  });
});
