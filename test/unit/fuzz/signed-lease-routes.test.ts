/** Fuzz: POST /webhook/extend-order and /webhook/set-spot-price (issue 14) through the real middleware chain. */
import fc from 'fast-check';
import { fuzzParameters } from './fuzz-kit';
import { idempotentRepeatProperty, outcomes, reportOutcomes, signedJsonRouteProperty } from './properties';

afterAll(reportOutcomes);

describe.each(['ExtendOrder', 'SetSpotPrice'])('Fuzz: %s', (routeId) => {
  it('never answers 5xx, rejects bad signatures and sizes, and hands off exactly what it accepts', async () => {
    await fc.assert(signedJsonRouteProperty(routeId), fuzzParameters());
    // The generators reach every outcome, so the properties above were not vacuous.
    expect(Object.keys(outcomes[routeId]).sort()).toEqual(['202', '400', '401', '413']);
  });

  it('returns the first task id for repeats with one Idempotency-Key and hands off once', async () => {
    await fc.assert(idempotentRepeatProperty(routeId), fuzzParameters(100));
  });
});
