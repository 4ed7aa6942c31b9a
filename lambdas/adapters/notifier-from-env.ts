/**
 * The notifier from the environment. Its own module (not from-env.ts) so that functions which never
 * notify, the API routes, do not bundle the HTTP client and SSRF guard behind it.
 */
import type { RelayEnv } from './env';
import { HttpNotifier } from './http-notifier';
import { remainingMs } from './invocation-budget';
import { callbackSigningSecrets, chatWebhooks } from './secrets';
import type { EventSender } from '../domain/leases/lease-ports';
import type { Notifier } from '../domain/ports';

export const notifierFromEnv = (env: RelayEnv): Notifier & EventSender =>
  new HttpNotifier({
    // Callbacks and events are signed with their own secret (Standard Webhooks), never the webhook secret.
    signingSecrets: () => callbackSigningSecrets(env),
    chat: () => chatWebhooks(env),
    allowPrivate: env.ALLOW_PRIVATE_CALLBACKS,
    // Deliveries give up before the invocation does, so the handler still records the outcome.
    remainingMs,
  });
