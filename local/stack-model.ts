/**
 * The relay stack as `cdk deploy` would send it, synthesized in-process once per runtime: the local
 * runtime takes the state machine's ASL and every IAM policy it enforces (local/iam-checks.ts) from
 * this one template, so nothing the deployed stack grants or refuses is written twice.
 *
 * Bundling is skipped (`aws:cdk:bundling-stacks: []`) and so is CDK's template schema validation:
 * neither changes a policy or the definition. Tokens (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`) are
 * resolved to ARNs of the local stand-ins (account 000000000000, us-east-1): the relay table and job
 * queues by their local names, everything else by its logical id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { relayConfig } from '../lib/config';
import { RelayStack } from '../lib/relay-stack';
import { WORKFLOW_FUNCTION_ENTRIES } from '../lib/constructs/order-workflow';
import { EXECUTION_ENDED_ENTRY, FLEET_WATCH_ENTRY, JOB_WORKER_ENTRY, ROUTES } from '../contract/routes';
import { keyPattern, type KeyFamily } from '../contract/resources';
import {
  aslFromTemplate,
  PLACEHOLDER_ACCOUNT,
  PLACEHOLDER_REGION,
  placeholderFunctionArn,
  type WorkflowAsl,
} from './asl';

type Json = unknown;
export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, Json>;
}
export interface StackTemplate {
  readonly Resources: Record<string, TemplateResource>;
}

/** A relay function as the monitoring construct names it (`Api<route id>`, `Workflow<step>`, `JobWorker`, `FleetWatch`). */
export interface ModelFunction {
  readonly name: string;
  readonly logicalId: string;
  readonly roleLogicalId: string;
  /** Repo-relative handler file. */
  readonly entry: string;
}

/** What the runtime needs from the synthesized stack; all of it read from `template`. */
export interface StackModel {
  readonly template: StackTemplate;
  readonly functions: readonly ModelFunction[];
  readonly stateMachineLogicalId: string;
  readonly tableLogicalId: string;
  readonly jobQueueLogicalId: string;
  readonly deadLetterQueueLogicalId: string;
  readonly httpApiLogicalId: string;
  readonly asl: WorkflowAsl;
}

const logicalIdOf = (stack: RelayStack, construct: IConstruct): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** Builds the stack (default configuration, bundling skipped) and reads the model off its template. */
export const synthesizeStackModel = (): StackModel => {
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-stack-'));
  const validation = process.env.CDK_VALIDATION;
  // CDK's template schema validation costs seconds and tells nothing about policies or the ASL.
  process.env.CDK_VALIDATION = 'false';
  try {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, analyticsReporting: false, outdir });
    const stack = new RelayStack(app, 'Relay', {
      config: relayConfig({}),
      env: { account: PLACEHOLDER_ACCOUNT, region: PLACEHOLDER_REGION },
    });
    const template = app.synth({ validateOnSynthesis: false }).getStackByName(stack.stackName)
      .template as StackTemplate;
    const functions: ModelFunction[] = [];
    const add = (name: string, fn: IConstruct, entry: string) => {
      const logicalId = logicalIdOf(stack, fn);
      const role = template.Resources[logicalId]?.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined;
      const roleLogicalId = role?.['Fn::GetAtt']?.[0];
      if (!roleLogicalId) throw new Error(`stack model: function ${name} (${logicalId}) has no role in the template`);
      functions.push({ name, logicalId, roleLogicalId, entry });
    };
    for (const route of ROUTES) {
      const fn = stack.api.functions[route.id]?.fn;
      if (fn) add(`Api${route.id}`, fn, route.entry);
    }
    for (const [step, fn] of Object.entries(stack.workflow.functions))
      add(`Workflow${step}`, fn, WORKFLOW_FUNCTION_ENTRIES[step as keyof typeof WORKFLOW_FUNCTION_ENTRIES]);
    add('JobWorker', stack.jobQueue.worker, JOB_WORKER_ENTRY);
    add('FleetWatch', stack.fleetWatch.fn, FLEET_WATCH_ENTRY);
    const entryForFunction = Object.fromEntries(
      functions.filter((f) => f.name.startsWith('Workflow')).map((f) => [f.logicalId, f.entry]),
    );
    if (!Object.values(entryForFunction).includes(EXECUTION_ENDED_ENTRY))
      throw new Error('stack model: the ExecutionEnded function is missing');
    const mutation = process.env.IAM_MUTATION;
    if (mutation) applyMutation(template, functions, logicalIdOf(stack, stack.workflow.stateMachine), mutation);
    return {
      template,
      functions,
      stateMachineLogicalId: logicalIdOf(stack, stack.workflow.stateMachine),
      tableLogicalId: logicalIdOf(stack, stack.table.table),
      jobQueueLogicalId: logicalIdOf(stack, stack.jobQueue.queue),
      deadLetterQueueLogicalId: logicalIdOf(stack, stack.jobQueue.deadLetterQueue),
      httpApiLogicalId: logicalIdOf(stack, stack.api.httpApi),
      asl: aslFromTemplate(template, entryForFunction),
    };
  } finally {
    if (validation === undefined) delete process.env.CDK_VALIDATION;
    else process.env.CDK_VALIDATION = validation;
    rmSync(outdir, { recursive: true, force: true });
  }
};

