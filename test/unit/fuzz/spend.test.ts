/** Fuzz: GET /webhook/spend (signed over path and query) through the real middleware chain. */
import fc from 'fast-check';
import { fuzzParameters } from './fuzz-kit';
import { outcomes, reportOutcomes, spendQueryProperty } from './properties';

afterAll(reportOutcomes);

describe('Fuzz: Spend', () => {
  it('never answers 5xx, checks the signature first, answers 400 with the range rule or 200 for the asked days, and never writes', async () => {
    await fc.assert(spendQueryProperty(), fuzzParameters());
    expect(Object.keys(outcomes.Spend).sort()).toEqual(expect.arrayContaining(['200', '400', '401']));
  });
});
