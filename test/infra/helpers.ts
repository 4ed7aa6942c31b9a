/** Template helpers shared by the infra tests. */
import { Validations, type PolicyViolation, type Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** Logical id of the one resource of `type` whose logical id starts with `prefix`. */
export const logicalIdOf = (template: Template, type: string, prefix: string): string => {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1)
    throw new Error(`expected one ${type} starting with ${prefix}, found ${ids.length}: ${ids.join(', ')}`);
  return ids[0];
};

/** The Lambda function's properties (logical id prefix like `WebhookApiCreateOrderFunction`). */
export const functionProps = (template: Template, prefix: string): Record<string, unknown> => {
  const resources = template.findResources('AWS::Lambda::Function') as Resources;
  const id = Object.keys(resources).filter((key) => key.startsWith(prefix) && !key.includes('ServiceRole'));
  if (id.length !== 1) throw new Error(`expected one function starting with ${prefix}, found ${id.join(', ')}`);
  return resources[id[0]].Properties ?? {};
};

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Every IAM action granted to a function's execution role through inline policies. */
export const actionsOf = (template: Template, functionPrefix: string): Set<string> => {
  const role = functionProps(template, functionPrefix).Role as { 'Fn::GetAtt': [string, string] };
  const roleId = role['Fn::GetAtt'][0];
  const policies = template.findResources('AWS::IAM::Policy') as Resources;
  const actions = new Set<string>();
  for (const policy of Object.values(policies)) {
    const roles = asArray(policy.Properties?.Roles as unknown[]).map((r) => (r as { Ref?: string }).Ref);
    if (!roles.includes(roleId)) continue;
    const doc = policy.Properties?.PolicyDocument as { Statement: { Action: string | string[] }[] };
    for (const statement of doc.Statement) for (const action of asArray(statement.Action)) actions.add(action);
  }
  return actions;
};

/** The resource references (JSON) of the statements that grant `action` to a function. */
export const resourcesFor = (template: Template, functionPrefix: string, action: string): string[] => {
  const role = functionProps(template, functionPrefix).Role as { 'Fn::GetAtt': [string, string] };
  const roleId = role['Fn::GetAtt'][0];
  const policies = template.findResources('AWS::IAM::Policy') as Resources;
  const found: string[] = [];
  for (const policy of Object.values(policies)) {
    const roles = asArray(policy.Properties?.Roles as unknown[]).map((r) => (r as { Ref?: string }).Ref);
    if (!roles.includes(roleId)) continue;
    const doc = policy.Properties?.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] };
    for (const statement of doc.Statement) {
      if (asArray(statement.Action).includes(action))
        found.push(...asArray(statement.Resource).map((r) => JSON.stringify(r)));
    }
  }
  return found;
};

/** cdk-nag AwsSolutions findings at error level that no acknowledgement covers. */
export const unsuppressedNagErrors = (scope: IConstruct): PolicyViolation[] =>
  new AwsSolutionsChecks().validateScope(scope).violations.filter((v) => v.severity === 'error');

/** Every acknowledgement (suppression) recorded in the tree, with its reason. */
export const acknowledgements = (stack: Stack): { path: string; id: string; reason: string }[] => {
  const found: { path: string; id: string; reason: string }[] = [];
  for (const node of stack.node.findAll()) {
    for (const entry of node.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>))
        found.push({ path: node.node.path, id, reason });
    }
  }
  return found;
};
