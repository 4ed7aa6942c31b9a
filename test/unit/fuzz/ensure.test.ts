/**
 * The fuzz kit's cheap checks (fuzz-kit.ts `ensure`, `sameAs`, `equalTo`, `lengthOf`): a passing check
 * builds no expect; a failing one fails with the expect's own message.
 */
import { ensure, equalTo, lengthOf, sameAs } from './fuzz-kit';

describe('fuzz kit: checks that build an expect only when they fail', () => {
  it('passes silently when the check holds, without calling the expect', () => {
    const assert = jest.fn();
    ensure(true, assert);
    sameAs(401, 401);
    equalTo({ records: [], started: 0 }, { records: [], started: 0 });
    lengthOf([1], 1);
    expect(assert).not.toHaveBeenCalled();
  });

  it("fails with the expect's message when the check fails", () => {
    expect(() => sameAs(500, 401)).toThrow(/Expected: 401\s+Received: 500/);
    expect(() => equalTo({ started: 1 }, { started: 0 })).toThrow(/toStrictEqual/);
    expect(() => lengthOf([1, 2], 1)).toThrow(/toHaveLength/);
  });

  it('fails when a check and its expect disagree', () => {
    expect(() => ensure(false, () => expect(1).toBe(1))).toThrow(/its expect passed/);
  });
});
