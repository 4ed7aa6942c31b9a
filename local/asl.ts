/**
 * The create-order ASL as AWS will run it, extracted from a synthesized template: the local runtime
 * and the workflow tests execute this definition, not a hand-written copy.
 *
 * It synthesizes a minimal stack holding only the OrderWorkflow construct (with a table and the
 * secrets): the definition depends on nothing else, and this keeps synthesis fast and independent
 * of how lib/relay-stack.ts composes the rest. Bundling is skipped (`aws:cdk:bundling-stacks: []`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { OrderWorkflow, WORKFLOW_FUNCTION_ENTRIES } from '../lib/constructs/order-workflow';
import { RelaySecrets } from '../lib/constructs/relay-secrets';
import { RELAY_TABLE } from '../contract/resources';

/** Placeholder account and region of the resolved ARNs. */
export const PLACEHOLDER_ACCOUNT = '000000000000';
export const PLACEHOLDER_REGION = 'us-east-1';

/** The placeholder ARN a function's `Fn::GetAtt [logicalId, Arn]` resolves to. */
export const placeholderFunctionArn = (logicalId: string): string =>
  `arn:aws:lambda:${PLACEHOLDER_REGION}:${PLACEHOLDER_ACCOUNT}:function:${logicalId}`;

export interface WorkflowAsl {
  /** Plain ASL (JSON object) with every token resolved. */
  readonly asl: Record<string, unknown>;
  /** Task state name → repo-relative handler file it invokes (states sharing a function share an entry). */
  readonly functionForState: Record<string, string>;
  /** Function logical id → handler entry. */
  readonly entryForFunction: Record<string, string>;
}

type Token = string | { 'Fn::Join'?: [string, Token[]]; 'Fn::GetAtt'?: [string, string]; Ref?: string };

const PSEUDO: Record<string, string> = {
  'AWS::Region': PLACEHOLDER_REGION,
  'AWS::AccountId': PLACEHOLDER_ACCOUNT,
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
};

/** Resolves the intrinsic functions CDK puts in a DefinitionString to plain strings. */
export const resolveTokens = (value: Token): string => {
  if (typeof value === 'string') return value;
  if (value['Fn::Join']) {
    const [sep, parts] = value['Fn::Join'];
    return parts.map(resolveTokens).join(sep);
  }
  if (value['Fn::GetAtt']) {
    const [logicalId, attr] = value['Fn::GetAtt'];
    if (attr === 'Arn') return placeholderFunctionArn(logicalId);
    return `${logicalId}.${attr}`;
  }
  if (value.Ref) return PSEUDO[value.Ref] ?? value.Ref;
  throw new Error(`unsupported token in the state machine definition: ${JSON.stringify(value)}`);
};

interface AslState {
  readonly Type: string;
  readonly Resource?: string;
  readonly Parameters?: { readonly FunctionName?: string };
}

/** A stack holding only the workflow, its table and secrets; bundling skipped. Also used by tests. */
export const buildWorkflowStack = (
  environment: Readonly<Record<string, string>> = {},
  outdir?: string,
): { app: App; stack: Stack; workflow: OrderWorkflow } => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, analyticsReporting: false, outdir });
  const stack = new Stack(app, 'OrderWorkflowAsl', {
    env: { account: PLACEHOLDER_ACCOUNT, region: PLACEHOLDER_REGION },
  });
  const table = new dynamodb.Table(stack, 'Table', {
    partitionKey: { name: RELAY_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  });
  const workflow = new OrderWorkflow(stack, 'OrderWorkflow', {
    table,
    secrets: new RelaySecrets(stack, 'Secrets'),
    environment,
  });
  return { app, stack, workflow };
};

/** Synthesizes the workflow and returns its ASL and the state → handler mapping (about 0.6 s). */
export const synthesizeWorkflowAsl = async (): Promise<WorkflowAsl> => {
  // Synthesize into a private folder and remove it: only the template in memory is needed.
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-asl-'));
  try {
    return extractAsl(buildWorkflowStack({}, outdir));
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
};

const extractAsl = ({ app, stack, workflow }: ReturnType<typeof buildWorkflowStack>): WorkflowAsl => {
  const entryForFunction: Record<string, string> = {};
  for (const [name, fn] of Object.entries(workflow.functions)) {
    const cfn = (fn as lambda.Function).node.defaultChild as lambda.CfnFunction;
    entryForFunction[stack.getLogicalId(cfn)] =
      WORKFLOW_FUNCTION_ENTRIES[name as keyof typeof WORKFLOW_FUNCTION_ENTRIES];
  }
  return aslFromTemplate(app.synth().getStackByName(stack.stackName).template as object, entryForFunction);
};

/**
 * The ASL of the one state machine in `template` and the handler entry of each Task state, given
 * the handler entry of each workflow function (by logical id).
 */
export const aslFromTemplate = (template: object, entryForFunction: Record<string, string>): WorkflowAsl => {
  const resources = (
    template as {
      Resources: Record<string, { Type: string; Properties?: { DefinitionString?: Token } }>;
    }
  ).Resources;
  const machines = Object.values(resources).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
  if (machines.length !== 1 || !machines[0].Properties?.DefinitionString)
    throw new Error('expected exactly one state machine with a DefinitionString');
  const asl = JSON.parse(resolveTokens(machines[0].Properties.DefinitionString)) as {
    States: Record<string, AslState>;
  };

  const functionForState: Record<string, string> = {};
  const prefix = placeholderFunctionArn('');
  for (const [stateName, state] of Object.entries(asl.States)) {
    if (state.Type !== 'Task') continue;
    const arn = state.Resource?.startsWith(prefix) ? state.Resource : state.Parameters?.FunctionName;
    const logicalId = arn?.startsWith(prefix) ? arn.slice(prefix.length).split(':')[0] : undefined;
    const entry = logicalId ? entryForFunction[logicalId] : undefined;
    if (!entry) throw new Error(`Task state ${stateName} invokes no known workflow function (${state.Resource})`);
    functionForState[stateName] = entry;
  }
  return { asl, functionForState, entryForFunction };
};
