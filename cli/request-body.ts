/**
 * The JSON body of each task-starting command (create-order, cancel-order, extend-order,
 * set-spot-price, cancel-task, price-alert, status), built from its flags and checked before anything is sent
 * (create-order's access fields: cli/access-flags.ts; its prompted password is added by the caller).
 */
import { isOnOutbid, ON_OUTBID_VALUES, parseWaitDuration, WAIT_DURATION_RULE } from '../contract/wait-and-outbid';
import { addAccessFields } from './access-flags';
import type { Values } from './args';
import { parseHours, parseOrderId, parsePositiveNumber, parseUrl } from './args';
import { usageError } from './commands';
import { CliError } from './output';

export type RequestBody = Record<string, unknown>;

/** Task ids are UUIDs (the relay checks the same). */
const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const noPositionals = (command: string, positionals: readonly string[]): void => {
  if (positionals.length) throw usageError(command, `unexpected argument '${positionals[0]}'`);
};

/** --wait-for DURATION → wait_seconds (a standing order, issue 23), checked before anything is sent. */
const waitFor = (command: string, values: Values, body: RequestBody): void => {
  const raw = values['wait-for'];
  if (raw === undefined) return;
  const seconds = parseWaitDuration(raw);
  if (seconds === undefined) throw usageError(command, `--wait-for takes ${WAIT_DURATION_RULE}, got '${raw}'`);
  body.wait_seconds = seconds;
};

/** --on-outbid POLICY → on_outbid (issue 23). */
const onOutbid = (command: string, values: Values, body: RequestBody): void => {
  const raw = values['on-outbid'];
  if (raw === undefined) return;
  const policy = raw.trim().toLowerCase();
  if (!isOnOutbid(policy))
    throw usageError(command, `--on-outbid must be one of ${ON_OUTBID_VALUES.join(', ')}, got '${raw}'`);
  body.on_outbid = policy;
};

/** A number in [min, max] for --FLAG, checked before anything is sent (the relay refuses it too). */
const boundedNumber = (command: string, flag: string, raw: string, min: number, max: number): number => {
  const n = /^\s*(\d+(\.\d+)?|\.\d+)\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= min && n <= max))
    throw usageError(command, `--${flag} takes a number between ${min} and ${max}, got '${raw}'`);
  return n;
};

/** The host filters (issue 31 §1): --min-reliability, --min-rating, --min-rating-count, --exclude-server. */
const hostFilters = (command: string, values: Values, body: RequestBody): void => {
  if (values['min-reliability'] !== undefined)
    body.min_reliability = boundedNumber(command, 'min-reliability', values['min-reliability'], 0, 1);
  if (values['min-rating'] !== undefined)
    body.min_rating = boundedNumber(command, 'min-rating', values['min-rating'], 0, 5);
  if (values['min-rating-count'] !== undefined) {
    const raw = values['min-rating-count'];
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1)
      throw usageError(command, `--min-rating-count takes a whole number of at least 1, got '${raw}'`);
    body.min_rating_count = Number(raw);
  }
  const excluded = values['exclude-server'];
  if (excluded !== undefined && excluded.length > 0) {
    const ids = excluded.flatMap((raw) => raw.split(',')).map((raw) => raw.trim());
    const bad = ids.find((id) => !/^\d+$/.test(id) || !Number.isSafeInteger(Number(id)) || Number(id) < 1);
    if (bad !== undefined) throw usageError(command, `--exclude-server takes a server id, got '${bad}'`);
    if (ids.length > 100) throw usageError(command, '--exclude-server: at most 100 servers');
    body.exclude_servers = ids.map(Number);
  }
};

const PREFER_VALUES = ['first', 'cheapest', 'reliable'];

const createOrderBody = (command: string, values: Values, positionals: readonly string[], body: RequestBody): void => {
  noPositionals(command, positionals);
  if (!values.gpu?.trim()) throw usageError(command, '--gpu is required (e.g. --gpu "RTX 4090")');
  body.gpu_type = values.gpu;
  if (values['max-price'] !== undefined)
    body.max_price = parsePositiveNumber(command, 'max-price', values['max-price']);
  if (values['max-hours'] !== undefined) body.max_hours = parseHours(command, 'max-hours', values['max-hours']);
  if (values.image !== undefined) body.image = values.image;
  if (values['on-demand']) body.use_spot = false;
  for (const pair of values.env ?? []) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(pair);
    if (!match) throw usageError(command, `--env takes NAME=VALUE, got '${pair}'`);
    // The relay refuses it too (400): the production marketplace fails any order whose env holds `&`.
    if (match[2].includes('&')) throw usageError(command, `env values must not contain "&" (--env ${match[1]})`);
    ((body.env ??= {}) as Record<string, string>)[match[1]] = match[2];
  }
  waitFor(command, values, body);
  onOutbid(command, values, body);
  hostFilters(command, values, body);
  if (values.prefer !== undefined) {
    const prefer = values.prefer.trim().toLowerCase();
    if (!PREFER_VALUES.includes(prefer))
      throw usageError(command, `--prefer must be one of ${PREFER_VALUES.join(', ')}, got '${values.prefer}'`);
    body.prefer = prefer;
  }
  addAccessFields(command, values, body);
};

/** Builds the request body of a task-starting command from its flags. */
export const buildBody = (command: string, values: Values, positionals: readonly string[]): RequestBody => {
  const body: RequestBody = {};
  switch (command) {
    case 'create-order':
      createOrderBody(command, values, positionals, body);
      break;
    case 'cancel-order':
      body.order_id = parseOrderId(command, positionals);
      break;
    case 'extend-order':
      body.order_id = parseOrderId(command, positionals);
      if (values.hours === undefined) throw usageError(command, '--hours is required');
      body.hours = parseHours(command, 'hours', values.hours);
      break;
    case 'set-spot-price':
      body.order_id = parseOrderId(command, positionals);
      if (values.price === undefined)
        throw usageError(
          command,
          "--price is required (the new bid in the order's currency per day, the marketplace's unit; not USD per hour)",
        );
      body.desired_price = parsePositiveNumber(command, 'price', values.price);
      break;
    case 'price-alert':
      noPositionals(command, positionals);
      if (!values.gpu?.trim()) throw usageError(command, '--gpu is required');
      if (values.target === undefined) throw usageError(command, '--target is required (USD per hour)');
      body.gpu_type = values.gpu;
      body.target_price = parsePositiveNumber(command, 'target', values.target);
      if (values.image !== undefined) body.image = values.image;
      waitFor(command, values, body);
      hostFilters(command, values, body);
      break;
    case 'status':
      noPositionals(command, positionals);
      break;
    case 'cancel-task':
      if (positionals.length !== 1) throw usageError(command, 'expected exactly one TASK_ID');
      if (!TASK_ID.test(positionals[0]))
        throw usageError(command, `TASK_ID is the task id a create-order answered (a UUID), got '${positionals[0]}'`);
      body.task_id = positionals[0];
      break;
    default:
      throw new CliError(`no body for ${command}`);
  }
  if (values.callback !== undefined) body.callback_url = parseUrl(command, '--callback', values.callback).toString();
  return body;
};
