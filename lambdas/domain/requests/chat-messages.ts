/** Chat texts (Slack `text`, Discord `content`) for the events of order-relay.md §6. Pure. */
import type { CreateOrderSuccess } from '../task';

/** Discord rejects `content` longer than this. */
export const DISCORD_CONTENT_LIMIT = 2000;

const usd = (price: number | null | undefined): string =>
  typeof price === 'number' ? `$${price}/hr` : 'an unstated price';

/** An order is ready: order id, GPUs and the ssh command. */
export const orderReadyText = (result: Pick<CreateOrderSuccess, 'order_id' | 'gpu' | 'ssh_connection'>): string =>
  `Order ${result.order_id} is ready: ${result.gpu.join(', ') || 'no GPU listed'}. Connect with: ${result.ssh_connection}`;

/** A host the relay now avoids (issue 31 §2): the event's fields, as in the log event `host.avoided`. */
export interface HostAvoided {
  readonly server_id: number;
  readonly reason: string;
  /** Epoch seconds. */
  readonly until: number;
  /** Avoided for this caller key alone (its own failed starts, issue 38 §3); absent: relay-wide. */
  readonly key?: string;
}

/** The chat line of a host the relay now avoids: `host.avoided {"server_id":…,"reason":…,"until":…}` (and `"key":…` for one key alone). */
export const hostAvoidedText = (avoided: HostAvoided): string =>
  `host.avoided ${JSON.stringify({
    server_id: avoided.server_id,
    reason: avoided.reason,
    until: avoided.until,
    ...(avoided.key !== undefined ? { key: avoided.key } : {}),
  })}`;

/** An order was cancelled. */
export const orderCancelledText = (orderId: number): string => `Order ${orderId} cancelled`;

/** A price alert found a server at or under its target and queued a create-order task. */
export const priceAlertMatchedText = (
  gpu: string,
  priceUsd: number | null | undefined,
  targetPrice: number,
  createTaskId?: string,
): string =>
  `Price alert: ${gpu} available at ${usd(priceUsd)} (target $${targetPrice}/hr).` +
  (createTaskId ? ` Creating an order, task ${createTaskId}` : '');

/** `text` cut to Discord's 2000-character limit, marked with an ellipsis, never splitting a surrogate pair. */
export const discordContent = (text: string): string => {
  if (text.length <= DISCORD_CONTENT_LIMIT) return text;
  let end = DISCORD_CONTENT_LIMIT - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1; // a high surrogate would be left without its pair
  return `${text.slice(0, end)}…`;
};
