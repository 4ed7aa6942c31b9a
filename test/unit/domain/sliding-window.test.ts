import fc from 'fast-check';
import { slideWindow, type WindowEvent } from '../../../lambdas/domain/sliding-window';

describe('Function: slideWindow', () => {
  const windowMs = 60_000;

  it('admits events up to the limit and rejects the next one', () => {
    // Prepare
    let events: readonly WindowEvent[] = [];
    const outcomes = [];
    // Act
    for (let i = 0; i < 4; i += 1) {
      const out = slideWindow({ events, now: 1_000 + i, windowMs, limit: 3, eventId: `e${i}` });
      events = out.events;
      outcomes.push(out);
    }
    // Assess
    expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, false]);
    expect(outcomes[3].count).toBe(3);
    expect(events.map((e) => e.id)).toEqual(['e0', 'e1', 'e2']);
  });

  it('reports retryAfterMs as the time until the oldest in-window event leaves', () => {
    // Prepare
    const events = [
      { id: 'a', t: 10_000 },
      { id: 'b', t: 30_000 },
    ];
    // Act
    const out = slideWindow({ events, now: 50_000, windowMs, limit: 2, eventId: 'c' });
    // Assess
    expect(out.allowed).toBe(false);
    expect(out.retryAfterMs).toBe(20_000);
    expect(slideWindow({ events, now: 50_000 + out.retryAfterMs, windowMs, limit: 2, eventId: 'c' }).allowed).toBe(
      true,
    );
  });

  it('does not record a rejected event', () => {
    const events = [{ id: 'a', t: 1 }];
    const out = slideWindow({ events, now: 2, windowMs, limit: 1, eventId: 'b' });
    expect(out.allowed).toBe(false);
    expect(out.events).toEqual(events);
    expect(out.changed).toBe(false);
  });

  it('counts the same event id once', () => {
    const first = slideWindow({ events: [], now: 5, windowMs, limit: 1, eventId: 'same' });
    const again = slideWindow({ events: first.events, now: 6, windowMs, limit: 1, eventId: 'same' });
    expect(again.allowed).toBe(true);
    expect(again.count).toBe(1);
    expect(again.changed).toBe(false);
  });

  it('prunes events that left the window (the boundary event is out)', () => {
    const out = slideWindow({
      events: [
        { id: 'old', t: 0 },
        { id: 'edge', t: 1_000 },
      ],
      now: 61_000,
      windowMs,
      limit: 1,
      eventId: 'new',
    });
    expect(out.allowed).toBe(true);
    expect(out.events.map((e) => e.id)).toEqual(['new']);
  });

  it('waits until enough events leave when the stored count exceeds a lowered limit', () => {
    const events = [
      { id: 'a', t: 1_000 },
      { id: 'b', t: 2_000 },
      { id: 'c', t: 3_000 },
    ];
    const out = slideWindow({ events, now: 4_000, windowMs, limit: 2, eventId: 'd' });
    expect(out.retryAfterMs).toBe(2_000 + windowMs - 4_000);
  });

  it('never admits more than the limit in any rolling window, and never rejects under it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 10, max: 1_000 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 80 }),
        (limit, win, gaps) => {
          let events: readonly WindowEvent[] = [];
          const admitted: number[] = [];
          let now = 0;
          gaps.forEach((gap, i) => {
            now += gap;
            const inWindowBefore = admitted.filter((t) => t > now - win).length;
            const out = slideWindow({ events, now, windowMs: win, limit, eventId: `e${i}` });
            // Never rejected under the limit; never admitted at it.
            expect(out.allowed).toBe(inWindowBefore < limit);
            if (!out.allowed) {
              // Waiting retryAfterMs frees a slot; waiting one ms less does not.
              expect(
                slideWindow({ events, now: now + out.retryAfterMs, windowMs: win, limit, eventId: 'probe' }).allowed,
              ).toBe(true);
              if (out.retryAfterMs > 1) {
                expect(
                  slideWindow({ events, now: now + out.retryAfterMs - 1, windowMs: win, limit, eventId: 'probe' })
                    .allowed,
                ).toBe(false);
              }
            }
            if (out.allowed) admitted.push(now);
            events = out.events;
          });
          // Every rolling window (t - win, t] ending at an admitted event holds at most `limit` events.
          for (const t of admitted) {
            expect(admitted.filter((x) => x > t - win && x <= t).length).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
