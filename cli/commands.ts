/**
 * The command table: every flag the CLI knows, which flags each command accepts, and the help text.
 */
import type { ParseArgsConfig } from 'node:util';
import { CliError } from './output';

export const DEFAULT_URL = 'http://127.0.0.1:5000';

export const OPTIONS = {
  url: { type: 'string' },
  secret: { type: 'string' },
  'callback-secret': { type: 'string' },
  id: { type: 'string' },
  gpu: { type: 'string' },
  'max-price': { type: 'string' },
  'on-demand': { type: 'boolean' },
  image: { type: 'string' },
  env: { type: 'string', multiple: true },
  callback: { type: 'string' },
  target: { type: 'string' },
  'max-hours': { type: 'string' },
  hours: { type: 'string' },
  price: { type: 'string' },
  signature: { type: 'string' },
  timestamp: { type: 'string' },
  'max-age': { type: 'string' },
  'no-timestamp': { type: 'boolean' },
  'idempotency-key': { type: 'string' },
  wait: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  json: { type: 'boolean' },
  poll: { type: 'boolean' },
  interval: { type: 'string' },
  timeout: { type: 'string' },
  'listen-port': { type: 'string' },
  'listen-host': { type: 'string' },
  'public-url': { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  key: { type: 'string' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  'orders-per-hour': { type: 'string' },
  'budget-usd-per-day': { type: 'string' },
  expires: { type: 'string' },
  'slack-user': { type: 'string' },
  'wait-for': { type: 'string' },
  'on-outbid': { type: 'string' },
  'min-reliability': { type: 'string' },
  'min-rating': { type: 'string' },
  'min-rating-count': { type: 'string' },
  'exclude-server': { type: 'string', multiple: true },
  prefer: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'ssh-key': { type: 'string' },
  'no-ssh-key': { type: 'boolean' },
  port: { type: 'string', multiple: true },
  'command-file': { type: 'string' },
  'password-prompt': { type: 'boolean' },
  'jupyter-token': { type: 'string' },
  identity: { type: 'string' },
  'replace-host-key': { type: 'boolean' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export type OptionName = keyof typeof OPTIONS;

const CONNECTION: OptionName[] = ['url', 'secret', 'key', 'signature', 'no-timestamp', 'verbose', 'help'];
const SEND: OptionName[] = [...CONNECTION, 'idempotency-key'];
const WAIT: OptionName[] = [
  'wait',
  'no-wait',
  'poll',
  'interval',
  'timeout',
  'listen-port',
  'listen-host',
  'public-url',
  'callback-secret',
];

/** The options of `keys create` alone: `keys` refuses them with its other subcommands. */
export const KEYS_CREATE_OPTIONS = [
  'name',
  'scopes',
  'orders-per-hour',
  'budget-usd-per-day',
  'expires',
  'slack-user',
  'ssh-key',
] as const;

/** What the caller brings to the server (issue 37 §1): key, password, Jupyter token, ports, start-up script. */
const ACCESS: OptionName[] = ['ssh-key', 'no-ssh-key', 'port', 'command-file', 'password-prompt', 'jupyter-token'];

/** Host filters (issue 31 §1), of create-order and price-alert. */
const HOST_FILTERS: OptionName[] = ['min-reliability', 'min-rating', 'min-rating-count', 'exclude-server'];

export interface CommandSpec {
  readonly options: readonly OptionName[];
  readonly usage: string;
  readonly summary: string;
}

/** Which options each command accepts, and its usage text. */
export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  'create-order': {
    options: [
      ...SEND,
      ...WAIT,
      'gpu',
      'max-price',
      'max-hours',
      'on-demand',
      'image',
      'env',
      'callback',
      'wait-for',
      'on-outbid',
      ...HOST_FILTERS,
      'prefer',
      ...ACCESS,
    ],
    usage:
      'create-order --gpu TYPE [--max-price USD_PER_HOUR] [--max-hours H] [--on-demand] [--image IMAGE] [--env NAME=VALUE]... [--ssh-key FILE.pub | --no-ssh-key] [--password-prompt] [--jupyter-token TOKEN] [--port PORT:tcp|http]... [--command-file FILE] [--min-reliability 0.99] [--min-rating 4.5 [--min-rating-count 3]] [--exclude-server ID]... [--prefer first|cheapest|reliable] [--wait-for 2h] [--on-outbid notify|rebid|replace|rebid_then_replace] [--callback URL] [--wait [--poll]]',
    summary: 'rent the first matching server (POST /webhook/create-order)',
  },
  'cancel-order': {
    options: [...SEND, ...WAIT, 'callback'],
    usage: 'cancel-order ORDER_ID [--callback URL] [--wait [--poll]]',
    summary: 'cancel an order (POST /webhook/cancel-order)',
  },
  'extend-order': {
    options: [...SEND, ...WAIT, 'hours', 'callback'],
    usage: 'extend-order ORDER_ID --hours H [--callback URL] [--wait [--poll]]',
    summary: "extend (or start) an order's lease by H hours (POST /webhook/extend-order)",
  },
  'set-spot-price': {
    options: [...SEND, ...WAIT, 'price', 'callback'],
    usage: 'set-spot-price ORDER_ID --price COIN_PER_DAY [--callback URL] [--wait [--poll]]',
    summary: 'change the bid of a spot order (POST /webhook/set-spot-price)',
  },
  'cancel-task': {
    options: [...SEND, ...WAIT, 'callback'],
    usage: 'cancel-task TASK_ID [--callback URL] [--wait [--poll]]',
    summary: 'end a standing order that is still waiting for a server (POST /webhook/cancel-task)',
  },
  'price-alert': {
    options: [...SEND, ...WAIT, 'gpu', 'target', 'image', 'callback', 'wait-for', ...HOST_FILTERS],
    usage:
      'price-alert --gpu TYPE --target USD_PER_HOUR [--image IMAGE] [--min-reliability 0.99] [--min-rating 4.5 [--min-rating-count 3]] [--exclude-server ID]... [--wait-for 2h] [--callback URL] [--wait [--poll]]',
    summary: 'one price check; rents at or under the target (POST /webhook/price-alert)',
  },
  status: {
    options: [...SEND, ...WAIT, 'callback', 'json'],
    usage: 'status [--json] [--callback URL] [--wait [--poll]]',
    summary: "list the account's orders as a table, or --json (POST /webhook/status)",
  },
  marketplace: {
    options: ['url', 'verbose', 'help', 'json'],
    usage: 'marketplace [--json]',
    summary: 'GPU models to rent (the --gpu value), availability and lowest USD/h prices (GET /webhook/marketplace)',
  },
  task: {
    options: [...CONNECTION, 'wait', 'interval', 'timeout'],
    usage: 'task TASK_ID [--wait]',
    summary: 'show a task record: state, result, timestamps (GET /webhook/tasks/{task_id})',
  },
  verify: {
    options: ['callback-secret', 'id', 'signature', 'timestamp', 'verbose', 'help'],
    usage:
      'verify --id WEBHOOK_ID --timestamp WEBHOOK_TIMESTAMP --signature WEBHOOK_SIGNATURE [--callback-secret whsec_...] < body',
    summary: "check a received callback's Standard Webhooks signature (body on stdin, exact bytes)",
  },
  ssh: {
    options: [...CONNECTION, 'identity', 'replace-host-key'],
    usage: 'ssh TASK_ID|ORDER_ID [--identity FILE] [--replace-host-key] [-- COMMAND...]',
    summary:
      "log in to a rented server with the system ssh, its host key pinned from the task's result (GET /webhook/tasks/{task_id})",
  },
  'ssh-config': {
    options: [...CONNECTION, 'name', 'identity', 'replace-host-key'],
    usage: 'ssh-config TASK_ID|ORDER_ID [--name NAME] [--identity FILE] [--replace-host-key]',
    summary: 'print a pinned `Host` block for ~/.ssh/config (default name gpu-<order_id>)',
  },
  keys: {
    options: [...CONNECTION, ...KEYS_CREATE_OPTIONS],
    usage:
      'keys create --name NAME --scopes order,cancel,read[,admin] [--orders-per-hour N] [--budget-usd-per-day USD] [--expires YYYY-MM-DD] [--slack-user U123] [--ssh-key FILE.pub] | keys list | keys ssh-key NAME FILE.pub | keys revoke NAME',
    summary:
      "caller keys (scope admin): create (prints the secret once), list, set a key's SSH public key, revoke (/admin/keys)",
  },
  spend: {
    options: [...CONNECTION, 'from', 'to'],
    usage: 'spend [--from YYYY-MM-DD] [--to YYYY-MM-DD]',
    summary: 'the spend ledger per key and UTC day: reserved, settled, orders, GPU hours (GET /webhook/spend)',
  },
  hosts: {
    options: [...CONNECTION],
    usage: 'hosts',
    summary:
      "the relay's record of each host: score, orders placed and ready, failed starts, refusals, outbids, avoidance (GET /webhook/hosts)",
  },
  env: {
    options: ['url', 'verbose', 'help'],
    usage: 'env [--url URL]',
    summary:
      'print `export GPU_RELAY_URL=… GPU_RELAY_SECRET=… CALLBACK_SIGNING_SECRET=…` for the local relay (eval "$(npx gpu-relay env)")',
  },
  help: { options: ['help'], usage: 'help [COMMAND]', summary: 'show this help' },
};

export const HELP = `gpu-relay: signed client of the GPU Order Relay

Usage: gpu-relay <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(15)} ${c.summary}`)
  .join('\n')}

Connection:
  --url URL               relay base URL (env GPU_RELAY_URL; default ${DEFAULT_URL})
  --secret S              webhook secret (env GPU_RELAY_SECRET, then WEBHOOK_SECRET); prefer the env
  --callback-secret S     callback signing secret, whsec_... (env GPU_RELAY_CALLBACK_SECRET, then
                          CALLBACK_SIGNING_SECRET): verifies callbacks (--wait, verify); never signs requests
  --key NAME              sign as this caller key (X-Webhook-Key-Id; env GPU_RELAY_KEY_ID); the
                          secret is then that key's secret
  --signature v1|v2       signature version (default v2: method, path and body; X-Webhook-Signature: v2=...);
                          v1 signs the body alone (or <timestamp>.<body>) for relays older than v2
  --no-timestamp          with --signature v1: sign the body alone, without X-Webhook-Timestamp
  --idempotency-key K     send Idempotency-Key: a repeat within 24 h returns the same task_id
  --verbose               show the request and answer lines on stderr (signature redacted)

Standing orders and outbid recovery (create-order; price-alert takes --wait-for too):
  --wait-for DURATION     when no server matches now, keep the request waiting for one up to DURATION
                          (45s, 90m, 2h; at most 24h): wait_seconds in the request
  --on-outbid POLICY      what the relay does when someone outbids the spot order: notify (default),
                          rebid, replace or rebid_then_replace: on_outbid in the request

Choosing a host (create-order; price-alert takes the filters too):
  --min-reliability R     leave out servers whose reliability (0-1) is below R: min_reliability
  --min-rating A          leave out servers whose average rating (0-5) is below A: min_rating
  --min-rating-count N    with --min-rating: at least N ratings (default 1): min_rating_count
  --exclude-server ID     never rent this server (repeatable, at most 100): exclude_servers
  --prefer RULE           first (default: the marketplace's order), cheapest, or reliable: prefer

Access to the server (create-order):
  --ssh-key FILE.pub      your OpenSSH public key (one line): ssh_public_key. Without it, create-order
                          sends ~/.ssh/id_ed25519.pub (else ~/.ssh/id_rsa.pub) when it exists and says so
  --no-ssh-key            send no key (the relay then uses the one stored for your caller key, if any)
  --password-prompt       ask for a root password (letters and digits, 12-32; read from stdin when it
                          is not a terminal): ssh_password, never printed
  --jupyter-token TOKEN   the notebook's token (letters and digits, 16-32): jupyter_token; the relay
                          generates one when an http port is mapped and none is given
  --port PORT:PROTO       map a container port, PROTO tcp or http (repeatable, at most 16): ports
  --command-file FILE     a start-up script (at most 16 KiB): command

Logging in (ssh, ssh-config):
  --identity FILE         the private key to log in with: ssh -i FILE -o IdentitiesOnly=yes
  --replace-host-key      accept a host key that differs from the one pinned for that host and port
                          (only when you know why: e.g. a new order on the same host and port)
  --name NAME             ssh-config: the Host name (default gpu-<order_id>)
  The host key comes from the task's result and is pinned in the CLI's own known_hosts file
  ($XDG_CONFIG_HOME/gpu-relay/known_hosts, default ~/.config/gpu-relay/known_hosts); ssh runs with
  StrictHostKeyChecking=yes against it. GPU_RELAY_SSH names the ssh program (default ssh).

Waiting for the result (create-order, cancel-order, extend-order, set-spot-price, cancel-task, price-alert,
status, task):
  --wait                  wait for the task's result and print it; exit 1 if the task failed. The
                          default for a local relay (npm start here: its card in .relay/), task excepted
  --no-wait               print the queued task id and return at once
  --listen-port N         port of the local callback listener (default 0 = any free port)
  --listen-host H         address the listener binds (default 127.0.0.1)
  --public-url URL        URL the relay should call when it cannot reach this machine directly
                          (a tunnel to the listener); the listener path is appended
  --poll                  poll GET /webhook/tasks/{task_id} instead of listening for the callback
  --interval SECONDS      poll period (default 2)
  --timeout SECONDS       give up waiting after this long (default 900, plus the --wait-for time)

Exit codes: 0 success, 1 task failed or signature invalid, 2 usage or HTTP error.

Examples:
  eval "$(gpu-relay env)"      # the local relay's URL and secrets, for curl and scripts
  export GPU_RELAY_URL=https://relay.example.com GPU_RELAY_SECRET=...
  gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait
  gpu-relay cancel-order 12345
  gpu-relay create-order --gpu "RTX 4090" --max-hours 4 --wait
  gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait-for 2h --on-outbid replace
  gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --min-reliability 0.99 --prefer cheapest --wait
  gpu-relay create-order --gpu "RTX 4090" --ssh-key ~/.ssh/id_ed25519.pub --port 8000:http --command-file setup.sh --wait
  gpu-relay ssh 6f1c0b1e-... -- nvidia-smi
  gpu-relay ssh-config 6f1c0b1e-... >> ~/.ssh/config
  gpu-relay extend-order 12345 --hours 2
  gpu-relay set-spot-price 12345 --price 1500
  gpu-relay task 6f1c0b1e-...
  gpu-relay cancel-task 6f1c0b1e-...
  printf '%s' "$BODY" | gpu-relay verify --id "$WEBHOOK_ID" --timestamp "$WEBHOOK_TIMESTAMP" --signature "$WEBHOOK_SIGNATURE"
  gpu-relay keys create --name ci --scopes order,cancel,read --orders-per-hour 5 --budget-usd-per-day 20
  gpu-relay keys ssh-key ci ~/.ssh/id_ed25519.pub
  gpu-relay keys revoke ci
`;

/** A usage error (exit 2) that repeats the command's usage line. */
export const usageError = (command: string | undefined, message: string): CliError =>
  new CliError(
    `${message}\nUsage: gpu-relay ${commandSpec(command)?.usage ?? '<command> [options]'}\nRun 'gpu-relay help' for all options.`,
  );

/** The spec of a command name, or undefined (never an Object.prototype member). */
export const commandSpec = (command: string | undefined): CommandSpec | undefined =>
  command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
