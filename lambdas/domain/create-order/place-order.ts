/** PlaceOrder: places the order, never twice for one task (see ./workflow-state.ts for the workflow). */
import {
  InvalidOrderRequestError,
  MarketplaceError,
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  NoServerAvailableError,
  OrderNotVisibleError,
  OrderOutcomeUnknownError,
  SoftTimeoutError,
} from '../errors';
import { noMatchMessage } from '../hosts/matching';
import type { CreateOrderRequest, Order } from '../marketplace-types';
import type { MarketplaceClient, PlacementIntent, PlacementIntents, ServerClaims, TaskRepository } from '../ports';
import type { TaskRecord } from '../task';
import { DEFAULT_KEY_NAME } from '../teams/caller-keys';
import type { RelaySshPassword } from '../hosts/ssh-password';
import {
  findPlacedOrder,
  MAX_PLACEMENT_ATTEMPTS,
  softDeadlinePassed,
  type ChosenServer,
  type PlacementResult,
  type TriedServer,
  type WorkflowState,
} from './workflow-state';

export interface PlaceOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'createOrder' | 'listOrders'>;
  readonly tasks: Pick<TaskRepository, 'get' | 'update' | 'orderEnv'>;
  readonly claims: Pick<ServerClaims, 'release'>;
  readonly intents: Pick<PlacementIntents, 'open' | 'close' | 'claimOrder'>;
  /** How long a just-placed order may take to show in my_orders (ORDER_VISIBLE_TIMEOUT_SECONDS), in ms. */
  readonly visibleTimeoutMs: number;
  /** Epoch ms now, and a pause: the visibility wait reads my_orders again with backoff. */
  readonly clock: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /**
   * READINESS_PROBE=ssh-login (issue 31 §4): the relay's own ssh_password for the order, sent when the
   * caller gave none, with the key id of the secret version it comes from (issue 38 §4).
   */
  readonly sshPassword?: (taskId: string) => Promise<RelaySshPassword>;
  /** The access secrets sealed at acceptance (issue 37): the caller's password, the Jupyter token, the script. */
  readonly access?: Pick<TaskRepository, 'orderAccess'>;
  /** The SSH public key stored for a caller key (issue 37 §2; `default`: DEFAULT_SSH_PUBLIC_KEY), used when the request names none. */
  readonly sshKeyOf?: (keyName: string) => Promise<string | undefined>;
}

/** What create_order carries to let the caller in (issue 37): every field optional. */
export type OrderAccessFields = Pick<
  CreateOrderRequest,
  'ssh_password' | 'ssh_key' | 'autossh_entrypoint' | 'jupyter_token' | 'command'
>;

/** Pauses between fresh my_orders reads while a placed order is not listed yet: 1, 2, 4, then every 8 s. */
export const VISIBLE_BACKOFF_MS = [1_000, 2_000, 4_000, 8_000] as const;

/**
 * Rejections that mean "this host, not this request": search again without it. Production refuses
 * `currency-not-allowed` per host (on HTTP 500) for hosts that list the coin (marketplace-live.md, S6).
 */
export const SERVER_UNAVAILABLE: ReadonlySet<string> = new Set([
  'server-already-rented',
  'server-offline',
  'currency-not-allowed',
]);

/**
 * Errors after which create_order certainly placed nothing: an answer with a result code 1–6,
 * whatever its HTTP status (issue 31 §5: an error answer is an answer), a request refused before
 * sending, or one never sent. Only no answer, an unreadable one, an HTTP 5xx without a JSON body
 * (OrderOutcomeUnknownError) or code 0 without an order id leave the outcome unknown; then the intent
 * stays open for the fleet watch.
 */
export const placedNothing = (error: unknown): boolean =>
  error instanceof InvalidOrderRequestError ||
  (error instanceof MarketplaceError && !(error instanceof OrderOutcomeUnknownError));

/**
 * An answer with a result code 1–6: the marketplace processed the request and refused it, so a
 * retry need not look for the order first. A failure without a code (a connection never made, a
 * reset) keeps the earlier intent's reconciliation, as before.
 */
