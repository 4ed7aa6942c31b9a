/**
 * The create-order workflow's state document and what its steps share. The steps are pure use cases,
 * one file per Step Functions task beside this one: each takes the workflow state document, its ports
 * and `now`, and returns the small JSON the state machine stores. The state machine
 * (lib/constructs/order-workflow.ts) wires them: FindServer ▸ ReserveQuota ▸ PlaceOrder ▸
 * (CheckOrder ▸ Wait)* ▸ CancelOrder on timeout/error ▸ ReportResult; ExecutionEnded is the safety net.
 */
import type { Order } from '../marketplace-types';
import type { CreateOrderWorkflowInput, SshProbeFailure } from '../ports';

/** Placement attempts per task: the first server plus two more after rented/offline rejections. */
export const MAX_PLACEMENT_ATTEMPTS = 3;
/** A claim outlives the hard limit (600 s), so a crashed task's claim still expires on its own. */
export const CLAIM_TTL_SECONDS = 900;
/** Clock skew allowed between us and the marketplace when matching `created` during reconciliation. */
export const RECONCILE_SLACK_SECONDS = 30;
/** The rolling window of the hourly order cap (contract/retry-policy.ts). */
export { QUOTA_WINDOW_MS } from '../../../contract/retry-policy';

/** The server FindServer chose, reduced to what later steps and the result need. */
export interface ChosenServer {
  readonly id: number;
  readonly gpu_array: readonly string[];
  /** usd.spot of the server: the result's price_usd (spec §2.3), null when not stated. */
  readonly price_usd: number | null;
  /** min(price.spot[currency] × 1.1, max_price in that coin) for spot orders, never below the spot price (issue 38 §8). */
  readonly spot_bid?: number;
  /**
   * The most the order costs per hour in USD (on-demand price, or the spot bid): what a budget reserves
   * (issue 24) and the result's `bid_usd_per_hour` (issue 38 §8).
   */
  readonly usd_per_hour?: number;
  /** usd_per_hour with the renter fee (RENTER_FEE_PERCENT), when there is one: the result's `all_in_usd_per_hour`. */
  readonly all_in_usd_per_hour?: number;
  /**
   * USD per unit of the order's coin as the listing showed it (1 for USD-Blockchain): converts the
   * marketplace's `spend` at settlement, never the price at that time (issue 29 §3).
   */
  readonly usd_per_coin?: number;
}

/** A server a placement attempt was refused on, and the marketplace's reason. */
export interface TriedServer {
  readonly server_id: number;
  readonly reason: string;
}

/** Output of FindServer, at `$.search`. */
export interface SearchResult {
  readonly server: ChosenServer;
  /** 1-based placement attempt this search serves. */
  readonly attempt: number;
  /** Servers tried and rejected so far. */
  readonly excluded: readonly number[];
  /** The same servers with the reason each was refused (absent in executions started before it existed). */
  readonly tried?: readonly TriedServer[];
  /** Why this server (issue 31 §3): `cheapest of 7 matches at $0.31/h`. */
  readonly chosen?: string;
}

/** Output of PlaceOrder, at `$.placement`: an order, or a request to search again without the server. */
export type PlacementResult =
  | {
      readonly retry: false;
      readonly order_id: number;
      readonly server_id: number;
      readonly placed_at: number;
      /**
       * The key id (never the key) of the ssh password secret version the relay's own password of the
       * order was derived from (issue 38 §4). Absent: the caller's password, no password, or an order
       * placed before the relay had that secret (the API-key derivation).
       */
      readonly password_key?: string;
    }
  | { readonly retry: true; readonly server_id: number; readonly reason: string };

/**
 * Why a `running` order is not ready yet (READINESS_PROBE=ssh): its ssh endpoint did not answer with
 * a banner, is an address a deployed relay never connects to, or cannot be read from its ssh line.
 */
export type ReadinessPending =
  'ssh_not_answering' | 'ssh_address_refused' | 'ssh_endpoint_unknown' | 'ssh_login_refused';
export const READINESS_PENDING = [
  'ssh_login_refused',
  'ssh_not_answering',
  'ssh_address_refused',
  'ssh_endpoint_unknown',
] as const satisfies readonly ReadinessPending[];

/** Output of CheckOrder, at `$.check`. */
export interface CheckResult {
  readonly ready: boolean;
  readonly timedOut: boolean;
  readonly reason?: 'ready_timeout' | 'soft_deadline';
  /** Set when the order runs but is not ready: what the readiness check still waits for (a timeout failure names it). */
  readonly pending?: ReadinessPending;
  /** With `pending: 'ssh_not_answering'`: how the last probe failed. */
  readonly ssh_probe?: SshProbeFailure;
  readonly order?: {
    readonly order_id: number;
    readonly status: string;
    readonly ssh_connection: string | null;
    /** Container port → URL of the order's http ports (issue 37 §4). */
    readonly http?: Readonly<Record<string, string>>;
  };
  /** Epoch ms of the poll that found the order running: a lease counts from here. */
  readonly ready_at?: number;
  /** READINESS_PROBE=ssh-login: the host key seen at the login (`SHA256:<base64>`). */
  readonly ssh_host_key_sha256?: string;
  /** The same key in full (`ssh-ed25519 AAAA…`), for the result's known_hosts line (issue 37 §4). */
  readonly ssh_host_key?: string;
}

/** Output of CancelOrder, at `$.cancel`. */
export interface CancelResult {
  readonly cancelled: boolean;
  readonly order_id?: number;
  /** Why nothing was cancelled: no order, already cancelled, or the marketplace no longer knows it. */
  readonly note?: 'no_order' | 'already_cancelled' | 'not_cancellable';
}

/** A failure the workflow caught: the error's name and its text (the workflow handlers read it from `$.error`). */
export interface CaughtError {
  readonly name: string;
  readonly message: string;
}

/** The workflow state document as it grows along the states. */
export interface WorkflowState extends CreateOrderWorkflowInput {
  readonly search?: SearchResult;
  readonly placement?: PlacementResult;
  readonly check?: CheckResult;
  readonly cancel?: CancelResult;
  readonly error?: CaughtError;
}

/** `timing.soft_deadline` is epoch seconds (set by the ingress); `now` is epoch ms. */
export const softDeadlinePassed = (state: WorkflowState, now: number): boolean =>
  now > state.timing.soft_deadline * 1000;

/** Our newest order on `serverId` created at or after `sinceMs` (minus clock slack). */
export const findPlacedOrder = (orders: readonly Order[], serverId: number, sinceMs: number): Order | undefined => {
  const since = Math.floor(sinceMs / 1000) - RECONCILE_SLACK_SECONDS;
  return orders
    .filter((o) => o.renting_server === serverId && o.created >= since)
    .sort((a, b) => b.created - a.created || b.order_id - a.order_id)[0];
};
