/** FindServer: picks and claims a server for the task (see ./workflow-state.ts for the workflow). */
import { definedFields } from '../defined-fields';
import { NoServerAvailableError, SoftTimeoutError } from '../errors';
import type { HostRecords } from '../hosts/host-records';
import { serverFitsLease } from '../leases/lease';
import {
  chosenText,
  comparablePriceUsd,
  filteredNoMatchMessage,
  findMatchingServers,
  leftOutBy,
  noMatchText,
  type LeftOut,
  orderByPreference,
  type MatchCriteria,
} from '../hosts/matching';
import type { Server } from '../marketplace-types';
import type { MarketplaceClient, ServerClaims, TaskRepository, WaitingTasks } from '../ports';
import {
  allInUsdPerHour,
  budgetApplies,
  orderUsdPerHour,
  SPEND_PERIOD_HOURS,
  usdPerCoin,
  type MarketplaceFees,
} from '../teams/spend-budget';
import { spotBidFor } from '../leases/spot-bid';
import { mayWait, olderWaiting, waitingEntry } from '../recovery/standing-orders';
import { FINAL_STATES } from '../task';
import { keyNameOf } from '../teams/caller-keys';
import { triedServersText } from './place-order';
import { CLAIM_TTL_SECONDS, softDeadlinePassed, type SearchResult, type WorkflowState } from './workflow-state';

export interface FindServerDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listServers'>;
  readonly claims: ServerClaims;
  readonly tasks: Pick<TaskRepository, 'update'> & Partial<Pick<TaskRepository, 'get'>>;
  /** The standing-order queue (issue 23). Absent: a task never waits. */
  readonly waiting?: WaitingTasks;
  /** SPEND_LIMIT_USD_PER_DAY: under a budget a server without a USD price for the order is skipped (issue 29 §3). */
  readonly spendLimitUsdPerDay?: number;
  /** The relay's host records (issue 31 §2): hosts avoided after failed starts are left out. Absent: none avoided. */
  readonly hosts?: Pick<HostRecords, 'avoided'>;
  /** RENTER_FEE_PERCENT and ORDER_CREATION_FEE_USD: the chosen line shows the all-in price (issue 31 §6). Absent: none shown. */
  readonly fees?: MarketplaceFees;
}

/** Why a server is skipped under a budget: the order's USD price cannot be reserved. */
export const noUsdPriceReason = (useSpot: boolean): string =>
  useSpot ? 'no USD spot price to reserve under a budget' : 'no on-demand USD price to reserve under a budget';

/** What FindServer answers for a standing order that now waits (the state machine ends the execution there). */
export interface WaitingResult {
  readonly waiting: true;
  /** Epoch seconds. */
  readonly waiting_until: number;
}

/** The task ended (cancelled) while its resumed execution was starting. */
export const ENDED_WHILE_WAITING = 'task ended while waiting for a server';

/** Puts the task in the waiting queue (its next round) and marks the record `waiting`. */
const wait = async (
  state: WorkflowState,
  deps: FindServerDeps & { waiting: WaitingTasks },
  now: number,
): Promise<WaitingResult> => {
  const round = (state.resume?.round ?? 0) + 1;
  const until = state.timing.waiting_until as number;
  await deps.waiting.add(waitingEntry(state, round));
  await deps.tasks.update(state.task_id, { state: 'waiting', waiting_until: until }, now);
  return { waiting: true, waiting_until: until };
};

/**
 * Picks the first matching server no other task holds, and claims it for this task. Servers a
 * previous attempt was rejected on are excluded. Throws NoServerAvailableError (business failure)
 * or SoftTimeoutError.
 */
export const findServerOrWait = async (
  state: WorkflowState,
  deps: FindServerDeps,
  now: number,
): Promise<SearchResult | WaitingResult> => {
  const standing = deps.waiting && mayWait(state, now) ? deps.waiting : undefined;
  if (!standing || state.resume || state.search) return search(state, deps, standing, now);
  // A standing order's first search: whatever ends it with an error (a refusal, the soft limit, the
  // listing unavailable), the place it took at acceptance is given back (issue 38 §1).
  try {
    return await search(state, deps, standing, now);
  } catch (error) {
    await standing.remove(state.task_id, 0).catch(() => undefined);
    throw error;
  }
};

/**
 * Issue 38 §2: the host filters that leave out every listed server of the request's GPU type at its
 * price (rented ones too: they may come free, their hosts stay), or undefined when one could serve it
 * or none is listed (nothing to judge by). A standing order with such filters is refused at once.
 */
