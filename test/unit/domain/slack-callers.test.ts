import type { CallerKeyRecord } from '../../../lambdas/domain/teams/caller-keys';
import { DEFAULT_CALLER } from '../../../lambdas/domain/teams/caller-keys';
import { SLACK_UNMAPPED_REFUSED_MESSAGE, slackCallerFor } from '../../../lambdas/domain/teams/slack-callers';

const NOW = 1_800_000_000;
const key = (name: string, over: Partial<CallerKeyRecord> = {}): CallerKeyRecord => ({
  name,
  scopes: ['read'],
  secret: 'sealed',
  created_at: NOW - 10,
  ...over,
});

describe('Function: slackCallerFor', () => {
  it('acts as the key that names the Slack user, with its scopes', () => {
    const decision = slackCallerFor(
      [key('ci'), key('ana', { slack_user: 'U123', scopes: ['order', 'read'], orders_per_hour: 3 })],
      'U123',
      'deny',
      NOW,
    );
    expect(decision).toEqual({
      ok: true,
      caller: { key: 'ana', scopes: ['order', 'read'], sees_all: false, orders_per_hour: 3 },
    });
  });

  it.each([
    ['default' as const, { ok: true, caller: DEFAULT_CALLER }],
    ['deny' as const, { ok: false, text: SLACK_UNMAPPED_REFUSED_MESSAGE }],
  ])('gives an unmapped user the default key only when SLACK_UNMAPPED_USERS=default (%s)', (policy, expected) => {
    expect(slackCallerFor([key('ana', { slack_user: 'U999' })], 'U123', policy, NOW)).toEqual(expected);
    expect(slackCallerFor([], null, policy, NOW)).toEqual(expected);
  });

  it.each([
    ['revoked', { revoked_at: NOW - 1 }],
    ['expired', { expires_at: NOW }],
  ])('never falls back to the default key for a user whose key is %s', (_what, over) => {
    expect(slackCallerFor([key('ana', { slack_user: 'U123', ...over })], 'U123', 'default', NOW)).toEqual({
      ok: false,
      text: "Your key ana is revoked or expired; ask the relay's operator for a new one.",
    });
  });

  it('refuses a user two usable keys name, and uses the one left when the other is revoked', () => {
    const both = [key('a', { slack_user: 'U1' }), key('b', { slack_user: 'U1' })];
    expect(slackCallerFor(both, 'U1', 'default', NOW)).toEqual({
      ok: false,
      text: "Your Slack user is linked to several keys (a, b); ask the relay's operator to revoke all but one.",
    });
    const decision = slackCallerFor([both[0], { ...both[1], revoked_at: NOW - 5 }], 'U1', 'default', NOW);
    expect(decision.ok && decision.caller.key).toBe('a');
  });
});
