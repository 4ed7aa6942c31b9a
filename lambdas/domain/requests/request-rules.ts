/**
 * What a request to the relay may hold and how it becomes a task's input: pure rules shared by the
 * HTTP request schemas (lambdas/http/requests.ts), the Slack command and the marketplace's order
 * check. No schema and no OpenAPI text here: those live in lambdas/http/.
 */
import { mapsHttp, orderPorts } from '../access/order-access';
import type { HostFilters, Prefer } from '../hosts/matching';
import type { PortProtocol } from '../marketplace-types';
import type { CancelOrderInput, CreateOrderInput, PriceAlertInput, StatusInput } from '../task';

export type ParseOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/**
 * Production answers HTTP 500 code 1 to any container env value holding `&` (marketplace-live.md,
 * S6: an env matrix varying one character at a time), so such a value is refused at the door.
 */
export const ENV_AMPERSAND_ERROR = 'env values must not contain "&"';
/** Whether an env value can be sent to the marketplace (see ENV_AMPERSAND_ERROR). */
export const isSendableEnvValue = (value: string): boolean => !value.includes('&');

// ---- standing orders (issue 23; the rules are in standing-orders.ts) ----------------------------

/** The longest wait a standing order may ask for: 24 h. */
export const MAX_WAIT_SECONDS = 86_400;
export const WAIT_SECONDS_ERROR = `wait_seconds must be a whole number between 0 and ${MAX_WAIT_SECONDS}`;

// ---- completing a request with the configured defaults ------------------------------------------

/** The configuration defaults a request is completed with. */
export interface RequestDefaults {
  readonly image: string;
  readonly currency: string;
  readonly ports: Readonly<Record<string, PortProtocol>>;
  /** DEFAULT_MAX_HOURS: the lease of an order that names no max_hours; undefined = no lease. */
  readonly maxHours?: number;
  /** DEFAULT_MIN_RELIABILITY, DEFAULT_MIN_RATING, DEFAULT_MIN_RATING_COUNT (issue 31 §1); undefined = no filter. */
  readonly minReliability?: number;
  readonly minRating?: number;
  readonly minRatingCount?: number;
  /** DEFAULT_PREFER (issue 31 §3). */
  readonly prefer?: Prefer;
  /**
   * A fresh random token (issue 37 §1): the order's Jupyter token when it maps an http port and the
   * request gives none (the caller of these pure rules draws it).
   */
  readonly generatedJupyterToken?: string;
}

/**
 * A request's host filters completed with the relay's defaults (issue 31 §1): each field the request
 * leaves out takes its setting; `min_rating_count` is 1 when a rating floor applies and neither sets it.
 */
export const hostFilters = (
  body: HostFilters,
  defaults: Omit<RequestDefaults, 'image' | 'currency' | 'ports'>,
): HostFilters => {
  const minReliability = body.min_reliability ?? defaults.minReliability;
  const minRating = body.min_rating ?? defaults.minRating;
  const minRatingCount = body.min_rating_count ?? defaults.minRatingCount ?? (minRating !== undefined ? 1 : undefined);
  return {
    ...(minReliability !== undefined ? { min_reliability: minReliability } : {}),
    ...(minRating !== undefined ? { min_rating: minRating } : {}),
    ...(minRatingCount !== undefined ? { min_rating_count: minRatingCount } : {}),
    ...(body.exclude_servers !== undefined && body.exclude_servers.length > 0
      ? { exclude_servers: body.exclude_servers }
      : {}),
  };
};

/** The create-order fields a caller may set (the parsed body, or a Slack `rent`). */
export interface CreateOrderFields {
  readonly gpu_type: string;
  readonly max_price?: number;
  readonly image?: string;
  readonly use_spot?: boolean;
  readonly callback_url?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Lease in hours (validated by lease.ts MaxHoursSchema). */
  readonly max_hours?: number;
  /** Standing order: seconds to wait for a server (validated by standing-orders.ts WaitSecondsSchema). */
  readonly wait_seconds?: number;
  /** Outbid recovery (issue 23; validated by OnOutbidSchema in lambdas/http/requests.ts); absent = notify. */
  readonly on_outbid?: CreateOrderInput['on_outbid'] | 'notify';
  /** false: callback_url gets the result only, no lifecycle events (issue 28). */
  readonly lifecycle_events?: boolean;
  /** Host filters and choice (issue 31; validated in lambdas/http/requests.ts). */
  readonly min_reliability?: number;
  readonly min_rating?: number;
  readonly min_rating_count?: number;
  readonly exclude_servers?: readonly number[];
  readonly prefer?: Prefer;
  /** Access (issue 37; validated in lambdas/http/create-order-requests.ts). */
  readonly ssh_public_key?: string;
  readonly ssh_password?: string;
  readonly jupyter_token?: string;
  readonly ports?: Readonly<Record<string, PortProtocol>>;
  readonly command?: string;
}