export const filtersRuleOut = (servers: readonly Server[], criteria: MatchCriteria): LeftOut | undefined => {
  const listed = servers.map((server) => (server.rented ? { ...server, rented: false } : server));
  const { avoided: _avoided, claimed: _claimed, exclude: _exclude, ...filters } = criteria;
  if (findMatchingServers(listed, filters).length > 0) return undefined;
  const leftOut = leftOutBy(listed, filters);
  return leftOut.reliability + leftOut.rating + leftOut.excluded > 0 ? leftOut : undefined;
};

/** Throws the filtered no-match text when the request's host filters rule out every listed server (see filtersRuleOut). */
const refuseRuledOut = (state: WorkflowState, servers: readonly Server[]): void => {
  const { request } = state;
  const ruledOut = filtersRuleOut(servers, {
    gpu_type: request.gpu_type,
    max_price: request.max_price,
    currency: request.currency,
    use_spot: request.use_spot,
    ...definedFields(request, ['min_reliability', 'min_rating', 'min_rating_count', 'exclude_servers']),
  });
  if (ruledOut)
    throw new NoServerAvailableError(filteredNoMatchMessage(request.gpu_type, request.max_price, request, ruledOut));
};

/**
 * The server an earlier run of this task placed an order on, or may have (an open intent not
 * refused since): a workflow run again from its start under the same task id (the local runtime
 * carrying on after a restart, issue 39; a redriven execution) must find the same server, although
 * its own order rents it, and let PlaceOrder adopt that order instead of placing another.
 */
const serverPlacedOn = async (state: WorkflowState, deps: FindServerDeps): Promise<number | undefined> => {
  if (!deps.tasks.get) return undefined;
  const record = await deps.tasks.get(state.task_id);
  if (record?.server_id === undefined) return undefined;
  if (record.order_id !== undefined) return record.server_id;
  const refused =
    record.order_refused_at !== undefined &&
    record.order_intent_at !== undefined &&
    record.order_refused_at >= record.order_intent_at;
  return record.order_intent_at !== undefined && !refused ? record.server_id : undefined;
};