const refusedWithCode = (error: unknown): boolean =>
  error instanceof MarketplaceError &&
  !(error instanceof OrderOutcomeUnknownError) &&
  error.code !== undefined &&
  error.code >= 1 &&
  error.code <= 6;

/** The final failure after the last placement attempt: the spec's text and every server tried, and why. */
export const triedServersText = (base: string, tried: readonly TriedServer[]): string =>
  tried.length === 0 ? base : `${base}; tried ${tried.map((t) => `server ${t.server_id} (${t.reason})`).join(', ')}`;

/** The create_order body for the chosen server; `env` is the task's container env, kept beside its record. */
export const orderRequest = (
  state: WorkflowState,
  server: ChosenServer,
  env = state.request.env,
  access: OrderAccessFields = {},
): CreateOrderRequest => {
  const { request } = state;
  return {
    renting_server: server.id,
    type: request.use_spot ? 'spot' : 'on-demand',
    currency: request.currency,
    image: request.image,
    ports: request.ports,
    ...(env ? { env } : {}),
    ...access,
    ...(request.use_spot && server.spot_bid !== undefined ? { spotprice: server.spot_bid } : {}),
  };
};

/**
 * The access fields of the task's order (issue 37): the request's key (else its caller key's stored
 * one) with `autossh_entrypoint: true`; the caller's password (else the relay's own, when it logs in
 * to check readiness); the Jupyter token and the start-up script. Read before every create_order,
 * so a retried step sends the same values.
 */
export const orderAccessFields = async (
  state: WorkflowState,
  record: TaskRecord | undefined,
  deps: PlaceOrderDeps,
): Promise<OrderAccessFields> => (await orderAccess(state, record, deps)).fields;

/**
 * The access fields, and the key id of the relay's own password when they carry it (not the
 * caller's): CheckOrder derives the password for its login from that version (issue 38 §4).
 */
const orderAccess = async (
  state: WorkflowState,
  record: TaskRecord | undefined,
  deps: PlaceOrderDeps,
): Promise<{ readonly fields: OrderAccessFields; readonly relayPasswordKey?: string }> => {
  const sealed = record?.request.access_sealed;
  const stored = await deps.access?.orderAccess?.(state.task_id);
  // Never an order without the password or token the caller was promised (a notebook open to all).
  if (Array.isArray(sealed) && sealed.length > 0 && stored === undefined)
    throw new InvalidOrderRequestError('The access secrets of this task are no longer stored; no order was placed');
  const secrets = stored ?? {};
  const key = state.request.ssh_public_key ?? (await deps.sshKeyOf?.(state.origin.caller?.key ?? DEFAULT_KEY_NAME));
  const own =
    secrets.ssh_password === undefined && deps.sshPassword ? await deps.sshPassword(state.task_id) : undefined;
  const password = secrets.ssh_password ?? own?.password;
  return {
    fields: {
      ...(key !== undefined ? { ssh_key: key, autossh_entrypoint: true } : {}),
      ...(password !== undefined ? { ssh_password: password } : {}),
      ...(secrets.jupyter_token !== undefined ? { jupyter_token: secrets.jupyter_token } : {}),
      ...(secrets.command !== undefined ? { command: secrets.command } : {}),
    },
    ...(own ? { relayPasswordKey: own.key_id } : {}),
  };
};

/**
 * The order's container env. The values are kept beside the task record (never in the workflow
 * input); the record's `request.env_names` says the caller asked for some. Missing values (the task
 * ended meanwhile) fail the task rather than place an order without them. An execution started
 * before env was kept beside the record still carries it in `request.env`.
 */
const sealedOrderEnv = async (
  state: WorkflowState,
  record: TaskRecord | undefined,
  deps: PlaceOrderDeps,
): Promise<Readonly<Record<string, string>> | undefined> => {
  const names = record?.request.env_names;
  if (!Array.isArray(names) || names.length === 0) return state.request.env;
  const env = (await deps.tasks.orderEnv?.(state.task_id)) ?? state.request.env;
  if (!env)
    throw new InvalidOrderRequestError('The container env of this task is no longer stored; no order was placed');
  return env;
};

/** The owner name a task claims an order under (PlacementIntents.claimOrder). */
export const taskOwner = (taskId: string): string => `task:${taskId}`;