/** A request's callback_url as a task input carries it: absent when the caller gave none. */
export const callbackOf = (body: { readonly callback_url?: string }): { readonly callback_url?: string } =>
  body.callback_url !== undefined ? { callback_url: body.callback_url } : {};

/**
 * The access fields of a create-order input (issue 37): the ports (the request's or DEFAULT_PORTS,
 * with 22 when an SSH credential is given), the key, the password, the script, and the Jupyter token:
 * the request's, else the generated one when any http port is mapped.
 */
export const accessInput = (
  body: Pick<CreateOrderFields, 'ssh_public_key' | 'ssh_password' | 'jupyter_token' | 'ports' | 'command'>,
  defaults: Pick<RequestDefaults, 'ports' | 'generatedJupyterToken'>,
): Pick<CreateOrderInput, 'ports' | 'ssh_public_key' | 'ssh_password' | 'jupyter_token' | 'command'> => {
  const ports = orderPorts(
    body.ports,
    defaults.ports,
    body.ssh_public_key !== undefined || body.ssh_password !== undefined,
  );
  const token = body.jupyter_token ?? (mapsHttp(ports) ? defaults.generatedJupyterToken : undefined);
  return {
    ports,
    ...(body.ssh_public_key !== undefined ? { ssh_public_key: body.ssh_public_key } : {}),
    ...(body.ssh_password !== undefined ? { ssh_password: body.ssh_password } : {}),
    ...(token !== undefined ? { jupyter_token: token } : {}),
    ...(body.command !== undefined ? { command: body.command } : {}),
  };
};

/** Create-order fields + config defaults → the workflow's request (use_spot defaults to true). */
export const normalizeCreateOrder = (body: CreateOrderFields, defaults: RequestDefaults): CreateOrderInput => ({
  gpu_type: body.gpu_type,
  ...(body.max_price !== undefined ? { max_price: body.max_price } : {}),
  image: body.image ?? defaults.image,
  currency: defaults.currency,
  ...accessInput(body, defaults),
  ...(body.env !== undefined && Object.keys(body.env).length > 0 ? { env: body.env } : {}),
  use_spot: body.use_spot ?? true,
  ...callbackOf(body),
  ...((body.max_hours ?? defaults.maxHours) !== undefined ? { max_hours: body.max_hours ?? defaults.maxHours } : {}),
  ...(body.wait_seconds !== undefined && body.wait_seconds > 0 ? { wait_seconds: body.wait_seconds } : {}),
  ...(body.on_outbid !== undefined && body.on_outbid !== 'notify' ? { on_outbid: body.on_outbid } : {}),
  ...(body.lifecycle_events === false ? { lifecycle_events: false as const } : {}),
  ...hostFilters(body, defaults),
  ...preferOf(body.prefer ?? defaults.prefer),
});

/** `prefer` as the task input carries it: absent for `first`, the spec's rule. */
const preferOf = (prefer: Prefer | undefined): { prefer?: 'cheapest' | 'reliable' } =>
  prefer === undefined || prefer === 'first' ? {} : { prefer };

export const normalizeCancelOrder = (body: {
  readonly order_id: number;
  readonly callback_url?: string;
}): CancelOrderInput => ({
  order_id: body.order_id,
  ...callbackOf(body),
});

/** Price-alert body + the configured default image. */
export const normalizePriceAlert = (
  body: {
    readonly gpu_type: string;
    readonly target_price: number;
    readonly image?: string;
    readonly callback_url?: string;
    readonly wait_seconds?: number;
  } & HostFilters,
  defaults: Omit<RequestDefaults, 'currency' | 'ports'>,
): PriceAlertInput => ({
  gpu_type: body.gpu_type,
  target_price: body.target_price,
  image: body.image ?? defaults.image,
  ...callbackOf(body),
  ...(body.wait_seconds !== undefined && body.wait_seconds > 0 ? { wait_seconds: body.wait_seconds } : {}),
  ...hostFilters(body, defaults),
});

export const normalizeStatus = (body: { readonly callback_url?: string }): StatusInput => callbackOf(body);
