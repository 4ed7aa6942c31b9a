/**
 * The notifier from the environment. Its own module (not from-env.ts) so that functions which never
 * notify, the API routes, do not bundle the HTTP client and SSRF guard behind it.
 */
import type { RelayEnv } from './env';
import { HttpNotifier } from './http-notifier';
import { remainingMs } from './invocation-budget';
import { chatWebhooks, currentWebhookSecret } from './secrets';
import type { EventSender } from '../domain/lease-ports';
import type { Notifier } from '../domain/ports';

export const notifierFromEnv = (env: RelayEnv): Notifier & EventSender =>
  new HttpNotifier({
    // Callbacks are signed with the current secret only: no AWSPREVIOUS read on this path.
    webhookSecrets: () => currentWebhookSecret(env),
    chat: () => chatWebhooks(env),
    allowPrivate: env.ALLOW_PRIVATE_CALLBACKS,
    // Deliveries give up before the invocation does, so the handler still records the outcome.
    remainingMs,
  });
