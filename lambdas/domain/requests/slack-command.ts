/** Parsing of the Slack slash-command text (order-relay.md §4.2). Pure. */
import { isOnOutbid, parseWaitDuration, WAIT_DURATION_RULE } from '../../../contract/wait-and-outbid';
import type { OnOutbid } from '../../../contract/wait-and-outbid';
import { isLeaseHours, MAX_DESIRED_PRICE, MIN_DESIRED_PRICE } from '../leases/lease';
import { boundText, isUsdPerHourInRange, MIN_FILTER, usdPerHourRangeText } from './number-bounds';

/** A bid in the marketplace's unit within the range the webhook accepts (lease.ts DESIRED_PRICE_RANGE_ERROR). */
const isDesiredPrice = (price: number | undefined): price is number =>
  price !== undefined && price >= MIN_DESIRED_PRICE && price <= MAX_DESIRED_PRICE;

export type SlackCommand =
  | {
      readonly kind: 'rent';
      readonly gpu_type: string;
      readonly max_price?: number;
      /** Standing order: `wait=2h` → 7200 (issue 23). */
      readonly wait_seconds?: number;
      /** `notify`, `rebid`, `replace` or `rebid_then_replace` (issue 23). */
      readonly on_outbid?: OnOutbid;
      /** Host filters (issue 31 §1): `rel=0.99` → min_reliability, `rating=4.5` → min_rating. */
      readonly min_reliability?: number;
      readonly min_rating?: number;
    }
  | { readonly kind: 'cancel'; readonly order_id: number }
  | { readonly kind: 'status' }
  | { readonly kind: 'extend'; readonly order_id: number; readonly hours: number }
  | { readonly kind: 'bid'; readonly order_id: number; readonly desired_price: number }
  | { readonly kind: 'usage'; readonly text: string }
  | { readonly kind: 'unknown'; readonly word: string };

/** The usage text, with the command name Slack sent (e.g. `/gpu`) when known. */
export const usageText = (command = '/gpu'): string =>
  [
    'Usage:',
    `• \`${command} rent <gpu_type> [max_price]\` rent the first available server with that GPU (max_price in USD/hour), e.g. \`${command} rent RTX_4090 0.5\` (write \`_\` for a space)`,
    `    add \`rel=<0-1>\` and \`rating=<0-5>\` to leave out servers below that reliability or rating, e.g. \`${command} rent RTX_4090 0.5 rel=0.99 rating=4.5\``,
    `    add \`wait=<n>s|m|h\` to keep waiting for a match up to that long (at most 24h), and \`rebid\`, \`replace\` or \`rebid_then_replace\` to recover a spot order someone outbids (default \`notify\`), e.g. \`${command} rent RTX_4090 0.5 wait=2h rebid\``,
    `• \`${command} cancel <order_id>\` cancel an order`,
    `• \`${command} status\` list your orders`,
    `• \`${command} extend <order_id> <hours>\` extend an order's lease by hours (up to 720; the relay cancels it when the lease ends)`,
    `• \`${command} bid <order_id> <price>\` set a spot order's price (in the order currency per day, the marketplace's unit; not USD/hour)`,
  ].join('\n');

/** Same cap as the webhook's gpu_type. */
const MAX_GPU_TYPE_LENGTH = 100;

const RENT_USAGE = (command: string) =>
  `Usage: \`${command} rent <gpu_type> [max_price] [wait=<n>s|m|h] [notify|rebid|replace|rebid_then_replace] [rel=<0-1>] [rating=<0-5>]\`, e.g. \`${command} rent RTX_4090 0.5\`, \`${command} rent A100\`, \`${command} rent RTX_4090 0.5 rel=0.99 rating=4.5\` or \`${command} rent RTX_4090 0.5 wait=2h rebid\`` +
  ' (write `_` for a space in the GPU name; max_price is a number, USD/hour, right after the GPU; rel= and rating= leave out servers below that reliability (0-1) or average rating (0-5); wait= keeps the request waiting for a match' +
  ' up to that long, at most 24h; the last word says what to do when someone outbids the spot order, notify by default)';

const CANCEL_USAGE = (command: string) => `Usage: \`${command} cancel <order_id>\` (order_id is a positive integer)`;

const EXTEND_USAGE = (command: string) =>
  `Usage: \`${command} extend <order_id> <hours>\`, e.g. \`${command} extend 123456 2\` (hours at least 0.001, at most 720, fractions allowed)`;

const BID_USAGE = (command: string) =>
  `Usage: \`${command} bid <order_id> <price>\`, e.g. \`${command} bid 123456 1540\` (the new spot price in the order currency per day, the marketplace's unit, between 0.00000001 and 10000000)`;

/** A positive decimal number as typed: `2`, `0.5`, `.5`. */
const parsePositive = (word: string): number | undefined => {
  if (!/^(\d+(\.\d+)?|\.\d+)$/.test(word)) return undefined;
  const n = Number(word);
  return Number.isFinite(n) && n > 0 ? n : undefined;
};

/**
 * The GPU argument as the marketplace names GPUs: one Slack word cannot hold a space, so `_` stands
 * for one (`RTX_4090` searches "RTX 4090", a substring of "NVIDIA GeForce RTX 4090").
 */
const gpuTypeOf = (word: string): string => word.replace(/_+/g, ' ').trim();

/** A USD/hour price as people type it: `0.5`, `.5`, `2`, optionally with a leading `$`. */
const parsePrice = (word: string): number | undefined => {
  const bare = word.startsWith('$') ? word.slice(1) : word;
  if (!/^(\d+(\.\d+)?|\.\d+)$/.test(bare)) return undefined;
  const n = Number(bare);
  return Number.isFinite(n) && n > 0 ? n : undefined;
};

