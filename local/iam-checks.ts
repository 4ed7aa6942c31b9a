/**
 * Permission checks of the local runtime (issue 30): every AWS SDK call a handler makes is evaluated,
 * before it reaches dynalite, fauxqs or local Step Functions, against the synthesized stack's
 * policies for the function that made it (its role's identity policies with their conditions, and
 * the resource policies the template holds), with @cloud-copilot/iam-simulate. The Step Functions
 * role invoking a task function, API Gateway and EventBridge invoking a function (its Lambda
 * permissions) and the SQS event source mapping (the worker's role) are checked the same way.
 *
 * IAM_CHECKS (local runtime only): `enforce` fails a denied call as AWS does (AccessDeniedException
 * naming action, resource and role), `report` logs each distinct denial once with the statement that
 * is missing and lets the call through, `off` checks nothing. Decisions are memoized per function,
 * action, resource and condition values.
 *
 * Attribution: handlers share one process, so each invocation runs inside an AsyncLocalStorage
 * scope naming its function; the SDK middleware reads it. Clients reach the middleware through the
 * hook `traceClient` runs (lambdas/adapters/observability.ts), a no-op in Lambda.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { keyPattern, keys, RELAY_TABLE, type KeyFamily } from '../contract/resources';
import { placeholderFunctionArn } from './asl';
import { roleArn, tableArn, tokenResolver, type LocalNames, type StackModel } from './stack-model';
import { queueArnFromUrl } from './sqs-poller';

export const IAM_MODES = ['enforce', 'report', 'off'] as const;
export type IamMode = (typeof IAM_MODES)[number];

/** IAM_CHECKS's value; unset is `fallback` (report for `npm start`), anything else a start-up error. */
export const parseIamMode = (value: string | undefined, fallback: IamMode = 'report'): IamMode => {
  if (value === undefined || value === '') return fallback;
  if ((IAM_MODES as readonly string[]).includes(value)) return value as IamMode;
  throw new Error(`IAM_CHECKS must be one of ${IAM_MODES.join(', ')}; got ${JSON.stringify(value)}`);
};

