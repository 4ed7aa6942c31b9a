/**
 * POST /slack/command: a Slack slash command (form-encoded, base64 through API Gateway). Not signed
 * with the webhook secret (spec); verified with Slack's signature when a signing secret is set, and
 * refused (403) without one unless ALLOW_UNSIGNED_SLACK is true (the local default; AWS opts in with
 * `-c allowUnsignedSlack=true`). Success is an `in_channel` message with the task id; usage and
 * unknown commands are `ephemeral`. Slack shows any non-200 answer as a generic failure, so every
 * outcome past the signature check is a 200 message. Rate limited per address like the webhook routes
 * (429 before anything else). With SLACK_ALLOWED_TEAM_IDS / SLACK_ALLOWED_USER_IDS set, a command from
 * another workspace or user gets an ephemeral refusal before it is even parsed, and nothing is queued.
 * A Slack user a caller key names acts as that key (scopes, own orders: issue 24); others act as the
 * default key only under SLACK_UNMAPPED_USERS=default (lambdas/domain/teams/slack-callers.ts).
 */
import type { RelayEnv } from '../../adapters/env';
import { onOutbidProblem } from '../../domain/recovery/on-outbid';
import { logger } from '../../adapters/observability';
import { HAND_OFF_FAILED_MESSAGE } from '../../domain/requests/accept-task';
import { HandOffError, WaitingQueueFullError } from '../../domain/errors';
import { normalizeCreateOrder } from '../../domain/requests/request-rules';
import { randomToken } from '../../adapters/random-token';
import { hostDefaults } from '../../adapters/host-defaults';
import { callbackUrlProblem } from '../../http/request-fields';
import { SlackCommandFormSchema } from '../../http/slack-requests';
import { parseSlackCommand, unknownCommandText, usageText } from '../../domain/requests/slack-command';
import { SLACK_COMMAND_SCOPES, slackCallerFor } from '../../domain/teams/slack-callers';
import { scopeRefusal, taskCallerOf } from '../../domain/teams/caller-keys';
import type { TaskOrigin, TaskRequest } from '../../domain/task';
import { jsonResponse, rawBodyOf, type ApiResult, type RelayEvent } from '../../middleware/http';
import { SLACK_WINDOW_SECONDS } from '../../middleware/slack-signature';
import type { AcceptDeps } from './accept-deps';
import { acceptRequest } from './accept-route';
import { apiHandler, type ApiHandler } from './chain';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from './idempotency-key';
import { acceptDepsFromEnv, jobQueueFromEnv, waitingTasksFromEnv, workflowStarterFromEnv } from './deps';
import { verifySlackSignature } from '../../middleware/slack-signature';

/** How long a trigger_id binds its task: Slack's signature replay window, not the 24 h of Idempotency-Key. */
export const SLACK_TRIGGER_ID_TTL_SECONDS = SLACK_WINDOW_SECONDS;

/** The refusal a command from a Slack workspace outside SLACK_ALLOWED_TEAM_IDS gets (ephemeral). */
export const SLACK_TEAM_REFUSED_MESSAGE = 'This relay does not accept commands from this Slack workspace.';
/** The refusal a user outside SLACK_ALLOWED_USER_IDS gets (ephemeral). */
export const SLACK_USER_REFUSED_MESSAGE =
  'You are not allowed to send commands to this relay; ask its operator to add your Slack user ID.';

/**
 * Which allowlist refuses a command, if any: the team list first (a missing `team_id` is outside any
 * list), then the user list. Unset lists allow everyone. The IDs are only as trustworthy as the Slack
 * signature check before this (ALLOW_UNSIGNED_SLACK=true lets anyone claim any team).
 */