/**
 * Our order on `serverId` created since `sinceMs`, read fresh from my_orders (completed orders too,
 * which bypasses the shared cache) until `untilMs`, with backoff: production lists a new order up to
 * ~20 s late (marketplace-live.md, S6). Always reads at least once.
 */
const awaitPlacedOrder = async (
  deps: PlaceOrderDeps,
  current: () => number,
  serverId: number,
  sinceMs: number,
  untilMs: number,
): Promise<Order | undefined> => {
  for (let n = 0; ; n += 1) {
    const found = findPlacedOrder(await deps.marketplace.listOrders({ returnCompleted: true }), serverId, sinceMs);
    if (found) return found;
    const left = untilMs - current();
    if (left <= 0) return undefined;
    await deps.sleep(Math.min(left, VISIBLE_BACKOFF_MS[Math.min(n, VISIBLE_BACKOFF_MS.length - 1)]!));
  }
};

/**
 * Places the order, never twice for one task. Before create_order the task record gets an intent
 * marker (server_id + order_intent_at) and PlacementIntents an open intent; a retried PlaceOrder that
 * finds the marker, a create whose outcome is unknown or whose answer names no order (production's
 * `{"code":0}`), and "already rented" on a server this task has an intent on, all look for the order
 * in my_orders, fresh, with backoff, until the intent is `visibleTimeoutMs` old, before concluding
 * that no order was placed. A found order is claimed for the task (claimOrder): the fleet watch,
 * which cancels orders nobody kept, claims under another owner, and only one claim wins.
 * On a per-host refusal (SERVER_UNAVAILABLE) it releases the claim and asks for a new search
 * (`retry: true`) until MAX_PLACEMENT_ATTEMPTS is used up; then NoServerAvailableError names every
 * server tried and why.
 * Returns the placement and whether this call created the order (for the OrdersPlaced metric).
 */