interface PolicyStatement {
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

/** One request to authorize: what IAM evaluates for an SDK call (a transaction is several). */
export interface IamRequest {
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
}

export interface IamDenial {
  /** The function (or `StateMachine`, or a service principal) that was refused. */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
  readonly explicit: boolean;
  readonly message: string;
  /** The statement that would allow it (implicit denials) or the one that denies it. */
  readonly statement: PolicyStatement;
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

const asArray = <T>(value: T | T[] | undefined): T[] =>
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

/** The IAM requests of one SDK call (service = the client name without `Client`), or undefined when unmodelled. */
export const requestsForCall = (
  service: string,
  command: string,
  input: Record<string, unknown>,
  queueArnOf: (url: string) => string,
): IamRequest[] | undefined => {
  const op = command.replace(/Command$/, '');
  // Every relay client talks HTTPS to AWS (the SDK's default endpoints); locally only the stand-ins are plain HTTP.
  const base = { 'aws:SecureTransport': 'true' };
  switch (service) {
    case 'DynamoDB':
      return dynamoRequests(op, input, base);
    case 'SQS': {
      const action = `sqs:${op.replace(/Batch$/, '')}`;
      const url = input.QueueUrl as string | undefined;
      return [{ action, resource: url ? queueArnOf(url) : '*', context: base }];
    }
    case 'SFN': {
      const resource = (input.stateMachineArn ?? input.executionArn ?? '*') as string;
      return [{ action: `states:${op}`, resource, context: base }];
    }
    case 'SecretsManager':
      return [{ action: `secretsmanager:${op}`, resource: String(input.SecretId ?? '*'), context: base }];
    case 'KMS':
      return [{ action: `kms:${op}`, resource: String(input.KeyId ?? '*'), context: base }];
    case 'SNS':
      return [{ action: `sns:${op}`, resource: String(input.TopicArn ?? '*'), context: base }];
    case 'CloudWatch':
      return [{ action: `cloudwatch:${op}`, resource: '*', context: base }];
    default:
      return undefined;
  }
};

type AttributeValue = { S?: string; N?: string; B?: Uint8Array };
/**
 * The partition key of a key or item, marshalled (`{ pk: { S: 'TASK#1' } }`) or not (the document
 * client's middleware may run after this check): DynamoDB evaluates LeadingKeys on its value.
 */
const keyValue = (item: unknown): string | undefined => {
  const value = (item as Record<string, unknown> | undefined)?.[RELAY_TABLE.partitionKey];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  const attribute = value as AttributeValue;
  return attribute.S ?? attribute.N ?? (attribute.B ? Buffer.from(attribute.B).toString('base64') : undefined);
};

const dynamoRequests = (op: string, input: Record<string, unknown>, base: Record<string, string>): IamRequest[] => {
  const leading = (keys: (string | undefined)[]) => {
    const values = [...new Set(keys.filter((k): k is string => k !== undefined))].sort();
    return values.length > 0 ? { ...base, 'dynamodb:LeadingKeys': values } : base;
  };
  const table = (name: unknown) => tableArn(String(name));
  switch (op) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return [{ action: `dynamodb:${op}`, resource: table(input.TableName), context: leading([keyValue(input.Key)]) }];
    case 'PutItem':
      return [
        { action: 'dynamodb:PutItem', resource: table(input.TableName), context: leading([keyValue(input.Item)]) },
      ];
    case 'BatchGetItem':
      return Object.entries((input.RequestItems ?? {}) as Record<string, { Keys?: unknown[] }>).map(([name, r]) => ({
        action: 'dynamodb:BatchGetItem',
        resource: table(name),
        context: leading((r.Keys ?? []).map(keyValue)),
      }));
    case 'BatchWriteItem':
      return Object.entries(
        (input.RequestItems ?? {}) as Record<
          string,
          { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]
        >,
      ).map(([name, writes]) => ({
        action: 'dynamodb:BatchWriteItem',
        resource: table(name),
        context: leading(writes.map((w) => keyValue(w.PutRequest?.Item ?? w.DeleteRequest?.Key))),
      }));
    // A transaction is authorized item by item, each with the action of its kind.
    case 'TransactWriteItems':
      return (
        (input.TransactItems ?? []) as Record<string, { TableName: string; Key?: unknown; Item?: unknown }>[]
      ).map((item) => {
        const [kind, body] = Object.entries(item)[0];
        const action = {
          Put: 'PutItem',
          Update: 'UpdateItem',
          Delete: 'DeleteItem',
          ConditionCheck: 'ConditionCheckItem',
        }[kind];
        return {
          action: `dynamodb:${action ?? kind}`,
          resource: table(body.TableName),
          context: leading([keyValue(body.Key ?? body.Item)]),
        };
      });
    case 'TransactGetItems':
      return ((input.TransactItems ?? []) as { Get: { TableName: string; Key: unknown } }[]).map(({ Get }) => ({
        action: 'dynamodb:GetItem',
        resource: table(Get.TableName),
        context: leading([keyValue(Get.Key)]),
      }));
    case 'Query': {
      const resource = input.IndexName
        ? `${table(input.TableName)}/index/${String(input.IndexName)}`
        : table(input.TableName);
      const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
      const match = /(#?[\w]+)\s*=\s*(:[\w]+)/.exec(String(input.KeyConditionExpression ?? ''));
      const attribute = match ? (names[match[1]] ?? match[1]) : undefined;
      const key =
        match && attribute === RELAY_TABLE.partitionKey ? keyValue({ [attribute]: values[match[2]] }) : undefined;
      return [{ action: 'dynamodb:Query', resource, context: leading([key]) }];
    }
    default:
      return [{ action: `dynamodb:${op}`, resource: input.TableName ? table(input.TableName) : '*', context: base }];
  }
};

const globCache = new Map<string, RegExp>();
/** IAM StringLike matching: `*` any run, `?` one character, case-sensitive. */
const globMatches = (pattern: string, value: string): boolean => {
  let re = globCache.get(pattern);
  if (!re) {
    re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
      's',
    );
    globCache.set(pattern, re);
  }
  return re.test(value);
};

const FAMILY_PATTERNS = (Object.keys(keys) as KeyFamily[]).map(keyPattern);
const familyPatternCache = new Map<string, string>();
/** The LeadingKeys pattern of the item family a partition key belongs to (`TASK#*`, `KEYS#all`), or the key itself. */
export const familyPatternOf = (key: string): string => {
  if (FAMILY_PATTERNS.includes(key)) return key;
  const prefix = key.includes('#') ? key.slice(0, key.indexOf('#') + 1) : key;
  let pattern = familyPatternCache.get(prefix);
  if (pattern === undefined) {
    pattern = FAMILY_PATTERNS.find((p) => p.endsWith('*') && key.startsWith(p.slice(0, -1))) ?? key;
    if (pattern !== key) familyPatternCache.set(prefix, pattern);
  }
  return pattern;
};

/** An error shaped like the one the SDK throws for AWS's AccessDeniedException. */
export class AccessDeniedException extends Error {
  public readonly $fault = 'client';
  public readonly $metadata = { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 };
  public readonly Code = 'AccessDeniedException';
  public constructor(message: string) {
    super(message);
    this.name = 'AccessDeniedException';
  }
}

interface Decision {
  readonly allowed: boolean;
  readonly explicit: boolean;
  /** `policy name#statement identifier` of each statement that allowed the request. */
  readonly allowedBy: readonly string[];
  readonly deniedBy?: PolicyStatement;
}

export interface IamCheckerOptions {
  readonly model: StackModel;
  readonly local: LocalNames;
  readonly mode: IamMode;
  /** Where denials are told (once each). */
  readonly log: (message: string) => void;
  /** Appends the statement counts and denials here when the runtime closes (npm run iam:report). */
  readonly countsFile?: string;
  /** The local queue URLs → their ARNs (fauxqs hands out URLs on its own host). */
  readonly queueArns?: Readonly<Record<string, string>>;
}

const statementAt = (policy: NamedPolicy | undefined, identifier: string): PolicyStatement | undefined => {
  if (!policy) return undefined;
  return (
    policy.document.Statement.find((s) => s.Sid === identifier) ?? policy.document.Statement[Number(identifier) - 1]
  );
};

const describeContext = (context: Readonly<Record<string, string | string[]>>): string => {
  const keys = context['dynamodb:LeadingKeys'];
  return keys ? ` (dynamodb:LeadingKeys: ${asArray(keys).join(', ')})` : '';
};

/** The permission checks of one local runtime. */
export class IamChecker {
  public readonly mode: IamMode;
  public readonly policies: PolicyModel;
  private readonly scope = new AsyncLocalStorage<string>();
  private readonly memo = new Map<string, Promise<Decision>>();
  private readonly counts = new Map<string, number>();
  /** Allowed DynamoDB calls per `principal\taction\tkey family pattern` (the mutation check picks tests by it). */
  private readonly keyCounts = new Map<string, number>();
  private readonly denialList: IamDenial[] = [];
  private readonly told = new Set<string>();
  private readonly patternsOf = new Map<string, readonly string[] | undefined>();
  private readonly queueArns: Readonly<Record<string, string>>;

