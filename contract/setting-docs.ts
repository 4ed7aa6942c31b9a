/**
 * What each setting means, for people: the generated table in docs/configuration.md. Kept apart from
 * ./settings.ts so the texts stay out of every function bundle (about 3 KB each); typecheck fails
 * until a new setting has its line here.
 */
import type { SettingKey } from './settings';

export const SETTING_DOCS: Readonly<Record<SettingKey, string>> = {
  marketplaceUrl: 'Marketplace base URL (paths start with /v1).',
  defaultImage: 'Container image of an order that names none.',
  defaultCurrency: 'Currency orders are paid in.',
  defaultPorts:
    'Ports of an order that names none; a create-order with `ports` replaces them, and `22` (tcp) is added whenever the order carries an SSH key or password.',
  defaultSshPublicKey:
    "The OpenSSH public key line installed in orders of the shared webhook secret's `default` key that name no `ssh_public_key` (caller keys have their own: `PUT /admin/keys/{name}/ssh-key`).",
  maxOrdersPerHour: 'Account-wide cap of create_order calls per rolling hour.',
  maxRequestsPerMinute: 'Requests per client address per rolling minute.',
  orderReadyTimeoutSeconds: 'How long a placed order may take to run.',
  orderPollIntervalSeconds: 'Seconds between readiness polls.',
  allowPrivateCallbacks: 'Accept callback URLs on private or loopback addresses.',
  requireWebhookTimestamp:
    "Refuse signed requests without X-Webhook-Timestamp. On by default in AWS (a public endpoint: a captured untimestamped request could be replayed forever); `-c requireWebhookTimestamp=false` relaxes it. `npm start` keeps the spec's optional timestamp.",
  allowUnsignedSlack:
    'Without a Slack signing secret: true = commands pass unverified (the spec, `npm start`), false = refused (403); `-c allowUnsignedSlack=true` opts in.',
  slackAllowedTeamIds:
    'Slack workspaces (`team_id`, comma-separated) whose commands `/slack/command` accepts; others get an ephemeral refusal and nothing is queued. Unset = any workspace whose request passes the signature check (the deploy warns).',
  slackAllowedUserIds:
    'Slack users (`user_id`, comma-separated) allowed to send commands, on top of the team list; unset = every user of an allowed team.',
  signatureVersions:
    "Which X-Webhook-Signature versions the relay accepts: `v2` (method, path with query, timestamp and body signed: `v2=<hex>` over `v2.<timestamp>.<METHOD>.<path>.<body>`) or `v1,v2` (also the spec's body-only and `<timestamp>.<body>` signatures, for the spec's callers). `/admin/keys*` and every request with X-Webhook-Key-Id need v2 whatever this says. See [api.md](api.md#signing-a-request).",
  slackUnmappedUsers:
    'Slack commands from a user no caller key names (`keys create --slack-user`): `default` = they act as the default key, every scope (how Slack worked before caller keys; `npm start`), `deny` = an ephemeral refusal and nothing queued (the deployed default: an unmapped user must not get more rights than a mapped one; `-c slackUnmappedUsers=default` opts back in). A user mapped to a key always acts as that key.',
  marketplaceTimeoutMs: 'Timeout of one marketplace call.',
  awsCallTimeoutMs:
    "How long one attempt of an AWS call (DynamoDB, SQS, Step Functions, Secrets Manager) may wait for its answer, and how long its answer may stall, before the SDK tries again (3 attempts). 2 s in AWS, which the functions' time budgets count on; `npm start` waits 10 s, since its DynamoDB, SQS and Step Functions run in the relay's own process and a busy machine slows them with it.",
  marketplaceMinIntervalMs:
    'Minimum spacing of marketplace calls per API key (1 req/s); the pacing gate adds its own lateness margin.',
  marketplaceMaxIntervalMs:
    'Widest spacing of marketplace calls per API key: each rate-limited answer (HTTP 429, code 5) doubles the shared interval up to this, back to the minimum after a minute without one; at or below the minimum it never widens.',
  marketplaceCreateIntervalMs:
    'Minimum spacing of create_order calls per API key (production: 1 per 5 s), on top of the interval above.',
  marketplacePricePeriod:
    "Period of the marketplace's USD prices (`price.usd.*`): `hour` or `day`; unset = per listing element (the spec's `on_demand_native` per hour, production's `on_demand_<coin>` per day). The relay converts to USD per hour.",
  defaultMaxHours:
    'Lease of a create-order that names no `max_hours` (hours, fractions allowed, at most 720); unset = no lease.',
  watchIntervalSeconds: 'Seconds between fleet-watch sweeps (lease expiry, warnings and order status changes).',
  leaseWarningSeconds: 'How long before a lease ends the relay warns in chat and sends `order.lease_expiring`.',
  orderVisibleTimeoutSeconds:
    'How long the relay looks for a just-placed order in my_orders (fresh reads, backoff) before it concludes that none was placed; production lists new orders up to ~20 s late. The fleet watch cancels an order that appears later and nobody kept.',
  readinessProbe:
    "What makes a running order ready: `ssh-login` = the relay logs in over SSH (ssh2) with the order's `ssh_password`, which it derives per task and sends with create_order; a refused login is polled again until ORDER_READY_TIMEOUT_SECONDS ends, then the order is cancelled (`…: ssh login refused`); the success result reports `ssh_host_key_sha256`. `ssh` = its ssh endpoint answers with an SSH banner, `none` = the marketplace status alone.",
  defaultMinReliability:
    'Leave out servers whose marketplace `reliability` (0–1) is below this, for every create-order and price-alert that names no `min_reliability`; unset = no filter.',
  defaultMinRating:
    'Leave out servers whose average `rating` (0–5) is below this, for every create-order and price-alert that names no `min_rating`; unset = no filter.',
  defaultMinRatingCount:
    'With a rating floor: the fewest ratings a server must have when the request names no `min_rating_count`; unset = 1 when a rating floor applies.',
  defaultPrefer:
    "Which matching server a create-order that names no `prefer` rents: `first` (the marketplace's order, the spec's rule), `cheapest` (lowest USD/h of the order type), `reliable` (highest reliability, then rating, then price).",
  callerKeyCacheSeconds:
    'How long an instance reuses the caller keys it read (X-Webhook-Key-Id); a revocation takes effect everywhere within this. 0 reads them on every request.',
  spendLimitUsdPerDay:
    "The whole relay's spending limit per UTC day, in USD: each order reserves its worst case (USD per hour × lease hours) before it is placed and is refused over the limit (docs/budgets.md); the alarm SpendNearDailyLimit fires at 80 %. Unset = no limit.",
  allowPrivateSshProbe:
    "Let the ssh readiness probe (READINESS_PROBE=ssh) connect to private or loopback addresses. Off in AWS (a rented server's endpoint comes from the marketplace, so the probe must not reach into the relay's network); `npm start` turns it on so the simulator's servers on 127.0.0.1 can be probed. Separate from ALLOW_PRIVATE_CALLBACKS.",
  maxWaitingTasksPerKey:
    'Standing orders (`wait_seconds`) one caller key may have waiting at once; one more is refused 429 `too many waiting orders (20 for key ci)` and nothing is queued. The default key (the shared secret, and Slack users mapped to it) has this cap too (issue 38 §1: `(20 for key default)`).',
  maxWaitingTasks:
    'Standing orders the whole relay may have waiting at once; one more is refused 429 `too many waiting orders (1000)` and nothing is queued.',
  hostAvoidAfterFailures:
    'A host whose orders failed readiness or login this many times within 24 h is avoided by every search (create-order, standing orders, replacements) for HOST_AVOID_HOURS; the failure text adds `; avoided 2 hosts after failed starts` (issue 31 §2, docs/hosts.md).',
  hostAvoidHours: 'How long a host is avoided after HOST_AVOID_AFTER_FAILURES failed starts, in hours.',
  renterFeePercent:
    "The marketplace's renter fee, in percent of an order's price: reservations (worst cases, raises, extensions) and settlements include it (docs/budgets.md). Production charges 5 %; `npm start` sets 0 when its simulator speaks the spec's dialect (which charges none).",
  orderCreationFeeUsd:
    "The marketplace's fee per order placed, in USD: reserved with each create-order and settled with it (production reports it as `creation_fee`). `npm start` sets 0 when its simulator speaks the spec's dialect.",
  jobRetryBaseMs: 'Delay unit of job retries (2^retry × this, in ms); 1000 in production, smaller in tests.',
};