export const slackAllowlistRefusal = (
  env: Pick<RelayEnv, 'SLACK_ALLOWED_TEAM_IDS' | 'SLACK_ALLOWED_USER_IDS'>,
  teamId: string | null,
  userId: string | null,
): string | undefined => {
  if (env.SLACK_ALLOWED_TEAM_IDS && !(teamId && env.SLACK_ALLOWED_TEAM_IDS.includes(teamId)))
    return SLACK_TEAM_REFUSED_MESSAGE;
  if (env.SLACK_ALLOWED_USER_IDS && !(userId && env.SLACK_ALLOWED_USER_IDS.includes(userId)))
    return SLACK_USER_REFUSED_MESSAGE;
  return undefined;
};

/** 7200 → `2h`, 5400 → `90m`, 45 → `45s`: the largest unit that divides the wait. */
const durationText = (seconds: number): string =>
  seconds % 3_600 === 0 ? `${seconds / 3_600}h` : seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;

const reply = (responseType: 'in_channel' | 'ephemeral', text: string): ApiResult =>
  jsonResponse(200, { response_type: responseType, text });

/** Slack treats `&`, `<` and `>` as markup; user words echoed in channel are escaped. */
const escapeSlack = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const postSlackCommand = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const params = new URLSearchParams(rawBodyOf(event).toString('utf8'));
  const refusal = slackAllowlistRefusal(deps.env, params.get('team_id'), params.get('user_id'));
  if (refusal) {
    // IDs only (no text, no response_url): enough to add a legitimate team or user to the list.
    logger.warn('Slack command refused: team or user not in the allowlist', {
      team_id: params.get('team_id')?.slice(0, 64),
      user_id: params.get('user_id')?.slice(0, 64),
    });
    return reply('ephemeral', refusal);
  }
  // Who the command acts as (issue 24): the caller key that names this Slack user, else the default
  // key when SLACK_UNMAPPED_USERS allows it. Refused before parsing, like the allowlists.
  const nowSeconds = Math.floor((deps.now ?? Date.now)() / 1000);
  const who = slackCallerFor(
    (await deps.callerKeyRecords?.()) ?? [],
    params.get('user_id'),
    deps.env.SLACK_UNMAPPED_USERS,
    nowSeconds,
  );
  if (!who.ok) {
    logger.warn('Slack command refused: user not mapped to a usable caller key', {
      user_id: params.get('user_id')?.slice(0, 64),
    });
    return reply('ephemeral', who.text);
  }
  const form = SlackCommandFormSchema.safeParse(Object.fromEntries(params));
  const command =
    form.success && form.data.command && /^\/[\w-]{1,50}$/.test(form.data.command) ? form.data.command : '/gpu';
  if (!form.success) return reply('ephemeral', usageText(command));

  const parsed = parseSlackCommand(form.data.text, command);
  let request: TaskRequest;
  let queuedText: (taskId: string) => string;
  switch (parsed.kind) {
    case 'usage':
      return reply('ephemeral', parsed.text);
    case 'unknown':
      return reply('ephemeral', unknownCommandText(parsed.word, command));
    case 'rent': {
      const input = normalizeCreateOrder(
        {
          gpu_type: parsed.gpu_type,
          max_price: parsed.max_price,
          wait_seconds: parsed.wait_seconds,
          on_outbid: parsed.on_outbid,
          min_reliability: parsed.min_reliability,
          min_rating: parsed.min_rating,
        },
        {
          image: deps.env.DEFAULT_IMAGE,
          currency: deps.env.DEFAULT_CURRENCY,
          ports: deps.env.DEFAULT_PORTS,
          maxHours: deps.env.DEFAULT_MAX_HOURS,
          ...hostDefaults(deps.env),
          // No notebook without a token (issue 37 §1): Slack cannot give one, so the relay draws it.
          generatedJupyterToken: randomToken(),
        },
      );
      // The body schema's cross-field rule, for the same words typed in Slack (rebid needs a price).
      const outbidProblem = onOutbidProblem(input);
      if (outbidProblem) return reply('ephemeral', outbidProblem);
      request = { kind: 'create-order', input };
      const details = [
        ...(parsed.max_price !== undefined ? [`max $${parsed.max_price}/hr`] : []),
        ...(parsed.min_reliability !== undefined ? [`reliability >= ${parsed.min_reliability}`] : []),
        ...(parsed.min_rating !== undefined ? [`rating >= ${parsed.min_rating}`] : []),
        ...(parsed.wait_seconds !== undefined ? [`waiting up to ${durationText(parsed.wait_seconds)}`] : []),
        ...(parsed.on_outbid !== undefined ? [`if outbid: ${parsed.on_outbid.replace(/_/g, ' ')}`] : []),
      ];
      const limit = details.length ? ` (${details.join(', ')})` : '';
      queuedText = (id) => `Renting ${escapeSlack(parsed.gpu_type)}${limit}: queued. Task ID: ${id}`;
      break;
    }
    case 'cancel':
      request = { kind: 'cancel-order', input: { order_id: parsed.order_id } };
      queuedText = (id) => `Cancelling order ${parsed.order_id}: queued. Task ID: ${id}`;
      break;
    case 'status':
      request = { kind: 'status', input: {} };
      queuedText = (id) => `Status check queued. Task ID: ${id}`;
      break;
    case 'extend':
      request = { kind: 'extend-order', input: { order_id: parsed.order_id, hours: parsed.hours } };
      queuedText = (id) => `Extending order ${parsed.order_id} by ${parsed.hours} h: queued. Task ID: ${id}`;
      break;
    case 'bid':
      request = { kind: 'set-spot-price', input: { order_id: parsed.order_id, desired_price: parsed.desired_price } };
      queuedText = (id) =>
        `Setting the spot price of order ${parsed.order_id} to ${parsed.desired_price}: queued. Task ID: ${id}`;
      break;
  }

  const missingScope = scopeRefusal(who.caller, SLACK_COMMAND_SCOPES[parsed.kind]);
  if (missingScope) return reply('ephemeral', missingScope);
  const caller = taskCallerOf(who.caller);

  // The result is posted to response_url later, so it gets the same SSRF policy as callback_url.
  const responseUrl = form.data.response_url;
  const refused = responseUrl ? callbackUrlProblem(responseUrl, deps.env.ALLOW_PRIVATE_CALLBACKS) : undefined;
  if (refused) logger.warn('ignoring Slack response_url', { reason: refused });
  const origin: TaskOrigin = {
    source: 'slack',
    ...(caller ? { caller } : {}),
    ...(responseUrl && !refused ? { responseUrl } : {}),
  };

  // Slack never retries a slash command, and each invocation gets a fresh trigger_id. The key only
  // guards the signature's own replay window: a captured signed command resent within 5 minutes
  // queues once, and a client that reuses a trigger_id later is not silently dropped.
  const triggerId = params.get('trigger_id') ?? undefined;
  const idempotencyKey =
    triggerId && triggerId.length <= MAX_IDEMPOTENCY_KEY_LENGTH && /^[\x21-\x7e]+$/.test(triggerId)
      ? `slack:${triggerId}`
      : undefined;

  try {
    const { taskId } = await acceptRequest(deps, request, origin, idempotencyKey, {
      idempotencyTtlSeconds: SLACK_TRIGGER_ID_TTL_SECONDS,
    });
    return reply('in_channel', queuedText(taskId));
  } catch (error) {
    if (error instanceof HandOffError) {
      logger.error('hand-off failed; nothing was queued', { error });
      return reply('ephemeral', HAND_OFF_FAILED_MESSAGE);
    }
    // Over a cap of the waiting queue (issue 29 §5): the cap's text, nothing queued.
    if (error instanceof WaitingQueueFullError) return reply('ephemeral', error.message);
    throw error;
  }
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createSlackCommandHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'SlackCommand', deps, slackSignature: verifySlackSignature }, postSlackCommand);

export const handler = createSlackCommandHandler(
  acceptDepsFromEnv({
    workflow: workflowStarterFromEnv,
    queue: jobQueueFromEnv,
    waiting: waitingTasksFromEnv,
    slack: true,
  }),
);
