import { longestFirst } from '../../../bench/schedule';

describe('bench schedule: wait-bound sections longest first', () => {
  it('orders by the last recorded wall time, a section never recorded first, and leaves its input alone', () => {
    // Prepare
    const sections = ['marketplace', 'pacing-live', 'standing', 'new-section', 'outbid'];
    const last = {
      marketplace: { seconds: 30 },
      'pacing-live': { seconds: 133 },
      standing: { seconds: 97 },
      outbid: { seconds: 98 },
    };
    // Act
    const order = longestFirst(sections, last);
    // Assess
    expect(order).toEqual(['new-section', 'pacing-live', 'outbid', 'standing', 'marketplace']);
    expect(sections[0]).toBe('marketplace');
  });

  it('keeps the declared order when nothing was recorded', () => {
    expect(longestFirst(['a', 'b', 'c'], {})).toEqual(['a', 'b', 'c']);
  });
});
