/**
 * `on_outbid` of create-order (issue 23 item 1): what the relay does when a spot order it placed is
 * outbid. The field's rules only (its schema is OnOutbidSchema in lambdas/http/requests.ts); the recovery itself is ./outbid-recovery.ts (run by
 * the fleet watch).
 */

import { ON_OUTBID_VALUES as ON_OUTBID_MODES, type OnOutbid } from '../../../contract/wait-and-outbid';

/** The modes, as the Slack parser and the CLI read them too (contract/wait-and-outbid.ts). */
export { ON_OUTBID_MODES, type OnOutbid };

export const ON_OUTBID_ERROR = `on_outbid must be one of ${ON_OUTBID_MODES.join(', ')}`;
/** `rebid` and `rebid_then_replace` raise a spot bid: an on-demand order has none. */
export const REBID_NEEDS_SPOT_ERROR = 'on_outbid rebid needs a spot order (use_spot must not be false)';
/** The ceiling of a rebid is the caller's max_price: without it the relay would bid without limit. */
export const REBID_NEEDS_MAX_PRICE_ERROR = 'on_outbid rebid needs max_price (the ceiling of the bid, USD per hour)';

/** `replace` acts when a spot order is outbid: an on-demand order never is, so the mode would never act. */
export const REPLACE_NEEDS_SPOT_ERROR = 'on_outbid replace needs a spot order (use_spot must not be false)';

/** Whether a mode raises the bid first. */
export const rebids = (mode: OnOutbid | undefined): boolean => mode === 'rebid' || mode === 'rebid_then_replace';
/** Whether a mode places a new order (at once, or once rebidding failed). */
export const replaces = (mode: OnOutbid | undefined): boolean => mode === 'replace' || mode === 'rebid_then_replace';

/** The cross-field rule of a create-order body: recovering needs a spot order, rebidding a ceiling too. Undefined when fine. */
export const onOutbidProblem = (body: {
  readonly on_outbid?: OnOutbid;
  readonly use_spot?: boolean;
  readonly max_price?: number;
}): string | undefined => {
  if (body.on_outbid === 'replace') return body.use_spot === false ? REPLACE_NEEDS_SPOT_ERROR : undefined;
  if (!rebids(body.on_outbid)) return undefined;
  if (body.use_spot === false) return REBID_NEEDS_SPOT_ERROR;
  if (body.max_price === undefined) return REBID_NEEDS_MAX_PRICE_ERROR;
  return undefined;
};
