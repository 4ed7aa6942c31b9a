/**
 * In-process error matching is by class (`instanceof`); the state machine matches the same errors by
 * their literal names (contract/error-names.ts). These tests keep the two lists equal.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { BUSINESS_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '../../../contract/error-names';
import { relayBuildOptions } from '../../../lib/constructs/relay-bundling';
import * as errors from '../../../lambdas/domain/errors';
import {
  BudgetExceededError,
  BUSINESS_ERRORS,
  ConcurrentUpdateError,
  HandOffError,
  InvalidOrderRequestError,
  OrderNotVisibleError,
  isBusinessOutcome,
  isCallerError,
  isTransient,
  MarketplaceAuthError,
  MarketplaceDatabaseError,
  MarketplaceError,
  MarketplaceInvalidInputError,
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  NoServerAvailableError,
  OrderOutcomeUnknownError,
  QuotaExceededError,
  SoftTimeoutError,
  TRANSIENT_ERRORS,
  WaitingQueueFullError,
} from '../../../lambdas/domain/errors';

/** An instance of each matched class, built with whatever arguments its constructor takes. */
const instances: Error[] = [
  new MarketplaceDatabaseError('db'),
  new MarketplaceRateLimitedError('slow down'),
  new MarketplaceUnavailableError('down'),
  new ConcurrentUpdateError('race'),
  new NoServerAvailableError('none'),
  new QuotaExceededError(10),
  new SoftTimeoutError(),
  new MarketplaceRejectedError('no'),
  new MarketplaceInvalidInputError('bad'),
  new MarketplaceAuthError('key'),
  new InvalidOrderRequestError('bad request'),
  new OrderNotVisibleError('late'),
  new BudgetExceededError('budget exceeded: $1.00 of $1.00 today'),
];
const named = (name: string): Error => {
  const found = instances.find((e) => e.name === name);
  if (!found) throw new Error(`no instance named ${name}`);
  return found;
};

describe('error matching', () => {
  it('matches the classes whose names the contract lists, and their names only', () => {
    expect(TRANSIENT_ERRORS.map((type) => type.name)).toEqual([...TRANSIENT_ERROR_NAMES]);
    expect(BUSINESS_ERRORS.map((type) => type.name)).toEqual([...BUSINESS_ERROR_NAMES]);
    for (const name of TRANSIENT_ERROR_NAMES) expect(named(name).name).toBe(name);
    for (const name of BUSINESS_ERROR_NAMES) expect(named(name).name).toBe(name);
  });

  it.each([...TRANSIENT_ERROR_NAMES])('isTransient(%s) and not a business outcome', (name) => {
    expect(isTransient(named(name))).toBe(true);
    expect(isBusinessOutcome(named(name))).toBe(false);
  });

  it.each([...BUSINESS_ERROR_NAMES])('isBusinessOutcome(%s) and not transient', (name) => {
    expect(isBusinessOutcome(named(name))).toBe(true);
    expect(isTransient(named(name))).toBe(false);
  });

  it('matches by class, not by a name string an unrelated error carries', () => {
    const impostor = Object.assign(new Error('looks like one'), { name: 'QuotaExceededError' });
    const transientImpostor = Object.assign(new Error('looks like one'), { name: 'MarketplaceDatabaseError' });
    expect(isBusinessOutcome(impostor)).toBe(false);
    expect(isTransient(transientImpostor)).toBe(false);
    expect(isBusinessOutcome({ name: 'QuotaExceededError' })).toBe(false);
  });

  it('matches neither for other errors and non-errors', () => {
    for (const other of [
      new Error('x'),
      new MarketplaceError('x'),
      new OrderOutcomeUnknownError('x'),
      new HandOffError(),
      'QuotaExceededError',
      undefined,
      null,
    ]) {
      expect(isTransient(other)).toBe(false);
      expect(isBusinessOutcome(other)).toBe(false);
    }
  });
});

describe('caller errors and faults (the log level of a failure)', () => {
  it.each([
    new InvalidOrderRequestError('bad request'),
    new MarketplaceInvalidInputError("order 99999 is not one of this account's orders"),
    new MarketplaceRejectedError('too_low_price', { min_price: 0.2 }),
    new NoServerAvailableError('none'),
    new QuotaExceededError(10),
    new BudgetExceededError('budget exceeded'),
    new WaitingQueueFullError('full'),
  ])('isCallerError(%s): WARN without a stack', (error) => {
    expect(isCallerError(error)).toBe(true);
  });

  it.each([
    new MarketplaceRejectedError('not_enough_balance'),
    new MarketplaceAuthError('key'),
    new SoftTimeoutError(),
    new OrderNotVisibleError('late'),
    new MarketplaceUnavailableError('down'),
    new OrderOutcomeUnknownError('x'),
    new HandOffError(),
    new Error('x'),
  ])('a fault, not a caller error: %s (ERROR with its stack)', (error) => {
    expect(isCallerError(error)).toBe(false);
  });

  it('matches by class, not by a name string', () => {
    expect(isCallerError(Object.assign(new Error('x'), { name: 'NoServerAvailableError' }))).toBe(false);
    expect(isCallerError('NoServerAvailableError')).toBe(false);
  });
});

describe('error names in the deployed bundles', () => {
  // The bundles are minified without kept names: a class's own name is mangled there, so what Step
  // Functions' Retry/Catch, the worker and the logs see is only the `name` each error sets itself.
  it('every error class keeps its name when minified as RelayFunction minifies', async () => {
    const root = path.resolve(__dirname, '..', '..', '..');
    const dir = mkdtempSync(path.join(tmpdir(), 'relay-errors-'));
    try {
      const file = path.join(dir, 'errors.mjs');
      await build({
        ...relayBuildOptions(root),
        entryPoints: [path.join(root, 'lambdas/domain/errors.ts')],
        outfile: file,
        logLevel: 'silent',
      });
      // Each exported class, built with a string argument (every constructor accepts one or none).
      const script = `import(${JSON.stringify(file)}).then((m) => console.log(JSON.stringify(Object.fromEntries(Object.entries(m)
        .filter(([, v]) => typeof v === 'function' && v.prototype instanceof Error).map(([k, C]) => [k, { instance: new C('x').name, cls: C.name }])))))`;
      const { stdout } = await promisify(execFile)(process.execPath, ['-e', script]);
      const minified = JSON.parse(stdout) as Record<string, { instance: string; cls: string }>;
      const classes = Object.entries(errors)
        .filter(([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Error)
        .map(([k]) => k);
      expect(Object.keys(minified).sort()).toEqual(classes.sort());
      for (const name of classes) expect(minified[name].instance).toBe(name);
      // The class names themselves are gone: this is what the test guards against relying on.
      expect(classes.filter((name) => minified[name].cls !== name)).not.toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
