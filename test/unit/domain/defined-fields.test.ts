import { definedFields } from '../../../lambdas/domain/defined-fields';

describe('Function: definedFields', () => {
  it('copies the named fields that are defined, in the order named, and leaves out undefined and absent ones', () => {
    // Prepare
    const source: { a?: number; b?: string; c?: boolean; d?: null; e?: number } = {
      e: 5,
      c: false,
      b: undefined,
      d: null,
    };
    // Act
    const fields = definedFields(source, ['a', 'b', 'c', 'd']);
    // Assess
    expect(fields).toStrictEqual({ c: false, d: null });
    expect(Object.keys(fields)).toEqual(['c', 'd']);
    expect('b' in fields).toBe(false);
  });

  it('keeps falsy values that are defined (0, empty string, empty list)', () => {
    expect(definedFields({ n: 0, s: '', l: [] as number[] }, ['l', 'n', 's'])).toStrictEqual({ l: [], n: 0, s: '' });
  });
});