export const placeOrder = async (
  state: WorkflowState,
  deps: PlaceOrderDeps,
  now: number,
): Promise<{ readonly placement: PlacementResult; readonly placedNow: boolean }> => {
  const search = state.search;
  if (!search) throw new MarketplaceInvalidInputError('PlaceOrder needs a chosen server ($.search)');
  const server = search.server;
  const record = await deps.tasks.get(state.task_id);
  const owner = taskOwner(state.task_id);
  const softDeadlineMs = state.timing.soft_deadline * 1000;
  // `now` is the handler's clock at the start; deps.clock measures the time spent waiting since.
  const startedAt = deps.clock();
  const current = (): number => now + (deps.clock() - startedAt);

  /** The access this attempt sent with create_order, once it did. */
  const sent: { access?: Awaited<ReturnType<typeof orderAccess>> } = {};
  /**
   * The key id of the relay's password the order was sent. For an order an earlier attempt of this step
   * placed, derived again from the current version: only a rotation between that attempt and this one
   * (seconds) would make it another version, and CheckOrder's login would then be refused until the
   * readiness timeout.
   */
  const passwordKeyOf = async (): Promise<string | undefined> => {
    if (sent.access) return sent.access.relayPasswordKey;
    if (!deps.sshPassword) return undefined;
    const callers = (await deps.access?.orderAccess?.(state.task_id))?.ssh_password;
    return callers === undefined ? (await deps.sshPassword(state.task_id)).key_id : undefined;
  };

  const done = async (
    orderId: number,
    serverId: number,
    placedAt: number,
    placedNow: boolean,
    intent?: PlacementIntent,
  ) => {
    await deps.tasks.update(state.task_id, { order_id: orderId, server_id: serverId }, now);
    if (intent) await deps.intents.close(intent);
    const passwordKey = await passwordKeyOf();
    return {
      placement: {
        retry: false as const,
        order_id: orderId,
        server_id: serverId,
        placed_at: placedAt,
        ...(passwordKey !== undefined ? { password_key: passwordKey } : {}),
      },
      placedNow,
    };
  };
  /** The task's order from the intent made at `intentAt`, if it shows before the window ends and no one else holds it. */
  const keptOrder = async (intentAt: number): Promise<Order | undefined> => {
    const until = Math.min(intentAt + deps.visibleTimeoutMs, softDeadlineMs);
    const found = await awaitPlacedOrder(deps, current, server.id, intentAt, until);
    return found && (await deps.intents.claimOrder(found.order_id, owner, current())) ? found : undefined;
  };

  // A refused create (order_refused_at not older than the intent) placed nothing: nothing to wait for.
  const refused =
    record?.order_refused_at !== undefined &&
    record.order_intent_at !== undefined &&
    record.order_refused_at >= record.order_intent_at;
  const earlier: PlacementIntent | undefined =
    record?.server_id === server.id && !refused
      ? { task_id: state.task_id, server_id: server.id, at: record.order_intent_at ?? Date.parse(record.updated_at) }
      : undefined;
  if (record?.order_id !== undefined) {
    // An earlier attempt of this step placed the order and recorded it: never place another.
    return done(record.order_id, record.server_id ?? server.id, record.order_intent_at ?? now, false, earlier);
  }
  if (earlier && Number.isFinite(earlier.at)) {
    // An intent for this server exists: the earlier attempt may have reached the marketplace.
    const found = await keptOrder(earlier.at);
    if (found) return done(found.order_id, server.id, earlier.at, false, earlier);
  }
  if (softDeadlinePassed(state, current())) throw new SoftTimeoutError();
  const env = await sealedOrderEnv(state, record, deps);
  sent.access = await orderAccess(state, record, deps);
  const access = sent.access.fields;

  const placedAt = current();
  const intent: PlacementIntent = { task_id: state.task_id, server_id: server.id, at: placedAt };
  await deps.intents.open(intent);
  await deps.tasks.update(state.task_id, { server_id: server.id, order_intent_at: placedAt }, now);
  let orderId: number | undefined;
  try {
    orderId = (await deps.marketplace.createOrder(orderRequest(state, server, env, access))).order_id;
  } catch (error) {
    if (placedNothing(error)) await deps.intents.close(intent);
    // A refusal: the step's Retry (or a new search) places again at once, without a visibility wait.
    if (refusedWithCode(error)) await deps.tasks.update(state.task_id, { order_refused_at: current() }, now);
    if (error instanceof MarketplaceRejectedError && SERVER_UNAVAILABLE.has(error.reason)) {
      // "Already rented" may mean rented by us: an earlier attempt's create_order (outcome unknown)
      // can land late. my_orders decides before the server is given up.
      if (earlier && Number.isFinite(earlier.at) && error.reason === 'server-already-rented') {
        const late = await keptOrder(earlier.at);
        if (late) return done(late.order_id, server.id, earlier.at, false, earlier);
      }
      await deps.claims.release(server.id, state.task_id);
      if (search.attempt >= MAX_PLACEMENT_ATTEMPTS) {
        const tried = [...(search.tried ?? []), { server_id: server.id, reason: error.reason }];
        throw new NoServerAvailableError(
          triedServersText(noMatchMessage(state.request.gpu_type, state.request.max_price), tried),
        );
      }
      return { placement: { retry: true, server_id: server.id, reason: error.reason }, placedNow: false };
    }
    if (!(error instanceof OrderOutcomeUnknownError)) throw error;
    const found = await keptOrder(placedAt);
    if (found) return done(found.order_id, server.id, placedAt, true, intent);
    // Thrown for the state machine's Retry: the next attempt looks again before placing. The intent
    // stays open: should the order still appear, the fleet watch cancels it (nobody kept it).
    throw error;
  }
  if (orderId === undefined) {
    // Accepted (code 0) without an order id: the order exists. Never place again for this task.
    const found = await keptOrder(placedAt);
    if (!found) {
      throw new OrderNotVisibleError(
        `create_order on server ${server.id} was accepted but the order did not appear in my_orders within ${Math.round(deps.visibleTimeoutMs / 1000)} s; ` +
          'the fleet watch cancels it when it appears',
      );
    }
    orderId = found.order_id;
  } else {
    await deps.intents.claimOrder(orderId, owner, current());
  }
  return done(orderId, server.id, placedAt, true, intent);
};