/** The local names the stand-ins gave the stack's resources. */
export interface LocalNames {
  readonly tableName: string;
  readonly jobQueueArn: string;
  readonly jobQueueUrl: string;
  readonly deadLetterQueueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly stateMachineArn: string;
}

const REGION = PLACEHOLDER_REGION;
const ACCOUNT = PLACEHOLDER_ACCOUNT;

/** The ARN of a role by logical id (the principal of its function's calls). */
export const roleArn = (roleLogicalId: string): string => `arn:aws:iam::${ACCOUNT}:role/${roleLogicalId}`;
export const tableArn = (tableName: string): string => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${tableName}`;

const PSEUDO: Record<string, string> = {
  'AWS::Region': REGION,
  'AWS::AccountId': ACCOUNT,
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'Relay',
};

/** Marks a token no rule resolves: it matches no request, so a policy naming it grants nothing. */
export const UNRESOLVED = 'unresolved:';

/**
 * A resolver of the template's intrinsic functions to plain strings: local names where the runtime
 * has a stand-in, placeholder ARNs (by logical id) elsewhere. The same rules resolve the ASL's function
 * ARNs (asl.ts placeholderFunctionArn), so a Task's Resource and the Step Functions role's grant agree.
 */
export const tokenResolver = (model: StackModel, local: LocalNames) => {
  const resources = model.template.Resources;
  const refOf = (id: string): string => {
    if (PSEUDO[id]) return PSEUDO[id];
    const type = resources[id]?.Type;
    if (id === model.tableLogicalId) return local.tableName;
    if (id === model.jobQueueLogicalId) return local.jobQueueUrl;
    if (id === model.deadLetterQueueLogicalId) return local.deadLetterQueueUrl;
    if (id === model.stateMachineLogicalId) return local.stateMachineArn;
    switch (type) {
      case 'AWS::SecretsManager::Secret':
        return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}`;
      case 'AWS::SNS::Topic':
        return `arn:aws:sns:${REGION}:${ACCOUNT}:${id}`;
      case 'AWS::SQS::Queue':
        return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${id}`;
      default:
        return id;
    }
  };
  const arnOf = (id: string): string => {
    if (id === model.tableLogicalId) return tableArn(local.tableName);
    if (id === model.jobQueueLogicalId) return local.jobQueueArn;
    if (id === model.deadLetterQueueLogicalId) return local.deadLetterQueueArn;
    if (id === model.stateMachineLogicalId) return local.stateMachineArn;
    switch (resources[id]?.Type) {
      case 'AWS::Lambda::Function':
        return placeholderFunctionArn(id);
      case 'AWS::IAM::Role':
        return roleArn(id);
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${REGION}:${ACCOUNT}:${id}`;
      case 'AWS::KMS::Key':
        return `arn:aws:kms:${REGION}:${ACCOUNT}:key/${id}`;
      case 'AWS::Events::Rule':
        return `arn:aws:events:${REGION}:${ACCOUNT}:rule/${id}`;
      case 'AWS::Logs::LogGroup':
        return `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${id}:*`;
      case 'AWS::CloudWatch::Alarm':
        return `arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${id}`;
      case 'AWS::SNS::Topic':
      case 'AWS::SecretsManager::Secret':
        return refOf(id);
      default:
        return `${UNRESOLVED}${id}.Arn`;
    }
  };
  const resolve = (value: Json): Json => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null)
      return value;
    if (Array.isArray(value)) return value.map(resolve);
    const obj = value as Record<string, Json>;
    const keys = Object.keys(obj);
    if (keys.length === 1) {
      const [key] = keys;
      const arg = obj[key];
      if (key === 'Ref') return refOf(arg as string);
      if (key === 'Fn::GetAtt') {
        const [id, attr] = arg as [string, string];
        if (attr === 'Arn') return arnOf(id);
        if (attr === 'QueueName' && resources[id]?.Type === 'AWS::SQS::Queue') return arnOf(id).split(':').pop();
        return `${UNRESOLVED}${id}.${attr}`;
      }
      if (key === 'Fn::Join') {
        const [sep, parts] = arg as [string, Json[]];
        return parts.map((part) => String(resolve(part))).join(sep);
      }
      if (key === 'Fn::Sub') {
        const [text, vars] = typeof arg === 'string' ? [arg, {}] : (arg as [string, Record<string, Json>]);
        return text.replace(/\$\{([^}]+)\}/g, (_m, name: string) => {
          if (name in vars) return String(resolve(vars[name]));
          const [id, attr] = name.split('.');
          return String(attr ? resolve({ 'Fn::GetAtt': [id, attr] }) : refOf(id));
        });
      }
      if (key.startsWith('Fn::')) return `${UNRESOLVED}${JSON.stringify(value)}`;
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, resolve(v)]));
  };
  return { resolve, arnOf, refOf };
};

