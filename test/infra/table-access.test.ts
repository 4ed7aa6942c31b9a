/**
 * Each function can touch only its own items (issue 21 item 5): every DynamoDB statement of the
 * synthesized stack carries a dynamodb:LeadingKeys condition built from contract/resources.ts `keys`,
 * the public summary and get-task cannot write task items, and the grant table
 * (lib/constructs/table-access.ts) is cross-checked against the code that builds the keys.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { relayConfig } from '../../lib/config';
import {
  TABLE_ACCESS,
  TABLE_READ_ACTIONS,
  TABLE_USERS,
  TABLE_WRITE_ACTIONS,
  tableAccessOf,
  type TableUser,
  WAITING_INDEX_READERS,
} from '../../lib/constructs/table-access';
import { RelayStack } from '../../lib/relay-stack';
import { keyPattern, keys, type KeyFamily } from '../../contract/resources';

type Statement = {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
};
type Resource = { Type: string; Properties?: Record<string, unknown> };

const REPO = path.resolve(__dirname, '..', '..');
const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
const WRITES = new Set<string>(TABLE_WRITE_ACTIONS);

/** IAM StringLike: `*` any run of characters, `?` one character. */
const stringLike = (pattern: string, value: string): boolean =>
  new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('')}$`,
  ).test(value);

/**
 * Whether the statements allow `action` on an item with partition key `pk`. A statement without a
 * LeadingKeys condition allows every key (the table-wide grant this replaces); wildcard actions count.
 */
const allows = (statements: Statement[], action: string, pk: string): boolean =>
  statements.some((s) => {
    if (s.Effect !== 'Allow' || !asArray(s.Action).some((a) => stringLike(a, action))) return false;
    const patterns = s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as string[] | undefined;
    return patterns === undefined || asArray(patterns).some((p) => stringLike(p, pk));
  });

/** A sample key of each family, as the code builds them. */
const SAMPLE_KEYS: Record<KeyFamily, string> = Object.fromEntries(
  (Object.keys(keys) as KeyFamily[]).map((family) => [
    family,
    (keys[family] as (arg: never) => string)((family === 'leaseDue' ? 1_800_000_000 : 42) as never),
  ]),
) as Record<KeyFamily, string>;

/** TypeScript sources under lambdas/ (tests live elsewhere). */
const lambdaSources = (dir = path.join(REPO, 'lambdas')): string[] =>
  readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return lambdaSources(full);
    return name.endsWith('.ts') ? [full] : [];
  });

describe('Table access: LeadingKeys grants per function', () => {
  let template: Template;
  let resources: Record<string, Resource>;
  /** Every relay function by its table-user name. */
  let functions: Record<TableUser, lambda.IFunction>;
  let stack: RelayStack;

  beforeAll(() => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new RelayStack(app, 'Relay', {
      config: relayConfig({}),
      env: { account: '111111111111', region: 'eu-west-1' },
    });
    template = Template.fromStack(stack);
    resources = template.toJSON().Resources as Record<string, Resource>;
    functions = {
      ...Object.fromEntries(Object.entries(stack.api.lambdaFunctions()).map(([id, fn]) => [`Api${id}`, fn])),
      ...Object.fromEntries(Object.entries(stack.workflow.functions).map(([id, fn]) => [`Workflow${id}`, fn])),
      JobWorker: stack.jobQueue.worker,
      FleetWatch: stack.fleetWatch.fn,
    } as unknown as Record<TableUser, lambda.IFunction>;
  });

  /** The DynamoDB statements of the function's role, from the template. */
  const dynamoStatementsOf = (user: TableUser): Statement[] => {
    const fnId = stack.getLogicalId(functions[user].node.defaultChild as CfnElement);
    const roleId = (resources[fnId].Properties?.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    return Object.values(resources)
      .filter(
        (r) =>
          r.Type === 'AWS::IAM::Policy' &&
          asArray(r.Properties?.Roles as unknown[]).some((role) => (role as { Ref?: string }).Ref === roleId),
      )
      .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: Statement[] }).Statement)
      .filter((s) => asArray(s.Action).some((a) => a.startsWith('dynamodb:')));
  };

  it('names every relay function and no other in the grant table', () => {
    expect(Object.keys(functions).sort()).toEqual([...TABLE_USERS].sort());
    for (const access of Object.values(TABLE_ACCESS)) {
      for (const user of [...(access.write ?? []), ...(access.read ?? [])]) expect(TABLE_USERS).toContain(user);
    }
  });

  it('limits every DynamoDB statement of every function to its LeadingKeys', () => {
    let checked = 0;
    for (const user of TABLE_USERS) {
      for (const statement of dynamoStatementsOf(user)) {
        checked += 1;
        const patterns = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as
          string[] | undefined;
        expect({ user, patterns }).toEqual({ user, patterns: expect.arrayContaining([expect.any(String)]) });
        // No pattern that matches every key.
        for (const pattern of patterns ?? [])
          expect({ user, pattern }).toEqual({ user, pattern: expect.stringMatching(/^[A-Z_]+#/) });
        expect(Object.keys(statement.Condition ?? {})).toEqual(['ForAllValues:StringLike']);
      }
      // The grants are exactly the table's, read-only where it says read.
      const { write, read } = tableAccessOf(user);
      const statements = dynamoStatementsOf(user);
      for (const family of Object.keys(keys) as KeyFamily[]) {
        const pk = SAMPLE_KEYS[family];
        const mayWrite = write.some((p) => stringLike(p, pk));
        const mayRead = mayWrite || read.some((p) => stringLike(p, pk));
        expect({ user, family, write: allows(statements, 'dynamodb:PutItem', pk) }).toEqual({
          user,
          family,
          write: mayWrite,
        });
        expect({ user, family, read: allows(statements, 'dynamodb:GetItem', pk) }).toEqual({
          user,
          family,
          read: mayRead,
        });
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it.each(['ApiMarketplaceSummary', 'ApiGetTask'] as const)('%s cannot write task items', (user) => {
    const statements = dynamoStatementsOf(user);
    expect(statements.length).toBeGreaterThan(0);
    for (const action of WRITES) expect(allows(statements, action, keys.task('7d2c0a4e-task'))).toBe(false);
  });

  it('lets get-task read a task, and the public summary not even that', () => {
    expect(allows(dynamoStatementsOf('ApiGetTask'), 'dynamodb:GetItem', keys.task('t1'))).toBe(true);
    expect(allows(dynamoStatementsOf('ApiMarketplaceSummary'), 'dynamodb:GetItem', keys.task('t1'))).toBe(false);
    // What the summary needs: its rate window, the marketplace pacing and read cache.
    for (const pk of [keys.rate('203.0.113.9'), keys.pacing('k1'), keys.cache('offers')]) {
      expect(allows(dynamoStatementsOf('ApiMarketplaceSummary'), 'dynamodb:UpdateItem', pk)).toBe(true);
    }
  });

  it('lets the task routes and steps that record results write tasks (the grants are not empty)', () => {
    for (const user of [
      'ApiCreateOrder',
      'ApiSlackCommand',
      'WorkflowPlaceOrder',
      'WorkflowReportResult',
      'JobWorker',
    ] as const) {
      expect({ user, ok: allows(dynamoStatementsOf(user), 'dynamodb:UpdateItem', keys.task('t1')) }).toEqual({
        user,
        ok: true,
      });
    }
    expect(allows(dynamoStatementsOf('WorkflowReserveQuota'), 'dynamodb:UpdateItem', keys.quota())).toBe(true);
    // A standing order the cap refuses waits again (issue 23): ReserveQuota marks its task waiting and queues it.
    expect(allows(dynamoStatementsOf('WorkflowReserveQuota'), 'dynamodb:UpdateItem', keys.task('t1'))).toBe(true);
    expect(allows(dynamoStatementsOf('WorkflowReserveQuota'), 'dynamodb:UpdateItem', keys.waiting('t1'))).toBe(true);
    // CheckOrder reads a task (the caller's sealed password logs in, issue 37) but never writes one.
    expect(allows(dynamoStatementsOf('WorkflowCheckOrder'), 'dynamodb:GetItem', keys.task('t1'))).toBe(true);
    expect(allows(dynamoStatementsOf('WorkflowCheckOrder'), 'dynamodb:UpdateItem', keys.task('t1'))).toBe(false);
    expect(allows(dynamoStatementsOf('FleetWatch'), 'dynamodb:BatchGetItem', keys.lease(1))).toBe(true);
  });

  it('lets only the fleet watch, FindServer and get-task Query, and only the waiting index (issue 29 §5)', () => {
    const queries = (user: TableUser) =>
      dynamoStatementsOf(user).filter((s) => asArray(s.Action).some((a) => stringLike(a, 'dynamodb:Query')));
    for (const user of TABLE_USERS) {
      const statements = queries(user);
      expect({ user, query: statements.length > 0 }).toEqual({ user, query: WAITING_INDEX_READERS.includes(user) });
      for (const statement of statements) {
        expect(asArray(statement.Action)).toEqual(['dynamodb:Query']);
        expect(JSON.stringify(statement.Resource)).toContain('/index/waiting');
        expect(statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys']).toEqual(['WAITQ#all']);
      }
    }
    // The create-order routes admit standing orders (their slots under the caps), nothing else does among the routes.
    for (const user of ['ApiCreateOrder', 'ApiSlackCommand'] as const)
      expect(allows(dynamoStatementsOf(user), 'dynamodb:UpdateItem', keys.waitingSlots('key:ci'))).toBe(true);
    expect(allows(dynamoStatementsOf('ApiCancelOrder'), 'dynamodb:UpdateItem', keys.waitingSlots('total'))).toBe(false);
  });

  it('grants Health and OpenApi no table access', () => {
    expect(dynamoStatementsOf('ApiHealth')).toEqual([]);
    expect(dynamoStatementsOf('ApiOpenApi')).toEqual([]);
  });

  describe('cross-check with the code', () => {
    const sources = lambdaSources().map((file) => ({
      file: path.relative(REPO, file),
      text: readFileSync(file, 'utf8'),
    }));

    it('builds every table key through contract/resources.ts `keys` (no key prefix written out in lambdas/)', () => {
      const prefixes = new Set(
        (Object.keys(keys) as KeyFamily[]).map((f) => SAMPLE_KEYS[f].slice(0, SAMPLE_KEYS[f].indexOf('#') + 1)),
      );
      const literal = /['"`]([A-Z][A-Z_]*#)/g;
      // Code only: comments describe the keys (e.g. `LEASE#<order_id>`).
      const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      const found = sources.flatMap(({ file, text }) =>
        [...code(text).matchAll(literal)].map((m) => `${file}: ${m[1]}`),
      );
      expect(found).toEqual([]);
      expect(prefixes.size).toBeGreaterThan(5);
    });

    it('uses every family of `keys` somewhere in lambdas/, and only those', () => {
      const used = new Set(
        sources
          .flatMap(({ text }) => [...text.matchAll(/\bkeys\.(\w+)\b/g)].map((m) => m[1]))
          .filter((name) => name in keys),
      );
      expect([...used].sort()).toEqual(Object.keys(keys).sort());
    });

    it('gives every family a user, and families sharing keys the same users', () => {
      for (const [family, access] of Object.entries(TABLE_ACCESS) as [KeyFamily, (typeof TABLE_ACCESS)[KeyFamily]][]) {
        expect({ family, users: (access.write?.length ?? 0) + (access.read?.length ?? 0) }).toEqual({
          family,
          users: expect.any(Number),
        });
        expect((access.write?.length ?? 0) + (access.read?.length ?? 0)).toBeGreaterThan(0);
        expect(SAMPLE_KEYS[family].startsWith(keyPattern(family).replace(/\*$/, ''))).toBe(true);
        for (const other of Object.keys(keys) as KeyFamily[]) {
          // A pattern that matches another family's key grants it too: only allowed with identical access.
          if (other !== family && stringLike(keyPattern(family), SAMPLE_KEYS[other]))
            expect({ other, access: TABLE_ACCESS[other] }).toEqual({ other, access });
        }
      }
      expect(TABLE_READ_ACTIONS).not.toContain('dynamodb:Query');
    });
  });
});
