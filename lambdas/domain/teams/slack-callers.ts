/**
 * Which caller key a Slack command acts as (issue 24): the key whose `slack_user` is the command's
 * `user_id` (`gpu-relay keys create --slack-user U123`), with that key's scopes and orders; a user no
 * key names acts as the default key only when SLACK_UNMAPPED_USERS is `default`. Pure.
 */
import type { Scope } from '../../../contract/scopes';
import { callerOf, DEFAULT_CALLER, keyUnusableReason, type Caller, type CallerKeyRecord } from './caller-keys';
import type { SlackCommand } from '../requests/slack-command';

/** SLACK_UNMAPPED_USERS: `default` or `deny` (validated with the environment; anything else counts as `deny`). */
export type UnmappedSlackUsers = 'default' | 'deny' | (string & {});

/** The refusal an unmapped user gets under SLACK_UNMAPPED_USERS=deny (ephemeral). */
export const SLACK_UNMAPPED_REFUSED_MESSAGE =
  'Your Slack user is not linked to a caller key of this relay; ask its operator to run `gpu-relay keys create --slack-user <your user ID> ...`.';

/** The refusal of a user whose only keys are revoked or expired: never a fallback to the default key. */
export const slackKeyUnusableText = (name: string): string =>
  `Your key ${name} is revoked or expired; ask the relay's operator for a new one.`;

/** The refusal of a user several usable keys name: which one is meant is the operator's call. */
export const slackKeysAmbiguousText = (names: readonly string[]): string =>
  `Your Slack user is linked to several keys (${names.join(', ')}); ask the relay's operator to revoke all but one.`;

export type SlackCallerDecision =
  { readonly ok: true; readonly caller: Caller } | { readonly ok: false; readonly text: string };

/** The caller of a Slack command from `userId`, or the ephemeral refusal. */
export const slackCallerFor = (
  records: readonly CallerKeyRecord[],
  userId: string | null | undefined,
  unmapped: UnmappedSlackUsers,
  nowSeconds: number,
): SlackCallerDecision => {
  const mapped = userId ? records.filter((r) => r.slack_user === userId) : [];
  const usable = mapped.filter((r) => keyUnusableReason(r, nowSeconds) === undefined);
  if (usable.length === 1) return { ok: true, caller: callerOf(usable[0]) };
  if (usable.length > 1) return { ok: false, text: slackKeysAmbiguousText(usable.map((r) => r.name)) };
  // A user whose key was revoked must not fall back to the default key's rights.
  if (mapped.length > 0) return { ok: false, text: slackKeyUnusableText(mapped[0].name) };
  return unmapped === 'default'
    ? { ok: true, caller: DEFAULT_CALLER }
    : { ok: false, text: SLACK_UNMAPPED_REFUSED_MESSAGE };
};

/** The scope each Slack subcommand needs: the same as its webhook route (contract/routes.ts ROUTE_SCOPES). */
export const SLACK_COMMAND_SCOPES: Readonly<Record<Exclude<SlackCommand['kind'], 'usage' | 'unknown'>, Scope>> = {
  rent: 'order',
  extend: 'order',
  bid: 'order',
  cancel: 'cancel',
  status: 'read',
};