  public constructor(private readonly opts: IamCheckerOptions) {
    this.mode = opts.mode;
    this.policies = policyModel(opts.model, opts.local);
    this.queueArns = {
      [opts.local.jobQueueUrl]: opts.local.jobQueueArn,
      [opts.local.deadLetterQueueUrl]: opts.local.deadLetterQueueArn,
      ...opts.queueArns,
    };
  }

  /** Runs `work` as the function `name`: every SDK call made inside is checked against its role. */
  public runAs<T>(name: string, work: () => T): T {
    if (!this.policies.identities.has(name))
      throw new Error(`local IAM checks: no function named ${name} in the stack`);
    return this.scope.run(name, work);
  }

  /** The function the current async context runs as. */
  public current(): string | undefined {
    return this.scope.getStore();
  }

  /** Denials so far (report and enforce). */
  public denials(): readonly IamDenial[] {
    return this.denialList;
  }

  /** Calls allowed so far, per `principal\tpolicy#statement\taction`. */
  public statementCounts(): ReadonlyMap<string, number> {
    return this.counts;
  }

  /** Checks one SDK call of the current function; throws AccessDeniedException in enforce mode. */
  public async checkCall(service: string, command: string, input: Record<string, unknown>): Promise<void> {
    if (this.mode === 'off') return;
    const principal = this.current();
    const requests = requestsForCall(
      service,
      command,
      input,
      (url) => this.queueArns[url] ?? queueArnFromUrl(url, 'us-east-1'),
    );
    if (principal === undefined) {
      return this.refuse({
        principal: '(no function)',
        action: requests?.[0]?.action ?? `${service}:${command}`,
        resource: requests?.[0]?.resource ?? '*',
        context: {},
        explicit: false,
        message: `local IAM checks: ${service} ${command} was called outside any function invocation, so no role can be attributed to it`,
        statement: { Effect: 'Allow' },
      });
    }
    if (!requests) {
      return this.refuse({
        principal,
        action: `${service}:${command}`,
        resource: '*',
        context: {},
        explicit: false,
        message: `local IAM checks: ${service} ${command} is not modelled by the local runtime (local/iam-checks.ts requestsForCall)`,
        statement: { Effect: 'Allow' },
      });
    }
    for (const request of requests) await this.authorize(principal, request);
  }

