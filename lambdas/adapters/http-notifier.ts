/**
 * Outbound deliveries over HTTP: result callbacks and lifecycle events signed per Standard Webhooks
 * (with retries), Slack `{text}` and Discord `{content}` chat messages, and Slack response_url replies. Failures are logged and counted, never
 * thrown: a delivery problem must not fail the task it reports on. Chat URLs are secrets and
 * callback URLs may carry tokens, so logs name only the callback host and the chat channel.
 */
import { createHash } from 'node:crypto';
import { discordContent } from '../domain/requests/chat-messages';
import { DeliveryTimeoutError } from '../domain/errors';
import { NOT_HTTP_URL_REASON, refusedUrlReason } from '../domain/address-policy';
import type { EventSender } from '../domain/leases/lease-ports';
import type { OrderEvent } from '../domain/leases/lease';
import type { Notifier } from '../domain/ports';
import { Webhook } from 'standardwebhooks';
import type { TaskResult } from '../domain/task';
import { countMetric, logger, MetricName } from './observability';
import { httpPost, type PostResponse, type Transport } from './http-post';
import { isBlockedDestination } from './ssrf-guard';
import { NOTIFIER_DEFAULTS } from './notifier-limits';

export { callbackWorstCaseMs, chatWorstCaseMs, NOTIFIER_DEFAULTS } from './notifier-limits';

export interface HttpNotifierOptions {
  /**
   * The callback signing secrets (`whsec_…`), current first: every delivery carries one Standard
   * Webhooks signature per secret (so a rotation does not break receivers). Never the webhook secret,
   * which signs requests: a delivery must never verify as a request.
   */
  readonly signingSecrets: () => Promise<string[]>;
  readonly chat: () => Promise<{ slack?: string; discord?: string }>;
  /** Skip the SSRF guard (local runtime and tests, whose receivers are on loopback). */
  readonly allowPrivate: boolean;
  /**
   * The POST itself; it receives `allowPrivate` and must apply the SSRF guard at connect time.
   * Tests wrap httpPost to inject a DNS resolver. @default httpPost (node:http/https)
   */
  readonly transport?: Transport;
  /** @default a real timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default Date.now */
  readonly now?: () => number;
  /** Per attempt. @default 10000 (order-relay.md §8) */
  readonly callbackTimeoutMs?: number;
  /** Per request. @default 5000 (order-relay.md §8) */
  readonly chatTimeoutMs?: number;
  /** @default 3 */
  readonly callbackAttempts?: number;
  /** First backoff delay, doubled after each attempt. @default 1000 */
  readonly callbackBackoffMs?: number;
  /** Longest Discord retry_after we wait for once. @default 5000 */
  readonly discordMaxWaitMs?: number;
  /**
   * Milliseconds left in the invocation (adapters/invocation-budget.ts). Every POST's timeout is cut
   * to what is left minus `reserveMs` (a callback also leaves one chat post's time, for the
   * announcement that may follow it), and retries and Discord waits that would not fit are skipped,
   * so a hanging receiver never outlives the function. @default () => Infinity
   */
  readonly remainingMs?: () => number;
  /** Kept back for the caller's work after the deliveries (claim release, logs). @default 2000 */
  readonly reserveMs?: number;
}

type Outcome =
  { ok: true; status: number } | { ok: false; retry: boolean; status?: number; reason: string; retryAfterMs?: number };

/** The Standard Webhooks headers of a delivery. */
export const DELIVERY_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/**
 * The Standard Webhooks headers of one delivery attempt: `webhook-signature` holds a `v1,<base64>`
 * signature of `<id>.<timestamp>.<body>` per secret, space-separated (standardwebhooks' Webhook.sign).
 */
export const signDelivery = (
  secrets: readonly string[],
  deliveryId: string,
  nowMs: number,
  body: string,
): Record<string, string> => {
  const at = new Date(Math.floor(nowMs / 1000) * 1000);
  return {
    [DELIVERY_HEADERS.id]: deliveryId,
    [DELIVERY_HEADERS.timestamp]: String(Math.floor(nowMs / 1000)),
    [DELIVERY_HEADERS.signature]: secrets.map((secret) => new Webhook(secret).sign(deliveryId, at, body)).join(' '),
  };
};