const parseOrderId = (word: string): number | undefined => {
  if (!/^\d+$/.test(word)) return undefined;
  const n = Number(word);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
};

/** Slack treats `&`, `<` and `>` as markup and backticks end a code span: an echoed word is escaped. */
const echo = (word: string): string =>
  word.slice(0, 50).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/`/g, "'");

/**
 * `rent <gpu> [max_price] [wait=<n>s|m|h] [notify|rebid|replace|rebid_then_replace]`: the price, if
 * any, comes right after the GPU; the two options follow in any order, each at most once.
 */
const parseRent = (args: readonly string[], command: string): SlackCommand => {
  const usage: SlackCommand = { kind: 'usage', text: RENT_USAGE(command) };
  if (args.length < 1 || args.length > 6) return usage;
  const [gpuWord, ...rest] = args;
  const gpuType = gpuTypeOf(gpuWord);
  if (gpuType.length === 0 || gpuType.length > MAX_GPU_TYPE_LENGTH) return usage;
  let maxPrice: number | undefined;
  let waitSeconds: number | undefined;
  let onOutbid: OnOutbid | undefined;
  let minReliability: number | undefined;
  let minRating: number | undefined;
  for (const [i, word] of rest.entries()) {
    const lower = word.toLowerCase();
    if (lower.startsWith('rel=') || lower.startsWith('rating=')) {
      const [name, value] = lower.split('=', 2) as [string, string];
      const max = name === 'rel' ? 1 : 5;
      const n = /^(\d+(\.\d+)?|\.\d+)$/.test(value) ? Number(value) : Number.NaN;
      // A filter that is not 0 is at least MIN_FILTER (issue 38 §6: 1e-200 is no filter the queue can store).
      if (!(n >= 0 && n <= max) || (n > 0 && n < MIN_FILTER))
        return {
          kind: 'usage',
          text: `\`${echo(word)}\`: ${name}= takes 0 or a number from ${boundText(MIN_FILTER)} to ${max}.\n${RENT_USAGE(command)}`,
        };
      if (name === 'rel') {
        if (minReliability !== undefined) return usage;
        minReliability = n;
      } else {
        if (minRating !== undefined) return usage;
        minRating = n;
      }
    } else if (lower.startsWith('wait=')) {
      const seconds = parseWaitDuration(word.slice('wait='.length));
      if (seconds === undefined)
        return { kind: 'usage', text: `\`${echo(word)}\`: wait= takes ${WAIT_DURATION_RULE}.\n${RENT_USAGE(command)}` };
      if (waitSeconds !== undefined) return usage;
      waitSeconds = seconds;
    } else if (isOnOutbid(lower)) {
      if (onOutbid !== undefined) return usage;
      onOutbid = lower;
    } else if (i === 0) {
      maxPrice = parsePrice(word);
      if (maxPrice === undefined) return usage;
      if (!isUsdPerHourInRange(maxPrice))
        return {
          kind: 'usage',
          text: `\`${echo(word)}\`: ${usdPerHourRangeText('max_price')}.\n${RENT_USAGE(command)}`,
        };
    } else {
      return usage;
    }
  }
  return {
    kind: 'rent',
    gpu_type: gpuType,
    ...(maxPrice !== undefined ? { max_price: maxPrice } : {}),
    ...(waitSeconds !== undefined ? { wait_seconds: waitSeconds } : {}),
    ...(onOutbid !== undefined ? { on_outbid: onOutbid } : {}),
    ...(minReliability !== undefined ? { min_reliability: minReliability } : {}),
    ...(minRating !== undefined ? { min_rating: minRating } : {}),
  };
};

/**
 * Splits `text` on whitespace; the first word (case-insensitive) is the subcommand. Empty text and
 * missing or invalid arguments give `usage`; an unknown subcommand gives `unknown` with the word.
 * `rent` and `cancel` take no extra words (a second GPU word would otherwise be read as a price;
 * `rent` takes only wait= and an outbid word after its price);
 * in the `rent` GPU argument `_` stands for a space; `status` ignores trailing words.
 */
export const parseSlackCommand = (text: string | undefined, command = '/gpu'): SlackCommand => {
  const words = (text ?? '').trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return { kind: 'usage', text: usageText(command) };
  const [first, ...args] = words;
  switch (first.toLowerCase()) {
    case 'rent':
      return parseRent(args, command);
    case 'cancel': {
      const orderId = args.length === 1 ? parseOrderId(args[0]) : undefined;
      return orderId === undefined
        ? { kind: 'usage', text: CANCEL_USAGE(command) }
        : { kind: 'cancel', order_id: orderId };
    }
    case 'status':
      return { kind: 'status' };
    case 'extend': {
      const orderId = args.length === 2 ? parseOrderId(args[0]) : undefined;
      const hours = args.length === 2 ? parsePositive(args[1]) : undefined;
      return orderId === undefined || !isLeaseHours(hours)
        ? { kind: 'usage', text: EXTEND_USAGE(command) }
        : { kind: 'extend', order_id: orderId, hours };
    }
    case 'bid': {
      const orderId = args.length === 2 ? parseOrderId(args[0]) : undefined;
      const price = args.length === 2 ? parsePrice(args[1]) : undefined;
      return orderId === undefined || !isDesiredPrice(price)
        ? { kind: 'usage', text: BID_USAGE(command) }
        : { kind: 'bid', order_id: orderId, desired_price: price };
    }
    default:
      return { kind: 'unknown', word: first };
  }
};

/** The ephemeral answer to an unknown subcommand: names the word, then the usage. */
export const unknownCommandText = (word: string, command = '/gpu'): string =>
  `Unknown command \`${echo(word)}\`.\n${usageText(command)}`;