  /** Checks that `principal`'s role may perform `request`, resource policy included. */
  public async authorize(principal: string, request: IamRequest): Promise<void> {
    if (this.mode === 'off') return;
    const identity = this.policies.identities.get(principal);
    if (!identity) throw new Error(`local IAM checks: unknown principal ${principal}`);
    const decision = await this.decide(principal, identity, request);
    if (decision.allowed) {
      for (const key of asArray(request.context['dynamodb:LeadingKeys'])) {
        const entry = `${principal}\t${request.action}\t${familyPatternOf(key)}`;
        this.keyCounts.set(entry, (this.keyCounts.get(entry) ?? 0) + 1);
      }
      return this.count(principal, decision, request.action);
    }
    const session = `arn:aws:sts::000000000000:assumed-role/${identity.roleLogicalId}/${principal}`;
    const statement: PolicyStatement = decision.deniedBy ?? {
      Effect: 'Allow',
      Action: request.action,
      Resource: request.resource,
      ...(request.context['dynamodb:LeadingKeys']
        ? {
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': asArray(request.context['dynamodb:LeadingKeys']) },
            },
          }
        : {}),
    };
    return this.refuse({
      principal,
      action: request.action,
      resource: request.resource,
      context: request.context,
      explicit: decision.explicit,
      message:
        `User: ${session} is not authorized to perform: ${request.action} on resource: ${request.resource}` +
        (decision.explicit
          ? ` with an explicit deny in a ${decision.deniedBy ? 'resource-based' : 'identity-based'} policy`
          : ` because no identity-based policy allows the ${request.action} action`) +
        describeContext(request.context),
      statement,
    });
  }