/** Stable per task, so a receiver can drop a retried delivery it already processed. */
export const callbackDeliveryId = (taskId: string): string =>
  `cb_${createHash('sha256').update(`callback:${taskId}`).digest('hex').slice(0, 32)}`;

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid-url';
  }
};

/** Seconds from a Discord 429: `retry_after` in the JSON body, else the Retry-After header. */
const discordRetryAfterMs = (res: PostResponse): number | undefined => {
  try {
    const body = JSON.parse(res.text()) as { retry_after?: unknown } | null;
    if (typeof body?.retry_after === 'number' && body.retry_after >= 0) return Math.ceil(body.retry_after * 1000);
  } catch {
    // not JSON: fall back to the header
  }
  const raw = res.headers['retry-after'];
  const header = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  return Number.isFinite(header) && header >= 0 ? Math.ceil(header * 1000) : undefined;
};

/** The Notifier and EventSender ports over HTTP, with the SSRF guard unless `allowPrivate`. */
export class HttpNotifier implements Notifier, EventSender {
  private readonly transport: Transport;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;
  private readonly remainingMs: () => number;

  public constructor(private readonly opts: HttpNotifierOptions) {
    this.transport = opts.transport ?? httpPost;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.now = opts.now ?? Date.now;
    this.remainingMs = opts.remainingMs ?? (() => Number.POSITIVE_INFINITY);
  }

  /** Milliseconds the deliveries may still use: the invocation's remaining time minus the reserve. */
  private budgetMs(): number {
    return this.remainingMs() - (this.opts.reserveMs ?? NOTIFIER_DEFAULTS.reserveMs);
  }

  /**
   * The budget of a callback: it also leaves one chat post's time, because a result's chat
   * announcement (ReportResult) follows the callback and must not be starved by a hanging receiver.
   */
  private callbackBudgetMs(): number {
    return this.budgetMs() - this.chatTimeout();
  }

  /** The timeout of a POST started now: `nominalMs`, cut to `budget`; undefined when too little is left to try. */
  private attemptTimeout(nominalMs: number, budget = this.budgetMs()): number | undefined {
    if (budget < NOTIFIER_DEFAULTS.minAttemptMs) return undefined;
    return Math.floor(Math.min(nominalMs, budget));
  }

  /** Whether waiting `waitMs` would still leave time for another attempt within `budget`. */
  private canWait(waitMs: number, budget = this.budgetMs()): boolean {
    return budget - waitMs >= NOTIFIER_DEFAULTS.minAttemptMs;
  }

  /**
   * POSTs the result, signed per Standard Webhooks with the callback signing secret (webhook-id the
   * same on every retry, webhook-timestamp and webhook-signature fresh per attempt). Retries 5xx, 429,
   * network errors and timeouts with exponential backoff; never 4xx or redirects. Returns whether it was delivered.
   */
  public callback(url: string, taskId: string, result: TaskResult): Promise<boolean> {
    return this.deliverSigned(url, callbackDeliveryId(taskId), JSON.stringify(result), { task_id: taskId });
  }

  /**
   * A lifecycle event (order.lease_expiring, order.lease_expired, order.status_changed) to the
   * callback URL of the create-order that placed the order: signed and retried exactly like a
   * callback, with `webhook-id` = the event id on every retry. Never throws.
   */
  public send(url: string, eventId: string, event: OrderEvent): Promise<boolean> {
    return this.deliverSigned(url, eventId, JSON.stringify(event), {
      task_id: event.task_id,
      event: event.event,
      event_id: eventId,
    });
  }