interface MutableStatement {
  Action?: string | string[];
  Condition?: Record<string, Record<string, unknown>>;
}

/**
 * Mutation testing only (scripts/iam-mutation-check.ts; unset in every normal run): IAM_MUTATION
 * removes one grant from the synthesized template before the runtime enforces it, as if it had been
 * deleted from lib/: `family:<key family>` drops that family's LeadingKeys pattern from every
 * statement (deleting its line of lib/constructs/table-access.ts), `action:<function>:<action>`
 * drops one action from that function's role (`StateMachine` names the state machine's role).
 */
export const applyMutation = (
  template: StackTemplate,
  functions: readonly ModelFunction[],
  stateMachineLogicalId: string,
  mutation: string,
): void => {
  const [kind, ...rest] = mutation.split(':');
  const policies = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::IAM::Policy');
  const statementsOf = (roleIds: readonly string[] | undefined) =>
    policies
      .filter(([, r]) => {
        if (!roleIds) return true;
        const roles = ((r.Properties?.Roles ?? []) as { Ref?: string }[]).map((role) => role.Ref ?? '');
        return roles.some((role) => roleIds.includes(role));
      })
      .map(([, r]) => r.Properties?.PolicyDocument as { Statement: MutableStatement[] });
  if (kind === 'family') {
    const pattern = keyPattern(rest[0] as KeyFamily);
    for (const document of statementsOf(undefined)) {
      document.Statement = document.Statement.filter((statement) => {
        const condition = statement.Condition?.['ForAllValues:StringLike'];
        const patterns = condition?.['dynamodb:LeadingKeys'] as string[] | undefined;
        if (!condition || !patterns?.includes(pattern)) return true;
        condition['dynamodb:LeadingKeys'] = patterns.filter((p) => p !== pattern);
        return (condition['dynamodb:LeadingKeys'] as string[]).length > 0;
      });
    }
    return;
  }
  if (kind === 'action') {
    const [principal, ...actionParts] = rest;
    const action = actionParts.join(':');
    const roleId =
      principal === 'StateMachine'
        ? (
            template.Resources[stateMachineLogicalId]?.Properties?.RoleArn as {
              'Fn::GetAtt'?: [string, string];
            }
          )?.['Fn::GetAtt']?.[0]
        : functions.find((f) => f.name === principal)?.roleLogicalId;
    if (!roleId) throw new Error(`IAM_MUTATION: no function ${principal}`);
    for (const document of statementsOf([roleId])) {
      document.Statement = document.Statement.filter((statement) => {
        const actions = ([] as string[]).concat(statement.Action ?? []).filter((a) => a !== action);
        statement.Action = actions;
        return actions.length > 0;
      });
    }
    return;
  }
  throw new Error(`IAM_MUTATION must be family:<key family> or action:<function>:<action>; got ${mutation}`);
};