  /**
   * Checks that the AWS service `service` (e.g. apigateway.amazonaws.com) may invoke the function
   * `name` on behalf of `sourceArn`: the function's Lambda permissions (its resource policy).
   */
  public async authorizeInvoke(service: string, name: string, sourceArn: string): Promise<void> {
    if (this.mode === 'off') return;
    const fnArn = this.policies.functionArns.get(name);
    if (!fnArn) throw new Error(`local IAM checks: no function named ${name}`);
    const request: IamRequest = {
      action: 'lambda:InvokeFunction',
      resource: fnArn,
      context: { 'aws:SourceArn': sourceArn, 'aws:SourceAccount': '000000000000' },
    };
    const decision = await this.decide(service, undefined, request);
    if (decision.allowed) return this.count(service, decision, request.action);
    return this.refuse({
      principal: service,
      action: request.action,
      resource: fnArn,
      context: request.context,
      explicit: decision.explicit,
      message: `The service ${service} is not authorized to perform: lambda:InvokeFunction on resource: ${fnArn} (function ${name}) for ${sourceArn}: no Lambda permission of the stack allows it`,
      statement: {
        Effect: 'Allow',
        Principal: { Service: service },
        Action: 'lambda:InvokeFunction',
        Resource: fnArn,
        Condition: { ArnLike: { 'AWS:SourceArn': sourceArn } },
      },
    });
  }

  /** Appends this run's counts and denials to the counts file (IAM_CHECKS_COUNTS), if any. */
  public flush(): void {
    if (!this.opts.countsFile || this.mode === 'off') return;
    const line = JSON.stringify({
      // The jest setup (test/setup-iam-checks.ts) names the test file that ran this runtime.
      source: process.env.IAM_CHECKS_SOURCE ?? 'npm start',
      counts: Object.fromEntries(this.counts),
      keys: Object.fromEntries(this.keyCounts),
      denials: this.denialList.map(({ principal, action, resource, context }) => ({
        principal,
        action,
        resource,
        context,
      })),
    });
    appendFileSync(this.opts.countsFile, `${line}\n`);
  }

  private count(principal: string, decision: Decision, action: string): void {
    for (const statement of decision.allowedBy) {
      const key = `${principal}\t${statement}\t${action}`;
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    }
  }

  private refuse(denial: IamDenial): void {
    this.denialList.push(denial);
    const once = `${denial.principal}|${denial.action}|${denial.resource}|${JSON.stringify(denial.context)}`;
    if (!this.told.has(once)) {
      this.told.add(once);
      this.opts.log(
        `${this.mode === 'enforce' ? 'DENIED' : 'would be denied (IAM_CHECKS=report)'}: ${denial.principal}: ${denial.message}; ` +
          `${denial.explicit ? 'denied by' : 'missing statement'}: ${JSON.stringify(denial.statement)}`,
      );
    }
    if (this.mode === 'enforce') throw new AccessDeniedException(denial.message);
  }

  /**
   * The LeadingKeys patterns of a principal's policies, when every condition on the key is a string
   * match (StringLike/StringEquals, with or without a set qualifier): then the decision depends on
   * a key only through the patterns it matches, so keys matching the same ones share a memo entry
   * (`TASK#<every id>` is evaluated once). Undefined when another operator appears: raw keys then.
   */
  private leadingPatterns(identity: IamIdentity | undefined): readonly string[] | undefined {
    if (!identity) return undefined;
    const cached = this.patternsOf.get(identity.name);
    if (cached !== undefined || this.patternsOf.has(identity.name)) return cached;
    let patterns: string[] | undefined = [];
    for (const policy of identity.policies)
      for (const statement of policy.document.Statement)
        for (const [operator, keys] of Object.entries(statement.Condition ?? {})) {
          const values = (keys as Record<string, unknown>)['dynamodb:LeadingKeys'];
          if (values === undefined) continue;
          if (!/^(ForAllValues:|ForAnyValue:)?String(Like|Equals)$/.test(operator)) patterns = undefined;
          else patterns?.push(...asArray(values as string | string[]));
        }
    const result = patterns ? [...new Set(patterns)] : undefined;
    this.patternsOf.set(identity.name, result);
    return result;
  }

