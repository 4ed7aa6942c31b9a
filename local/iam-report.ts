/**
 * Least privilege, measured (issue 30 item 5): every statement of every role the local runtime
 * enforces, and how many calls of the e2e runs it allowed. The counts come from the file the
 * runtime appends to when IAM_CHECKS_COUNTS is set (local/iam-checks.ts `flush`), one JSON line per
 * runtime, naming the test file that ran it. `npm run iam:report` prints this; the mutation check
 * (scripts/iam-mutation-check.ts) picks the test file to run for each grant from the same data.
 */
import { readFileSync } from 'node:fs';
import { policyModel, type PolicyModel } from './iam/policy-model';
import type { LocalNames, StackModel } from './stack-model';

/** One line of the counts file. */
export interface CountsLine {
  readonly source: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly keys?: Readonly<Record<string, number>>;
  readonly denials?: readonly { principal: string; action: string; resource: string }[];
}

export const readCounts = (file: string): CountsLine[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as CountsLine);

/** Names for the local resources (the report only needs consistent ARNs, not a running runtime). */
export const REPORT_LOCAL_NAMES: LocalNames = {
  tableName: 'relay',
  jobQueueArn: 'arn:aws:sqs:us-east-1:000000000000:jobs',
  jobQueueUrl: 'http://127.0.0.1/000000000000/jobs',
  deadLetterQueueArn: 'arn:aws:sqs:us-east-1:000000000000:jobs-dlq',
  deadLetterQueueUrl: 'http://127.0.0.1/000000000000/jobs-dlq',
  stateMachineArn: 'arn:aws:states:us-east-1:000000000000:stateMachine:relay-create-order',
};

/**
 * Actions the local runtime cannot exercise, and why: the calls are made by AWS services or by
 * parts the local runtime replaces, so no local test can prove or refute these grants.
 */
export const NOT_MODELLED: readonly { readonly prefix: string; readonly resource?: string; readonly reason: string }[] =
  [
    { prefix: 'xray:', reason: 'X-Ray: no daemon locally (tracing off); the Lambda runtime sends segments' },
    {
      prefix: 'secretsmanager:',
      reason: 'locally secrets are environment variables (local/process-env.ts), never read from Secrets Manager',
    },
    { prefix: 'kms:', reason: 'used by Secrets Manager on the function’s behalf (kms:ViaService), not by the code' },
    { prefix: 'logs:', reason: 'CloudWatch Logs delivery of the state machine, done by Step Functions' },
    {
      prefix: 'sqs:GetQueueAttributes',
      reason: "called by Lambda's event source mapping with the worker's role, not by the local poller",
    },
    {
      prefix: 'sqs:SendMessage',
      resource: 'SafetyNetDeadLetterQueue',
      reason:
        "the safety net's on-failure destination: Lambda sends a failed async invocation there with the function's role",
    },
    {
      prefix: 'sqs:GetQueueUrl',
      reason: "part of CDK's SqsEventSource grant (grantConsumeMessages) for Lambda's event source mapping",
    },
  ];

export const notModelledReason = (action: string, resources: readonly string[] = []): string | undefined =>
  NOT_MODELLED.find(
    (n) => action.startsWith(n.prefix) && (!n.resource || resources.some((r) => r.includes(n.resource!))),
  )?.reason;

