/** Fuzz: the unsigned read routes, and a check that every route of lib/routes.ts is fuzzed. */
import fc from 'fast-check';
import { ROUTES } from '../../../contract/routes';
import { TARGETS, fuzzParameters } from './fuzz-kit';
import { outcomes, readRouteProperty, reportOutcomes } from './properties';

afterAll(reportOutcomes);

describe('Fuzz: route coverage', () => {
  it('has a fuzz target for every route of lib/routes.ts', () => {
    expect(Object.keys(TARGETS).sort()).toEqual(ROUTES.map((r) => r.id).sort());
  });
});

describe.each(['MarketplaceSummary', 'Health', 'OpenApi'])('Fuzz: %s', (routeId) => {
  it('answers 200 with its document (413 only over the size limit) and hands off nothing', async () => {
    await fc.assert(readRouteProperty(routeId), fuzzParameters());
    expect(Object.keys(outcomes[routeId])).toContain('200');
    expect(['200', '413']).toEqual(expect.arrayContaining(Object.keys(outcomes[routeId])));
  });
});
