/**
 * Orders nobody kept (issue 20, item 5). Whatever happens to a create-order task (all retries used, a
 * step timed out, the answer that would have named the order lost), an order the relay placed and no
 * task keeps is cancelled by the fleet watch within one sweep of showing in my_orders, and reported:
 * chat text and the `order.orphan_cancelled` event to the placing task's callback_url.
 *
 * "Placed by the relay" is proved by a placement intent (PlacementIntents): PlaceOrder opens one just
 * before create_order and closes it once it knows the outcome. The watch looks only at intents whose
 * task has stopped looking (visibility window plus a grace period), and only at active orders on the
 * intent's server created around the intent: orders the relay did not place are never touched.
 * "Nobody kept it" is decided by a conditional claim on the order (claimOrder): a task that keeps an
 * order claims it under its own name, the watch under `orphan`, and only one of them wins.
 */
import { RECONCILE_SLACK_SECONDS } from '../create-order/workflow-state';
import type { EventSender, LeaseStore } from './lease-ports';
import type { OutboundEvent } from './lease';
import type { Order } from '../marketplace-types';
import type { MarketplaceClient, Notifier, PlacementIntent, PlacementIntents, TaskRepository } from '../ports';

/** The owner name the fleet watch claims an orphan under. */
export const ORPHAN_OWNER = 'orphan';
/** Past the visibility window, the task has had this long to keep its order before the watch acts. */
export const ORPHAN_GRACE_SECONDS = 30;
/** An open intent is watched this long; an order that has not shown by then was never placed. */
export const INTENT_WATCH_SECONDS = 3_600;
/** A create_order lands at most this long after its intent: the call's timeout and clock slack, with room. */
export const LANDING_SECONDS = 60;

export interface OrphanDeps {
  readonly intents: PlacementIntents;
  readonly tasks: Pick<TaskRepository, 'get'>;
  readonly marketplace: Pick<MarketplaceClient, 'cancelOrder'>;
  readonly notifier: Pick<Notifier, 'chat'>;
  readonly events: EventSender;
  readonly leases: Pick<LeaseStore, 'claimEvent'>;
}

export interface OrphanSweep {
  readonly cancelled: number;
  readonly failedCancels: number;
  readonly cancelFailures: readonly { readonly order_id: number; readonly reason: string }[];
  readonly eventsSent: number;
  readonly eventsFailed: number;
  readonly marketplaceCalls: number;
  /** Intents left for the next sweep because `canContinue` said stop. */
  readonly deferred: number;
}

export const orphanCancelledText = (orderId: number, taskId: string): string =>
  `Order ${orderId} cancelled: placed for task ${taskId}, which did not keep it`;

export const orphanCancelledEvent = (orderId: number, taskId: string, now: number): OutboundEvent => ({
  id: `orphan_cancelled:${orderId}`,
  body: { event: 'order.orphan_cancelled', order_id: orderId, task_id: taskId, occurred_at: now },
});

/**
 * Intents whose task has stopped looking for its order (times: `now` in s, `at` in ms): the window
 * plus a grace of the window again, at most ORPHAN_GRACE_SECONDS. The grace only spares the claim
 * race (claimOrder settles it either way) a task's last read.
 */
export const settleableIntents = (
  intents: readonly PlacementIntent[],
  now: number,
  visibleTimeoutSeconds: number,
): PlacementIntent[] =>
  intents.filter(
    (i) => now * 1000 >= i.at + (visibleTimeoutSeconds + Math.min(visibleTimeoutSeconds, ORPHAN_GRACE_SECONDS)) * 1000,
  );

/** Active orders on the intent's server created around it that the watch does not already follow. */
export const candidatesOf = (
  intent: PlacementIntent,
  orders: readonly Order[],
  watched: ReadonlySet<number>,
): Order[] => {
  const from = Math.floor(intent.at / 1000) - RECONCILE_SLACK_SECONDS;
  const to = Math.ceil(intent.at / 1000) + LANDING_SECONDS;
  return orders.filter(
    (o) =>
      o.renting_server === intent.server_id &&
      o.status !== 'expired' &&
      o.created >= from &&
      o.created <= to &&
      !watched.has(o.order_id),
  );
};

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Settles the given intents against one my_orders answer (`orders`, active orders): each candidate
 * order nobody kept is claimed, cancelled and reported once; an intent is closed once its order is
 * settled (cancelled here, or kept by a task) or it is INTENT_WATCH_SECONDS old. A failed cancel keeps
 * the claim and the intent: the next sweep tries again (the claim is the watch's own, so it wins again).
 */
export const settleIntents = async (
  deps: OrphanDeps,
  intents: readonly PlacementIntent[],
  orders: readonly Order[],
  watched: ReadonlySet<number>,
  options: { readonly now: number; readonly canContinue: () => boolean },
): Promise<OrphanSweep> => {
  const { now } = options;
  const r = {
    cancelled: 0,
    failedCancels: 0,
    cancelFailures: [] as { order_id: number; reason: string }[],
    eventsSent: 0,
    eventsFailed: 0,
    marketplaceCalls: 0,
    deferred: 0,
  };
  for (const [index, intent] of intents.entries()) {
    if (!options.canContinue()) {
      r.deferred += intents.length - index;
      break;
    }
    let settled = false;
    let failed = false;
    for (const order of candidatesOf(intent, orders, watched)) {
      if (!(await deps.intents.claimOrder(order.order_id, ORPHAN_OWNER, now * 1000))) {
        settled = true; // a task keeps it
        continue;
      }
      r.marketplaceCalls += 1;
      try {
        await deps.marketplace.cancelOrder(order.order_id);
      } catch (error) {
        failed = true;
        r.failedCancels += 1;
        r.cancelFailures.push({ order_id: order.order_id, reason: reasonOf(error) });
        continue;
      }
      settled = true;
      r.cancelled += 1;
      const event = orphanCancelledEvent(order.order_id, intent.task_id, now);
      // Reported once, even when overlapping sweeps both get here (the event claim decides).
      if (!(await deps.leases.claimEvent(event.id, now))) continue;
      await deps.notifier.chat(orphanCancelledText(order.order_id, intent.task_id));
      const url = (await deps.tasks.get(intent.task_id))?.request.callback_url;
      if (typeof url === 'string' && url.length > 0) {
        if (await deps.events.send(url, event.id, event.body)) r.eventsSent += 1;
        else r.eventsFailed += 1;
      }
    }
    const expired = now * 1000 >= intent.at + INTENT_WATCH_SECONDS * 1000;
    if ((settled && !failed) || expired) await deps.intents.close(intent);
  }
  return r;
};
