/**
 * Reporting (issue 30): what the local permission checks do with a decision. IAM_CHECKS chooses what a
 * denial does: `enforce` fails the call as AWS does (AccessDeniedException naming action, resource and
 * role), `report` logs each distinct denial once with the statement that is missing and lets the call
 * through, `off` checks nothing. Allowed calls are counted per statement and per key family, and
 * written with the denials to the counts file when the runtime closes (`npm run iam:report`,
 * `npm run iam:mutations`).
 */
import { appendFileSync } from 'node:fs';
import { keyPattern, keys, type KeyFamily } from '../../contract/resources';
import type { PolicyStatement } from './policy-model';

export const IAM_MODES = ['enforce', 'report', 'off'] as const;
export type IamMode = (typeof IAM_MODES)[number];

/** IAM_CHECKS's value; unset is `fallback` (report for `npm start`), anything else a start-up error. */
export const parseIamMode = (value: string | undefined, fallback: IamMode = 'report'): IamMode => {
  if (value === undefined || value === '') return fallback;
  if ((IAM_MODES as readonly string[]).includes(value)) return value as IamMode;
  throw new Error(`IAM_CHECKS must be one of ${IAM_MODES.join(', ')}; got ${JSON.stringify(value)}`);
};

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

export interface CheckReportOptions {
  readonly mode: IamMode;
  /** Where denials are told (once each). */
  readonly log: (message: string) => void;
  /** Appends the statement counts and denials here when the runtime closes (npm run iam:report). */
  readonly countsFile?: string;
}

/** What one runtime's checks allowed and refused: the counts, the denials, and each denial's outcome by mode. */
export class CheckReport {
  private readonly counts = new Map<string, number>();
  /** Allowed DynamoDB calls per `principal\taction\tkey family pattern` (the mutation check picks tests by it). */
  private readonly keyCounts = new Map<string, number>();
  private readonly denialList: IamDenial[] = [];
  private readonly told = new Set<string>();

  public constructor(private readonly opts: CheckReportOptions) {}

  /** Denials so far (report and enforce). */
  public denials(): readonly IamDenial[] {
    return this.denialList;
  }

  /** Calls allowed so far, per `principal\tpolicy#statement\taction`. */
  public statementCounts(): ReadonlyMap<string, number> {
    return this.counts;
  }

  /** Counts an allowed call: once per statement that allowed it, and per family of each partition key it touched. */
  public allowed(
    principal: string,
    action: string,
    allowedBy: readonly string[],
    leadingKeys: readonly string[] = [],
  ): void {
    for (const key of leadingKeys) {
      const entry = `${principal}\t${action}\t${familyPatternOf(key)}`;
      this.keyCounts.set(entry, (this.keyCounts.get(entry) ?? 0) + 1);
    }
    for (const statement of allowedBy) {
      const key = `${principal}\t${statement}\t${action}`;
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    }
  }

  /** Records a denial and tells it once; in enforce mode the call fails with AccessDeniedException. */
  public refuse(denial: IamDenial): void {
    this.denialList.push(denial);
    const once = `${denial.principal}|${denial.action}|${denial.resource}|${JSON.stringify(denial.context)}`;
    if (!this.told.has(once)) {
      this.told.add(once);
      this.opts.log(
        `${this.opts.mode === 'enforce' ? 'DENIED' : 'would be denied (IAM_CHECKS=report)'}: ${denial.principal}: ${denial.message}; ` +
          `${denial.explicit ? 'denied by' : 'missing statement'}: ${JSON.stringify(denial.statement)}`,
      );
    }
    if (this.opts.mode === 'enforce') throw new AccessDeniedException(denial.message);
  }

  /** Appends this run's counts and denials to the counts file (IAM_CHECKS_COUNTS), if any. */
  public flush(): void {
    if (!this.opts.countsFile || this.opts.mode === 'off') return;
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
}
