/**
 * The middleware chain every API route shares, driven by the route table (contract/routes.ts):
 * invocation scope (around the chain) → invocation budget → logger context → rate limit (rate-limited routes) → body
 * size/decoding → webhook signature, its one-route claim and the route's scope (signed routes) or
 * Slack signature → JSON parsing → handler;
 * errors shaped last (JSON `{error}` bodies). Tracing is Lambda's own (no middleware).
 * The task-accepting routes build on it in accept-route.ts; their deps are in accept-deps.ts and the
 * Idempotency-Key header in idempotency-key.ts.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { ROUTE_SCOPES, ROUTES, type RouteDefinition } from '../../../contract/routes';
import type { RelayEnv } from '../../adapters/env';
import { invocationBudget, withInvocationBudget } from '../../adapters/invocation-budget';
import { invocationHandler, logger } from '../../adapters/observability';
import type { SecretReadOptions } from '../../adapters/secrets';
import type { IdempotencyStore, SlidingWindow } from '../../domain/ports';
import { decodeBody } from '../../middleware/body';
import { errorHandler } from '../../middleware/error-handler';
import type { ApiResult, RelayEvent } from '../../middleware/http';
import { jsonBody } from '../../middleware/json-body';
import { rateLimit } from '../../middleware/rate-limit';
import { claimSignature } from '../../middleware/signature-claim';
import type { verifySlackSignature } from '../../middleware/slack-signature';
import { requireScope, verifySignature, type ResolvedKey } from '../../middleware/verify-signature';

/** What the chain itself needs; each handler's deps extend it. */
export interface ChainDeps {
  readonly env: RelayEnv;
  /** Required on rate-limited routes. */
  readonly window?: SlidingWindow;
  /** Required on signed routes: accepted webhook secrets, current first. */
  readonly webhookSecrets?: (read?: SecretReadOptions) => Promise<readonly string[]>;
  /**
   * Signed routes: signatures already used and the route each was used on (issue 29: one signature,
   * one route), and on the accept routes the task each signed request made. Unwired = not checked.
   */
  readonly signedRequests?: IdempotencyStore;
  /** Signed routes: the usable caller key of an X-Webhook-Key-Id (issue 24); unwired = key ids refused. */
  readonly callerKeys?: (name: string) => Promise<ResolvedKey | undefined>;
  /** Slack route: the signing secret, or undefined when none is configured. */
  readonly slackSigningSecret?: (read?: SecretReadOptions) => Promise<string | undefined>;
  /** @default Date.now */
  readonly now?: () => number;
}

export type RouteId = (typeof ROUTES)[number]['id'];
/** A route's Lambda entry point. */
export type ApiHandler = (event: RelayEvent, context: Context) => Promise<ApiResult>;

const required = <T>(value: T | undefined, what: string): T => {
  if (value === undefined) throw new Error(`${what} is not wired for this route`);
  return value;
};

export const routeById = (id: string): RouteDefinition => {
  const route = ROUTES.find((r) => r.id === id);
  if (!route) throw new Error(`unknown route ${id}`);
  return route;
};

/** The routes that need signature v2 whatever SIGNATURE_VERSIONS says (issue 29): `/admin/keys*`. */
export const requiresSignatureV2 = (route: Pick<RouteDefinition, 'path'>): boolean =>
  route.path === '/admin/keys' || route.path.startsWith('/admin/');

export interface ApiHandlerOptions<D extends ChainDeps> {
  readonly routeId: RouteId;
  readonly deps: () => D;
  /** Parse the body as a JSON object into `event.jsonBody`. @default false */
  readonly json?: boolean;
  /**
   * The Slack route passes `verifySlackSignature` (refusing unsigned commands unless
   * ALLOW_UNSIGNED_SLACK); given by the route rather than imported here, so no other route's bundle
   * carries it. @default none
   */
  readonly slackSignature?: typeof verifySlackSignature;
}

/** Builds a route's handler: the shared chain around `core`. */
export const apiHandler = <D extends ChainDeps>(
  options: ApiHandlerOptions<D>,
  core: (event: RelayEvent, deps: D, context: Context) => Promise<ApiResult>,
): ApiHandler => {
  const route = routeById(options.routeId);
  const now = () => (options.deps().now ?? Date.now)();
  const chain: middy.MiddlewareObj<RelayEvent>[] = [];
  if (route.rateLimited) {
    chain.push(
      rateLimit({
        window: () => required(options.deps().window, 'the rate-limit window'),
        limit: () => options.deps().env.MAX_REQUESTS_PER_MINUTE,
        now,
      }),
    );
  }
  chain.push(decodeBody());
  if (route.signed) {
    chain.push(
      verifySignature({
        secrets: (read) => required(options.deps().webhookSecrets, 'the webhook secret')(read),
        requireTimestamp: () => options.deps().env.REQUIRE_WEBHOOK_TIMESTAMP,
        versions: () => options.deps().env.SIGNATURE_VERSIONS,
        requireV2: requiresSignatureV2(route),
        // Bodiless signed GETs (task lookup) and DELETEs (a key) sign their path (v1).
        covers: route.method === 'POST' ? 'body' : 'path',
        callerKeys: async (name) => options.deps().callerKeys?.(name),
        now,
      }),
      claimSignature({ routeId: route.id, store: () => options.deps().signedRequests, now }),
    );
    const scope = ROUTE_SCOPES[route.id];
    if (scope !== undefined) chain.push(requireScope(scope));
  }
  if (options.slackSignature) {
    chain.push(
      options.slackSignature({
        secret: async (read) => options.deps().slackSigningSecret?.(read),
        allowUnsigned: () => options.deps().env.ALLOW_UNSIGNED_SLACK,
        now,
      }),
    );
  }
  if (options.json) chain.push(jsonBody());
  const chained = middy<RelayEvent, ApiResult>()
    // Before anything awaits, so the whole chain runs inside this invocation's time budget (the
    // marketplace client reads it); the handler below also runs inside it explicitly.
    .use(invocationBudget())
    // logEvent pinned off: the raw event holds X-Webhook-Signature and caller URLs, and
    // POWERTOOLS_LOGGER_LOG_EVENT=true must not be able to put them in the logs.
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(chain)
    .use(errorHandler()) // last: its onError runs first and shapes every error
    .handler((event, context) => withInvocationBudget(context, () => core(event, options.deps(), context)));
  // The invocation's scope around the whole chain (a scope entered from a middleware does not reach
  // every later middleware): every line of this request, the error handler's too, carries this
  // function's name and this request's task id, or none.
  return invocationHandler((event: RelayEvent, context: Context) => chained(event, context));
};
