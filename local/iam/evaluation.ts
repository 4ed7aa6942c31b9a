/**
 * Evaluating a call, second half (issue 30): whether a principal may make one IAM request, decided by
 * @cloud-copilot/iam-simulate with the principal's identity policies and the resource policy of the
 * target, as AWS decides it. Decisions are memoized per principal, action, resource and condition
 * values; a partition key counts by the policy patterns it matches, so `TASK#<every id>` is
 * evaluated once.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { roleArn } from '../stack-model';
import type { IamRequest } from './call-requests';
import { asArray, type IamIdentity, type NamedPolicy, type PolicyModel, type PolicyStatement } from './policy-model';

/** What IAM decided for one request, and which statements decided it. */
export interface Decision {
  readonly allowed: boolean;
  readonly explicit: boolean;
  /** `policy name#statement identifier` of each statement that allowed the request. */
  readonly allowedBy: readonly string[];
  readonly deniedBy?: PolicyStatement;
}

interface StatementRef {
  readonly policyId?: string | null;
  readonly explain?: { readonly identifier?: string };
}

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

const statementAt = (policy: NamedPolicy | undefined, identifier: string): PolicyStatement | undefined => {
  if (!policy) return undefined;
  return (
    policy.document.Statement.find((s) => s.Sid === identifier) ?? policy.document.Statement[Number(identifier) - 1]
  );
};

/** The decisions of one runtime's policies, memoized. */
export class PolicyEvaluator {
  private readonly memo = new Map<string, Promise<Decision>>();
  private readonly patternsOf = new Map<string, readonly string[] | undefined>();

  public constructor(private readonly policies: PolicyModel) {}

  /** Whether `principal` (with its role's `identity`, none for a service principal) may make `request`. */
  public decide(principal: string, identity: IamIdentity | undefined, request: IamRequest): Promise<Decision> {
    const key = this.memoKey(principal, identity, request);
    let decision = this.memo.get(key);
    if (!decision) {
      decision = this.simulate(identity, principal, request);
      this.memo.set(key, decision);
    }
    return decision;
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
