/**
 * What docs/api.md's route table says of each route besides what contract/routes.ts declares: how it
 * is signed (when not the plain webhook signature) and its body. contract/routes-table.ts builds the
 * table from ROUTES and this map; a unit test fails when a route has no entry or the table drifts.
 */

export interface RouteDoc {
  /** The "Signed" cell when it is not `yes` / `no` (from the route's `signed`). */
  readonly signing?: string;
  readonly body: string;
}

/** Keyed `METHOD path`, as in ROUTES. */
export const ROUTE_DOCS: Readonly<Record<string, RouteDoc>> = {
  'POST /webhook/create-order': {
    body: '`gpu_type` (required), `max_price` (USD per hour), host filters, `prefer`, a lease, a wait, outbid recovery and access (`ssh_public_key`, `ssh_password`, `jupyter_token`, `ports`, `command`): every field in [Create-order fields](#create-order-fields)',
  },
  'POST /webhook/cancel-order': { body: '`order_id` (required), `callback_url`' },
  'POST /webhook/extend-order': { body: '`order_id`, `hours` (both required), `callback_url`' },
  'POST /webhook/set-spot-price': {
    body: '`order_id`, `desired_price` (both required; the order currency per day), `callback_url`',
  },
  'POST /webhook/cancel-task': {
    body: '`task_id` (required: a create-order task waiting for a server), `callback_url`',
  },
  'POST /webhook/price-alert': {
    body: '`gpu_type`, `target_price` (both required; USD per hour), `image`, `wait_seconds`, `callback_url`',
  },
  'POST /webhook/status': { body: 'optional `callback_url`' },
  'GET /webhook/tasks/{task_id}': { signing: 'yes (v2: method and path, empty body)', body: 'none' },
  'GET /webhook/spend': {
    signing: 'yes (v2: method, path and query, empty body)',
    body: "none; query `from`, `to` (YYYY-MM-DD, UTC), `limit` (days per page, 1–100, default 31), `next` (the previous page's cursor)",
  },
  'GET /webhook/hosts': {
    signing: 'yes (v2: method, path and query, empty body)',
    body: "none; query `limit` (hosts per page, 1–100, default 100), `next`; the relay's record of each host with a score, hosts avoided for the caller first; a key sees its own outcomes only (docs/hosts.md)",
  },
  'GET /webhook/marketplace': { body: 'none' },
  'POST /slack/command': {
    signing: 'Slack signature when configured (AWS without one: 403 unless `allowUnsignedSlack`)',
    body: 'form field `text`: `rent <gpu_type> [max_price]` (e.g. `rent RTX_4090 0.5`, `_` for a space), `cancel <order_id>`, `status`, `extend <order_id> <hours>`, `bid <order_id> <price>`',
  },
  'POST /admin/keys': {
    signing: 'yes, v2 only (a key with scope `admin`)',
    body: '`name`, `scopes` (both required), `orders_per_hour`, `budget_usd_per_day`, `expires` (YYYY-MM-DD), `slack_user`, `ssh_public_key`',
  },
  'GET /admin/keys': { signing: 'yes, v2 only (a key with scope `admin`)', body: 'none' },
  'POST /admin/keys/{name}/revoke': { signing: 'yes, v2 only (a key with scope `admin`)', body: 'none' },
  'PUT /admin/keys/{name}/ssh-key': {
    signing: 'yes, v2 only (a key with scope `admin`)',
    body: '`ssh_public_key`: one OpenSSH public key line, which orders by the key that name none carry',
  },
  'DELETE /admin/keys/{name}': {
    signing: 'yes, v2 only (a key with scope `admin`)',
    body: 'none (deletes a revoked key; 409 for an active one)',
  },
  'POST /admin/hosts/{server_id}/avoid': {
    signing: 'yes, v2 only (a key with scope `admin`)',
    body: '`hours` (default HOST_AVOID_HOURS, at most 720), `reason` (default `operator`)',
  },
  'POST /admin/hosts/{server_id}/clear': {
    signing: 'yes, v2 only (a key with scope `admin`)',
    body: 'none (ends the avoidance, relay-wide and per key, and forgets the failed starts counted towards the next one; 404 for a host without a record, none created)',
  },
  'GET /health': { body: 'none' },
  'GET /openapi.json': { body: 'none' },
};
