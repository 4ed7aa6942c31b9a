/** Fuzz: GET /webhook/tasks/{task_id} (signed over the path) through the real middleware chain. */
import fc from 'fast-check';
import { fuzzParameters } from './fuzz-kit';
import { outcomes, reportOutcomes, taskLookupProperty } from './properties';

afterAll(reportOutcomes);

describe('Fuzz: GetTask', () => {
  it('never answers 5xx, checks the path signature first, and never writes', async () => {
    await fc.assert(taskLookupProperty(), fuzzParameters());
    expect(Object.keys(outcomes.GetTask).sort()).toEqual(['200', '400', '401', '404', '413']);
  });
});