  /** One signed delivery with retries; `logContext` names what is delivered (never the URL itself). */
  private async deliverSigned(
    url: string,
    deliveryId: string,
    body: string,
    logContext: Record<string, unknown>,
  ): Promise<boolean> {
    const host = hostOf(url);
    const attempts = Math.max(1, this.opts.callbackAttempts ?? NOTIFIER_DEFAULTS.callbackAttempts);
    const fail = (reason: string, extra: Record<string, unknown> = {}) => {
      logger.warn('callback delivery failed', { ...logContext, callback_host: host, reason, ...extra });
      countMetric(MetricName.CallbackFailures);
      return false;
    };
    const refused = this.refusal(url);
    if (refused) return fail(`destination refused: ${refused}`);
    let secrets: string[];
    try {
      secrets = await this.opts.signingSecrets();
      // A value the library cannot use fails here, once, rather than on every attempt.
      for (const secret of secrets) new Webhook(secret);
    } catch (error) {
      // The name only: a message could quote the value.
      return fail('callback signing secret unavailable or invalid', {
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
    if (secrets.length === 0) return fail('no callback signing secret configured to sign the callback');

    let last: Outcome = { ok: false, retry: false, reason: 'not attempted' };
    let tried = 0;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      const timeoutMs = this.attemptTimeout(
        this.opts.callbackTimeoutMs ?? NOTIFIER_DEFAULTS.callbackTimeoutMs,
        this.callbackBudgetMs(),
      );
      if (timeoutMs === undefined) {
        // The function would time out before this attempt could finish: stop, so the handler still ends on its own.
        if (attempt === 1) last = { ok: false, retry: false, reason: 'no time left in the invocation' };
        break;
      }
      tried = attempt;
      // A fresh timestamp per attempt keeps a late retry inside the receiver's replay window.
      last = await this.post(url, body, timeoutMs, signDelivery(secrets, deliveryId, this.now(), body));
      if (last.ok) {
        countMetric(MetricName.CallbackDeliveries);
        if (attempt > 1) logger.info('callback delivered after retry', { ...logContext, callback_host: host, attempt });
        return true;
      }
      if (!last.retry || attempt === attempts) break;
      const backoffMs = (this.opts.callbackBackoffMs ?? NOTIFIER_DEFAULTS.callbackBackoffMs) * 2 ** (attempt - 1);
      if (!this.canWait(backoffMs, this.callbackBudgetMs())) {
        logger.info('callback retries skipped: the invocation is running out of time', {
          ...logContext,
          callback_host: host,
          attempt,
        });
        break;
      }
      logger.info('callback attempt failed, retrying', {
        ...logContext,
        callback_host: host,
        attempt,
        status: last.status,
        reason: last.reason,
      });
      await this.sleep(backoffMs);
    }
    return fail(last.ok ? 'unknown' : last.reason, { status: last.ok ? undefined : last.status, attempts: tried });
  }

  /** Sends `text` to Slack (`{text}`) and Discord (`{content}`, ≤ 2000 chars) in parallel; unset URLs are skipped. */
  public async chat(text: string): Promise<void> {
    let urls: { slack?: string; discord?: string };
    try {
      urls = await this.opts.chat();
    } catch (error) {
      logger.warn('chat webhooks unavailable', { error: error instanceof Error ? error.name : 'unknown' });
      return;
    }
    await Promise.all([
      urls.slack ? this.chatSlack(urls.slack, text) : undefined,
      urls.discord ? this.chatDiscord(urls.discord, text) : undefined,
    ]);
  }

  /** Posts an in-channel reply to a Slack slash command's response_url. */
  public async slackResponse(responseUrl: string, text: string): Promise<void> {
    const refused = this.refusal(responseUrl);
    const outcome: Outcome = refused
      ? { ok: false, retry: false, reason: `destination refused: ${refused}` }
      : await this.budgetedPost(
          responseUrl,
          JSON.stringify({ response_type: 'in_channel', replace_original: false, text }),
          this.chatTimeout(),
        );
    if (!outcome.ok)
      logger.warn('slack response_url delivery failed', { status: outcome.status, reason: outcome.reason });
  }

  private async chatSlack(url: string, text: string): Promise<void> {
    const refused = this.refusal(url);
    const outcome: Outcome = refused
      ? { ok: false, retry: false, reason: `destination refused: ${refused}` }
      : await this.budgetedPost(url, JSON.stringify({ text }), this.chatTimeout());
    if (!outcome.ok) this.chatFailed('slack', outcome);
  }

  private async chatDiscord(url: string, text: string): Promise<void> {
    const refused = this.refusal(url);
    if (refused)
      return this.chatFailed('discord', { ok: false, retry: false, reason: `destination refused: ${refused}` });
    const body = JSON.stringify({ content: discordContent(text) });
    let outcome = await this.budgetedPost(url, body, this.chatTimeout(), true);
    if (!outcome.ok && outcome.status === 429) {
      const waitMs = outcome.retryAfterMs ?? 1_000;
      // Retrying before retry_after would only be rejected again; beyond the cap (or the
      // invocation's remaining time) we give up.
      if (waitMs <= (this.opts.discordMaxWaitMs ?? NOTIFIER_DEFAULTS.discordMaxWaitMs) && this.canWait(waitMs)) {
        await this.sleep(waitMs);
        outcome = await this.budgetedPost(url, body, this.chatTimeout(), true);
      } else {
        outcome = { ...outcome, reason: `rate limited for ${waitMs} ms` };
      }
    }
    if (!outcome.ok) this.chatFailed('discord', outcome);
  }

  private chatFailed(channel: 'slack' | 'discord', outcome: Outcome): void {
    if (outcome.ok) return;
    logger.warn('chat delivery failed', { channel, status: outcome.status, reason: outcome.reason });
    countMetric(MetricName.ChatFailures, { name: 'Channel', value: channel });
  }

  private chatTimeout(): number {
    return this.opts.chatTimeoutMs ?? NOTIFIER_DEFAULTS.chatTimeoutMs;
  }

  /** A chat POST with its timeout cut to the budget; not sent at all when no time is left. */
  private async budgetedPost(url: string, body: string, nominalMs: number, readRetryAfter = false): Promise<Outcome> {
    const timeoutMs = this.attemptTimeout(nominalMs);
    if (timeoutMs === undefined) return { ok: false, retry: false, reason: 'no time left in the invocation' };
    return this.post(url, body, timeoutMs, {}, readRetryAfter);
  }

  /** The protocol is always checked; literal private hosts only when the guard is on (it re-checks after DNS). */
  private refusal(url: string): string | undefined {
    const reason = refusedUrlReason(url);
    return reason && this.opts.allowPrivate && reason !== NOT_HTTP_URL_REASON ? undefined : reason;
  }

  /** One POST with a timeout. Never throws; the outcome says whether a retry could help. */
  private async post(
    url: string,
    body: string,
    timeoutMs: number,
    headers: Record<string, string> = {},
    readRetryAfter = false,
  ): Promise<Outcome> {
    let res: PostResponse;
    try {
      res = await this.transport(url, {
        headers: { 'Content-Type': 'application/json', 'User-Agent': 'gpu-relay', ...headers },
        body,
        timeoutMs,
        allowPrivate: this.opts.allowPrivate,
      });
    } catch (error) {
      if (isBlockedDestination(error))
        return { ok: false, retry: false, reason: 'destination refused at connect time' };
      // Duck-typed: only the name and code are logged, never the message (it may hold the URL).
      const { code } = (error ?? {}) as { code?: unknown };
      if (error instanceof DeliveryTimeoutError)
        return { ok: false, retry: true, reason: `timeout after ${timeoutMs} ms` };
      return { ok: false, retry: true, reason: `network error${typeof code === 'string' ? ` ${code}` : ''}` };
    }
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    return {
      ok: false,
      retry: res.status === 429 || res.status >= 500,
      status: res.status,
      // A redirect could lead anywhere, including past the SSRF guard: it is a failure, not followed.
      reason: res.status >= 300 && res.status < 400 ? 'redirect not followed' : `HTTP ${res.status}`,
      retryAfterMs: readRetryAfter && res.status === 429 ? discordRetryAfterMs(res) : undefined,
    };
  }
}