const search = async (
  state: WorkflowState,
  deps: FindServerDeps,
  standing: WaitingTasks | undefined,
  now: number,
): Promise<SearchResult | WaitingResult> => {
  if (softDeadlinePassed(state, now)) throw new SoftTimeoutError();
  if (state.resume && deps.tasks.get) {
    // Resumed by the fleet watch: a cancel-task may have ended the task meanwhile.
    const record = await deps.tasks.get(state.task_id);
    if (!record || FINAL_STATES.includes(record.state)) {
      await deps.claims.release(state.resume.server_id, state.task_id);
      throw new NoServerAvailableError(ENDED_WHILE_WAITING);
    }
  }
  if (standing && !state.resume && !state.search) {
    // First come, first served: a new standing order queues behind older ones for the same GPU type
    // (the next sweep serves the queue in order) instead of taking a server one of them may get.
    const acceptedAt = state.timing.accepted_at ?? now;
    if (olderWaiting(await standing.list(), state, acceptedAt).length > 0) {
      // Unless its host filters rule out every listed server: it would wait for nothing (issue 38 §2).
      refuseRuledOut(state, await deps.marketplace.listServers());
      return wait(state, { ...deps, waiting: standing }, now);
    }
  }
  // A replacement round (issue 23) never goes back to the lost order's server.
  const excluded = [...(state.search?.excluded ?? (state.replaces ? [state.replaces.server_id] : []))];
  const tried = [...(state.search?.tried ?? [])];
  if (state.placement?.retry && !excluded.includes(state.placement.server_id)) {
    excluded.push(state.placement.server_id);
    tried.push({ server_id: state.placement.server_id, reason: state.placement.reason });
  }
  const attempt = (state.search?.attempt ?? 0) + 1;
  await deps.tasks.update(state.task_id, { state: 'running' }, now);

  const { request } = state;
  // A resumed standing order run again from its start (npm start killed after its create_order) holds
  // the server the watch claimed for it only: the record's older intents are not this round's.
  const placedOn = state.search ? undefined : await serverPlacedOn(state, deps);
  const held = state.resume && placedOn !== state.resume.server_id ? undefined : placedOn;
  const listed = await deps.marketplace.listServers();
  // The server this task's order is on is rented by that order: it stays a candidate for its own task.
  const servers = held === undefined ? listed : listed.map((s) => (s.id === held ? { ...s, rented: false } : s));
  const criteria: MatchCriteria = {
    gpu_type: request.gpu_type,
    max_price: request.max_price,
    currency: request.currency,
    use_spot: request.use_spot,
    exclude: excluded,
    ...definedFields(request, ['min_reliability', 'min_rating', 'min_rating_count', 'exclude_servers']),
    // Hosts avoided relay-wide, and those this caller's own failed starts avoid for it alone (issue 38 §3).
    ...(deps.hosts ? { avoided: await deps.hosts.avoided(now, keyNameOf(state.origin.caller)) } : {}),
  };
  const matching = findMatchingServers(servers, criteria);
  // A leased order needs a server that may be rented that long (`mrl`, hours).
  const fitting = matching.filter((server) => serverFitsLease(server, request.max_hours));
  // Under a budget an order is reserved at its own USD price (on-demand: the on-demand one, never the
  // spot one): a server that states none is skipped, and the failure text says so (issue 29 §3).
  const budgeted = budgetApplies(deps.spendLimitUsdPerDay, state.origin.caller);
  const priced = budgeted ? fitting.filter((server) => orderUsdPerHour(server, request) !== undefined) : fitting;
  const skipped = fitting
    .filter((server) => !priced.includes(server))
    .map((server) => ({ server_id: server.id, reason: noUsdPriceReason(request.use_spot) }));
  // `prefer` (issue 31 §3) decides the order in which the matches are tried.
  const candidates = orderByPreference(priced, request.prefer, request);
  // A resumed standing order tries the server the watch claimed for it first.
  // A run again from its start goes back to the server it placed on, so PlaceOrder adopts that order.
  const preferred = state.resume?.server_id ?? held;
  if (preferred !== undefined) candidates.sort((a, b) => Number(b.id === preferred) - Number(a.id === preferred));
  for (const server of candidates) {
    // A claim is a conditional write: a server another running task holds is skipped, so
    // "first match" means the first match nobody else is about to rent.
    if (await deps.claims.claim(server.id, state.task_id, now, CLAIM_TTL_SECONDS)) {
      // A standing order admitted at acceptance (issue 29 §5) that finds its server at once leaves the
      // queue here: its pending entry and its slots under the caps are given back.
      if (standing && !state.resume && !state.search) await standing.remove(state.task_id, 0);
      // The bid is capped at max_price (issue 38 §8), and the reservation uses the same figure.
      const bid = request.use_spot ? spotBidFor(server, request.currency, request.max_price) : undefined;
      const usdPerHour = orderUsdPerHour(server, request);
      const allIn =
        usdPerHour !== undefined && deps.fees?.renter_fee_percent ? allInUsdPerHour(usdPerHour, deps.fees) : undefined;
      const perCoin = usdPerCoin(server, request.currency, SPEND_PERIOD_HOURS);
      const price = comparablePriceUsd(server, request.use_spot, request.currency);
      return {
        server: {
          id: server.id,
          gpu_array: [...server.gpu_array],
          price_usd: typeof server.price.usd_per_hour.spot === 'number' ? server.price.usd_per_hour.spot : null,
          ...(bid !== undefined ? { spot_bid: bid } : {}),
          ...(usdPerHour !== undefined ? { usd_per_hour: usdPerHour } : {}),
          ...(allIn !== undefined ? { all_in_usd_per_hour: allIn } : {}),
          ...(perCoin !== undefined && perCoin > 0 ? { usd_per_coin: perCoin } : {}),
        },
        attempt,
        excluded,
        ...(tried.length ? { tried } : {}),
        chosen: chosenText(request.prefer, candidates.length, typeof price === 'number' ? price : undefined, deps.fees),
      };
    }
  }
  if (preferred !== undefined && !candidates.some((c) => c.id === preferred))
    await deps.claims.release(preferred, state.task_id);
  // A standing order waits for the fleet watch to find it a server (issue 23), unless its host filters
  // rule out every server listed for its GPU at its price: it would wait for nothing (issue 38 §2).
  if (standing && !state.resume && !state.search) refuseRuledOut(state, servers);
  if (standing) return wait(state, { ...deps, waiting: standing }, now);
  // After refusals the failure names each server tried and why (issue 20, item 2).
  // The text names the filters that emptied the list (issue 31 §1), or the models listed now when
  // no server has that GPU at all (issue 28).
  const leftOut = leftOutBy(servers, criteria);
  const noMatch =
    leftOut.reliability + leftOut.rating + leftOut.excluded + leftOut.avoided > 0
      ? filteredNoMatchMessage(request.gpu_type, request.max_price, request, leftOut)
      : noMatchText(servers, request.gpu_type, request.max_price);
  throw new NoServerAvailableError(triedServersText(noMatch, [...tried, ...skipped]));
};

/** FindServer without the standing-order queue: a server, or NoServerAvailableError. */
export const findServer = async (
  state: WorkflowState,
  deps: Omit<FindServerDeps, 'waiting'>,
  now: number,
): Promise<SearchResult> => (await findServerOrWait(state, { ...deps, waiting: undefined }, now)) as SearchResult;