  private memoKey(principal: string, identity: IamIdentity | undefined, request: IamRequest): string {
    const leading = request.context['dynamodb:LeadingKeys'];
    const patterns = leading === undefined ? undefined : this.leadingPatterns(identity);
    let context: Readonly<Record<string, string | string[]>> = request.context;
    if (leading !== undefined && patterns !== undefined) {
      const classes = asArray(leading).map((key) =>
        patterns
          .map((pattern, i) => (globMatches(pattern, key) ? i : -1))
          .filter((i) => i >= 0)
          .join(','),
      );
      context = { ...request.context, 'dynamodb:LeadingKeys': [...new Set(classes)].sort() };
    }
    return `${principal}|${request.action}|${request.resource}|${JSON.stringify(context)}`;
  }

  private decide(principal: string, identity: IamIdentity | undefined, request: IamRequest): Promise<Decision> {
    const key = this.memoKey(principal, identity, request);
    let decision = this.memo.get(key);
    if (!decision) {
      decision = this.simulate(identity, principal, request);
      this.memo.set(key, decision);
    }
    return decision;
  }

  private async simulate(identity: IamIdentity | undefined, principal: string, request: IamRequest): Promise<Decision> {
    const resourcePolicy = this.policies.resourcePolicies.get(request.resource);
    const result = await runSimulation(
      {
        identityPolicies: (identity?.policies ?? []).map((p) => ({ name: p.name, policy: p.document })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(resourcePolicy ? { resourcePolicy: resourcePolicy.document } : {}),
        request: {
          action: request.action,
          principal: identity ? roleArn(identity.roleLogicalId) : principal,
          resource: { accountId: '000000000000', resource: request.resource },
          contextVariables: { ...request.context },
        },
      } as Parameters<typeof runSimulation>[0],
      {},
    );
    if (result.resultType === 'error') {
      throw new Error(
        `local IAM checks: could not evaluate ${request.action} on ${request.resource}: ${JSON.stringify(result.errors)}`,
      );
    }
    const analysis = (result.resultType === 'single' ? result.result : result.results[0])?.analysis as
      | {
          identityAnalysis?: { allowStatements?: StatementRef[]; denyStatements?: StatementRef[] };
          resourceAnalysis?: { allowStatements?: StatementRef[]; denyStatements?: StatementRef[] };
        }
      | undefined;
    const ref = (s: StatementRef, fallback: string) => `${s.policyId ?? fallback}#${s.explain?.identifier ?? '?'}`;
    const resourceName = resourcePolicy?.name ?? 'resource-policy';
    const allowedBy = [
      ...(analysis?.identityAnalysis?.allowStatements ?? []).map((s) => ref(s, 'identity')),
      ...(analysis?.resourceAnalysis?.allowStatements ?? []).map((s) => ref(s, resourceName)),
    ];
    const deny = analysis?.resourceAnalysis?.denyStatements?.[0] ?? analysis?.identityAnalysis?.denyStatements?.[0];
    const deniedBy = deny
      ? (statementAt(resourcePolicy, deny.explain?.identifier ?? '') ??
        statementAt(
          identity?.policies.find((p) => p.name === deny.policyId),
          deny.explain?.identifier ?? '',
        ))
      : undefined;
    return {
      allowed: result.overallResult === 'Allowed',
      explicit: result.overallResult === 'ExplicitlyDenied',
      allowedBy,
      ...(deniedBy ? { deniedBy } : {}),
    };
  }
}

interface StatementRef {
  readonly policyId?: string | null;
  readonly explain?: { readonly identifier?: string };
}

const CHECKER = Symbol.for('gpu-relay.local.iam-checker');
const CLIENT_HOOK = Symbol.for('gpu-relay.aws-client-hook');
type Slots = Record<symbol, unknown>;

interface MiddlewareClient {
  readonly middlewareStack: {
    add: (
      middleware: (
        next: (args: { input: unknown }) => Promise<unknown>,
        context: { clientName?: string; commandName?: string },
      ) => (args: { input: unknown }) => Promise<unknown>,
      options: { step: 'serialize'; priority: 'high'; name: string; override: boolean },
    ) => void;
  };
}

/**
 * Adds the check to an SDK client: before serialization (so after lib-dynamodb marshalled the
 * input), the call is checked by the checker of the runtime running at that moment, if any.
 */
export const addIamMiddleware = (client: unknown): void => {
  const stack = (client as Partial<MiddlewareClient>).middlewareStack;
  if (!stack) return;
  stack.add(
    (next, context) => async (args) => {
      const checker = (globalThis as Slots)[CHECKER] as IamChecker | undefined;
      if (checker) {
        const service = (context.clientName ?? '').replace(/Client$/, '');
        await checker.checkCall(
          service,
          context.commandName ?? 'Unknown',
          (args.input ?? {}) as Record<string, unknown>,
        );
      }
      return next(args);
    },
    { step: 'serialize', priority: 'high', name: 'localIamCheck', override: true },
  );
};

/** Every client a handler builds from now on (traceClient) gets the check middleware. */
export const installClientHook = (): void => {
  (globalThis as Slots)[CLIENT_HOOK] = addIamMiddleware;
};

/** Makes `checker` the one every hooked client consults; returns the undo. */
export const activateChecker = (checker: IamChecker): (() => void) => {
  const slots = globalThis as Slots;
  installClientHook();
  slots[CHECKER] = checker;
  return () => {
    if (slots[CHECKER] === checker) delete slots[CHECKER];
  };
};

/** The function (stack model name) whose handler is `entry`. */
export const functionOfEntry = (model: StackModel, entry: string): string => {
  const fn = model.functions.find((f) => f.entry === entry);
  if (!fn) throw new Error(`local IAM checks: no function of the stack runs ${entry}`);
  return fn.name;
};

type Invocation = (event: unknown, ...rest: never[]) => Promise<unknown>;

export interface LocalIamChecksOptions extends LocalNames {
  readonly log: (message: string) => void;
  readonly countsFile?: string;
}

/**
 * The checks of one runtime, as wrappers of the ways AWS invokes the functions: `route` (API Gateway,
 * through the function's Lambda permission), `task` (the state machine's role), `rule` (EventBridge,
 * through the Lambda permission), `runAs` (the SQS event source mapping runs with the worker's role).
 */
export const startIamChecks = (model: StackModel, mode: IamMode, opts: LocalIamChecksOptions) => {
  const checker = new IamChecker({ model, local: opts, mode, log: opts.log, countsFile: opts.countsFile });
  const deactivate = mode === 'off' ? (installClientHook(), () => undefined) : activateChecker(checker);
  const arnOf = (name: string) => checker.policies.functionArns.get(name) as string;
  return {
    checker,
    denials: () => checker.denials(),
    runAs: <T>(name: string, work: () => T): T => checker.runAs(name, work),
    attachTo: (client: unknown) => addIamMiddleware(client),
    route: <H extends Invocation>(
      route: { readonly id: string; readonly method: string; readonly path: string },
      handler: H,
    ): H =>
      (async (event: unknown, ...rest: never[]) => {
        const name = `Api${route.id}`;
        // API Gateway names the route as declared (path parameters as {name}), not the request's path.
        const sourceArn = `arn:aws:execute-api:us-east-1:000000000000:${checker.policies.httpApiId}/$default/${route.method}${route.path}`;
        await checker.authorizeInvoke('apigateway.amazonaws.com', name, sourceArn);
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    task: <H extends Invocation>(name: string, handler: H): H =>
      (async (event: unknown, ...rest: never[]) => {
        await checker.authorize(STATE_MACHINE_PRINCIPAL, {
          action: 'lambda:InvokeFunction',
          resource: arnOf(name),
          context: {},
        });
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    rule: <H extends Invocation>(name: string, handler: H): H =>
      (async (event: unknown, ...rest: never[]) => {
        const rule =
          checker.policies.rulesTargeting.get(name)?.[0] ??
          `arn:aws:events:us-east-1:000000000000:rule/(none targets ${name})`;
        await checker.authorizeInvoke('events.amazonaws.com', name, rule);
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    close: async () => {
      checker.flush();
      deactivate();
    },
  };
};
