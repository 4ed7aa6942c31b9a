/**
 * Reading the template (issue 30): the synthesized stack's policies, resolved against the local
 * resources, as the local permission checks enforce them: each function's role with its identity
 * policies (the state machine's role under STATE_MACHINE_PRINCIPAL), the resource policies (queue,
 * topic and key policies; Lambda permissions rendered as each function's resource policy), the
 * function ARNs and the EventBridge rules that target each function. Read once per runtime
 * (./checker.ts) and by `npm run iam:report` (../iam-report.ts).
 */
import { placeholderFunctionArn } from '../asl';
import { tokenResolver, type LocalNames, type StackModel } from '../stack-model';

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly Resource?: string | string[];
  readonly Principal?: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}
export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: PolicyStatement[];
}
/** A policy as enforced: its name (the template's logical id, or `<role>.<PolicyName>` for inline ones) and resolved document. */
export interface NamedPolicy {
  readonly name: string;
  readonly document: PolicyDocument;
}

/** A principal's identity: its role and that role's policies from the template. */
export interface IamIdentity {
  readonly name: string;
  readonly roleLogicalId: string;
  readonly policies: readonly NamedPolicy[];
  /** Managed policy ARNs attached to the role (not evaluated: AWS-managed, CloudWatch Logs only). */
  readonly managedPolicies: readonly string[];
}

/** Everything the checker enforces, resolved from the synthesized template (see policyModel). */
export interface PolicyModel {
  readonly identities: ReadonlyMap<string, IamIdentity>;
  /** Resource ARN → its resource policy (queue, topic and key policies; Lambda permissions). */
  readonly resourcePolicies: ReadonlyMap<string, NamedPolicy>;
  readonly functionArns: ReadonlyMap<string, string>;
  /** Function name → ARNs of the EventBridge rules that target it. */
  readonly rulesTargeting: ReadonlyMap<string, readonly string[]>;
  readonly httpApiId: string;
}

/** A policy field that holds one value or a list, as a list. */
export const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Name of the pseudo-principal the state machine's role is filed under. */
export const STATE_MACHINE_PRINCIPAL = 'StateMachine';

/** The policies of the template, resolved against the local resources: what the runtime enforces. */
export const policyModel = (model: StackModel, local: LocalNames): PolicyModel => {
  const { resolve, arnOf } = tokenResolver(model, local);
  const resources = model.template.Resources;
  const policiesOfRole = (roleId: string): NamedPolicy[] => {
    const found: NamedPolicy[] = [];
    for (const [id, resource] of Object.entries(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      const roles = asArray(resource.Properties?.Roles as unknown[]).map((r) => (r as { Ref?: string }).Ref);
      if (roles.includes(roleId))
        found.push({ name: id, document: resolve(resource.Properties?.PolicyDocument) as PolicyDocument });
    }
    for (const inline of asArray(resources[roleId]?.Properties?.Policies as unknown[])) {
      const { PolicyName, PolicyDocument } = inline as { PolicyName: string; PolicyDocument: unknown };
      found.push({ name: `${roleId}.${PolicyName}`, document: resolve(PolicyDocument) as PolicyDocument });
    }
    return found;
  };
  const identity = (name: string, roleLogicalId: string): IamIdentity => ({
    name,
    roleLogicalId,
    policies: policiesOfRole(roleLogicalId),
    managedPolicies: asArray(resources[roleLogicalId]?.Properties?.ManagedPolicyArns as unknown[]).map((arn) =>
      String(resolve(arn)),
    ),
  });

  const identities = new Map<string, IamIdentity>();
  for (const fn of model.functions) identities.set(fn.name, identity(fn.name, fn.roleLogicalId));
  const machineRole = (
    resources[model.stateMachineLogicalId]?.Properties?.RoleArn as { 'Fn::GetAtt'?: [string, string] } | undefined
  )?.['Fn::GetAtt']?.[0];
  if (machineRole) identities.set(STATE_MACHINE_PRINCIPAL, identity(STATE_MACHINE_PRINCIPAL, machineRole));

  const resourcePolicies = new Map<string, NamedPolicy>();
  const lambdaStatements = new Map<string, PolicyStatement[]>();
  for (const [id, resource] of Object.entries(resources)) {
    const props = resource.Properties ?? {};
    const attach = (targets: unknown[], arnFor: (target: unknown) => string) => {
      for (const target of targets)
        resourcePolicies.set(arnFor(target), { name: id, document: resolve(props.PolicyDocument) as PolicyDocument });
    };
    switch (resource.Type) {
      case 'AWS::SQS::QueuePolicy':
        attach(asArray(props.Queues as unknown[]), (q) => arnOf((q as { Ref: string }).Ref));
        break;
      case 'AWS::SNS::TopicPolicy':
        attach(asArray(props.Topics as unknown[]), (t) => String(resolve(t)));
        break;
      case 'AWS::KMS::Key':
        resourcePolicies.set(arnOf(id), { name: id, document: resolve(props.KeyPolicy) as PolicyDocument });
        break;
      case 'AWS::Lambda::Permission': {
        // As Lambda renders a function's permissions into its resource policy.
        const fnArn = String(resolve(props.FunctionName));
        const principal = String(resolve(props.Principal));
        const condition: Record<string, Record<string, unknown>> = {};
        if (props.SourceArn) condition.ArnLike = { 'AWS:SourceArn': resolve(props.SourceArn) };
        if (props.SourceAccount) condition.StringEquals = { 'AWS:SourceAccount': resolve(props.SourceAccount) };
        const statements = lambdaStatements.get(fnArn) ?? [];
        statements.push({
          Sid: id,
          Effect: 'Allow',
          Principal: principal.endsWith('.amazonaws.com') ? { Service: principal } : { AWS: principal },
          Action: String(resolve(props.Action)),
          Resource: fnArn,
          ...(Object.keys(condition).length > 0 ? { Condition: condition } : {}),
        });
        lambdaStatements.set(fnArn, statements);
        break;
      }
    }
  }
  for (const [fnArn, statements] of lambdaStatements)
    resourcePolicies.set(fnArn, {
      name: `${fnArn.split(':').pop()}.LambdaPermissions`,
      document: { Version: '2012-10-17', Statement: statements },
    });

  const functionArns = new Map(model.functions.map((fn) => [fn.name, placeholderFunctionArn(fn.logicalId)]));
  const rulesTargeting = new Map<string, string[]>();
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::Events::Rule') continue;
    for (const target of asArray(resource.Properties?.Targets as { Arn: unknown }[])) {
      const arn = String(resolve(target.Arn));
      const fn = model.functions.find((f) => functionArns.get(f.name) === arn);
      if (fn) rulesTargeting.set(fn.name, [...(rulesTargeting.get(fn.name) ?? []), arnOf(id)]);
    }
  }
  return {
    identities,
    resourcePolicies,
    functionArns,
    rulesTargeting,
    httpApiId: String(resolve({ Ref: model.httpApiLogicalId })),
  };
};