export interface StatementRow {
  readonly principal: string;
  readonly role: string;
  readonly policy: string;
  /** 1-based index, or the Sid (resource policies). */
  readonly statement: string;
  readonly actions: readonly { readonly action: string; readonly calls: number; readonly files: readonly string[] }[];
  readonly resources: readonly string[];
  readonly condition?: string;
  /** Why no local test can exercise it (every action not modelled), else undefined. */
  readonly notModelled?: string;
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

const globToRegExp = (glob: string): RegExp =>
  new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i');

/** Every Allow statement of every role (and each function's Lambda permissions), with the calls it allowed. */
export const statementRows = (model: StackModel, lines: readonly CountsLine[]): StatementRow[] => {
  const policies: PolicyModel = policyModel(model, REPORT_LOCAL_NAMES);
  // principal \t policy#statement → action → {calls, files}
  const used = new Map<string, Map<string, { calls: number; files: Set<string> }>>();
  for (const line of lines) {
    for (const [key, calls] of Object.entries(line.counts)) {
      const [principal, statement, action] = key.split('\t');
      const id = `${principal}\t${statement}`;
      const byAction = used.get(id) ?? new Map<string, { calls: number; files: Set<string> }>();
      const entry = byAction.get(action) ?? { calls: 0, files: new Set<string>() };
      entry.calls += calls;
      entry.files.add(line.source);
      byAction.set(action, entry);
      used.set(id, byAction);
    }
  }
  const rows: StatementRow[] = [];
  const rowFor = (
    principal: string,
    role: string,
    policy: string,
    statement: string,
    s: { Action?: string | string[]; Resource?: string | string[]; Condition?: unknown },
  ) => {
    const byAction = used.get(`${principal}\t${policy}#${statement}`) ?? new Map();
    const actions = asArray(s.Action).map((pattern) => {
      const re = globToRegExp(pattern);
      let calls = 0;
      const files = new Set<string>();
      for (const [action, entry] of byAction as Map<string, { calls: number; files: Set<string> }>) {
        if (!re.test(action)) continue;
        calls += entry.calls;
        for (const f of entry.files) files.add(f);
      }
      return { action: pattern, calls, files: [...files].sort() };
    });
    const reasons = actions.map((a) => notModelledReason(a.action, asArray(s.Resource)));
    rows.push({
      principal,
      role,
      policy,
      statement,
      actions,
      resources: asArray(s.Resource),
      ...(s.Condition ? { condition: JSON.stringify(s.Condition) } : {}),
      ...(reasons.every((r) => r !== undefined) ? { notModelled: reasons[0] } : {}),
    });
  };
  for (const identity of policies.identities.values()) {
    for (const policy of identity.policies) {
      policy.document.Statement.forEach((s, i) => {
        if (s.Effect === 'Allow') rowFor(identity.name, identity.roleLogicalId, policy.name, String(i + 1), s);
      });
    }
  }
  for (const [fn, arn] of policies.functionArns) {
    const permissions = policies.resourcePolicies.get(arn);
    for (const s of permissions?.document.Statement ?? []) {
      const service = (s.Principal as { Service?: string } | undefined)?.Service ?? 'account';
      rowFor(service, `(Lambda permission of ${fn})`, permissions!.name, s.Sid ?? '?', s);
    }
  }
  return rows;
};

export interface ReportSummary {
  readonly statements: number;
  readonly exercised: number;
  readonly notModelled: number;
  readonly unexercised: readonly StatementRow[];
  readonly actions: number;
  readonly actionsExercised: number;
  readonly actionsNotModelled: number;
}

export const summarize = (rows: readonly StatementRow[]): ReportSummary => {
  const exercised = rows.filter((r) => r.actions.some((a) => a.calls > 0));
  const notModelled = rows.filter((r) => r.notModelled && !exercised.includes(r));
  const actions = rows.flatMap((r) => r.actions);
  return {
    statements: rows.length,
    exercised: exercised.length,
    notModelled: notModelled.length,
    unexercised: rows.filter((r) => !exercised.includes(r) && !notModelled.includes(r)),
    actions: actions.length,
    actionsExercised: actions.filter((a) => a.calls > 0).length,
    actionsNotModelled: rows
      .flatMap((r) => r.actions.map((a) => ({ a, resources: r.resources })))
      .filter(({ a, resources }) => a.calls === 0 && notModelledReason(a.action, resources)).length,
  };
};

/** The report as text: per principal, each statement and what it allowed. */
export const formatReport = (rows: readonly StatementRow[], lines: readonly CountsLine[]): string => {
  const out: string[] = [];
  let current = '';
  for (const row of rows) {
    if (row.principal !== current) {
      current = row.principal;
      out.push('', `${row.principal}  (${row.role})`);
    }
    const resources = row.resources.map((r) => r.replace(/^arn:aws:[^:]+:[^:]*:[^:]*:/, '')).join(', ');
    const condition = row.condition ? `  if ${row.condition}` : '';
    out.push(`  ${row.policy}#${row.statement} on ${resources}${condition}`);
    for (const a of row.actions) {
      const why =
        a.calls === 0
          ? notModelledReason(a.action, row.resources)
            ? '  (not modelled locally)'
            : '  ← NOT EXERCISED'
          : '';
      out.push(`      ${a.action.padEnd(34)} ${String(a.calls).padStart(6)}${why}`);
    }
  }
  const s = summarize(rows);
  const sources = new Set(lines.map((l) => l.source));
  const denials = lines.flatMap((l) => (l.denials ?? []).map((d) => ({ ...d, source: l.source })));
  out.push(
    '',
    `Runs counted: ${lines.length} runtimes from ${sources.size} test files.`,
    `Statements: ${s.statements} total, ${s.exercised} exercised, ${s.notModelled} not modelled locally, ${s.unexercised.length} never exercised.`,
    `Actions in them: ${s.actions} total, ${s.actionsExercised} exercised, ${s.actionsNotModelled} not modelled locally.`,
    ...NOT_MODELLED.map((n) => `  not modelled: ${n.prefix}*${n.resource ? ` on ${n.resource}` : ''} — ${n.reason}`),
    ...(s.unexercised.length > 0
      ? [
          'Never exercised (remove the grant or cover it with a test):',
          ...s.unexercised.map(
            (r) => `  ${r.principal}: ${r.policy}#${r.statement} ${r.actions.map((a) => a.action).join(', ')}`,
          ),
        ]
      : []),
    ...(denials.length > 0
      ? [
          '',
          `Denials (${denials.length}):`,
          ...denials.map((d) => `  ${d.source}: ${d.principal} ${d.action} ${d.resource}`),
        ]
      : ['', 'Denials: none']),
  );
  return out.join('\n');
};
