/**
 * The permission checks of one local runtime (issue 30), composed of the concerns beside this file:
 * the template's policies (./policy-model.ts), the IAM requests of an SDK call (./call-requests.ts),
 * their evaluation (./evaluation.ts), the function a call is attributed to (./attribution.ts) and
 * what a decision does by IAM_CHECKS mode (./report.ts).
 */
import type { LocalNames, StackModel } from '../stack-model';
import { queueArnFromUrl } from '../sqs-poller';
import { FunctionScope, type CallCheck } from './attribution';
import { requestsForCall, type IamRequest } from './call-requests';
import { PolicyEvaluator } from './evaluation';
import { asArray, policyModel, type PolicyModel, type PolicyStatement } from './policy-model';
import { CheckReport, type IamDenial, type IamMode } from './report';

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

const describeContext = (context: Readonly<Record<string, string | string[]>>): string => {
  const keys = context['dynamodb:LeadingKeys'];
  return keys ? ` (dynamodb:LeadingKeys: ${asArray(keys).join(', ')})` : '';
};

/** The permission checks of one local runtime. */
export class IamChecker implements CallCheck {
  public readonly mode: IamMode;
  public readonly policies: PolicyModel;
  private readonly scope = new FunctionScope();
  private readonly evaluator: PolicyEvaluator;
  private readonly report: CheckReport;
  private readonly queueArns: Readonly<Record<string, string>>;

  public constructor(opts: IamCheckerOptions) {
    this.mode = opts.mode;
    this.policies = policyModel(opts.model, opts.local);
    this.evaluator = new PolicyEvaluator(this.policies);
    this.report = new CheckReport(opts);
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
    return this.scope.current();
  }

  /** Denials so far (report and enforce). */
  public denials(): readonly IamDenial[] {
    return this.report.denials();
  }

  /** Calls allowed so far, per `principal\tpolicy#statement\taction`. */
  public statementCounts(): ReadonlyMap<string, number> {
    return this.report.statementCounts();
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
      return this.report.refuse({
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
      return this.report.refuse({
        principal,
        action: `${service}:${command}`,
        resource: '*',
        context: {},
        explicit: false,
        message: `local IAM checks: ${service} ${command} is not modelled by the local runtime (local/iam/call-requests.ts requestsForCall)`,
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
    const decision = await this.evaluator.decide(principal, identity, request);
    if (decision.allowed) {
      return this.report.allowed(
        principal,
        request.action,
        decision.allowedBy,
        asArray(request.context['dynamodb:LeadingKeys']),
      );
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
    return this.report.refuse({
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
    const decision = await this.evaluator.decide(service, undefined, request);
    if (decision.allowed) return this.report.allowed(service, request.action, decision.allowedBy);
    return this.report.refuse({
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
    this.report.flush();
  }
}
