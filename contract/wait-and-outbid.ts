/**
 * The words people type for a standing order's wait and the outbid policy (issue 23), shared by the
 * Slack parser and the CLI so both accept exactly the same: `2h`, `90m`, `45s` (at most 24 h), and
 * `notify`, `rebid`, `replace`, `rebid_then_replace`. The request schemas validate the numbers again.
 */

/** create-order's `wait_seconds` ceiling (requests.ts MAX_WAIT_SECONDS says the same). */
export const MAX_WAIT_DURATION_SECONDS = 86_400;

const UNIT_SECONDS = { s: 1, m: 60, h: 3_600 } as const;

/** What a wait duration must look like, for error messages. */
export const WAIT_DURATION_RULE = 'a number with a unit, s, m or h (e.g. 45s, 90m, 2h), at most 24h';

/**
 * Seconds of a duration typed as `<n>s|m|h` (n may have a fraction if the result is whole seconds),
 * between 1 s and 24 h; undefined for anything else (no unit, 0, over 24 h, garbage).
 */
export const parseWaitDuration = (text: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?|\.\d+)([smh])$/i.exec(text.trim());
  if (!match) return undefined;
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2].toLowerCase() as keyof typeof UNIT_SECONDS];
  const whole = Math.round(seconds);
  if (Math.abs(seconds - whole) > 1e-9 || whole < 1 || whole > MAX_WAIT_DURATION_SECONDS) return undefined;
  return whole;
};

/** `on_outbid` of create-order: what the relay does when a spot order is outbid. */
export const ON_OUTBID_VALUES = ['notify', 'rebid', 'replace', 'rebid_then_replace'] as const;
export type OnOutbid = (typeof ON_OUTBID_VALUES)[number];

export const isOnOutbid = (word: string): word is OnOutbid => (ON_OUTBID_VALUES as readonly string[]).includes(word);
