#!/usr/bin/env bash
# Sends one signed request to the GPU Order Relay with curl and openssl.
#
#   GPU_RELAY_URL=http://127.0.0.1:5000 GPU_RELAY_SECRET=... \
#     ./examples/sign-request.sh /webhook/create-order '{"gpu_type":"RTX 4090","max_price":0.5}'
#
# Signature v2: X-Webhook-Signature = "v2=" + lowercase hex HMAC-SHA256, keyed with the webhook secret,
# of "v2.<timestamp>.POST.<path>.<body>", where <timestamp> is the X-Webhook-Timestamp header (Unix
# seconds) and <path> the request path with its query string, exactly as sent.
# Sign the exact bytes you send: --data-binary sends $body untouched (no trailing newline).
# Prints the relay's JSON answer on stdout and "HTTP <status>" on stderr.
# GPU_RELAY_DRY_RUN=1 prints the two headers instead of sending; GPU_RELAY_TIMESTAMP fixes the timestamp
# (the worked example in docs/api.md).
set -euo pipefail

: "${GPU_RELAY_URL:?set GPU_RELAY_URL, e.g. http://127.0.0.1:5000}"
: "${GPU_RELAY_SECRET:?set GPU_RELAY_SECRET to the webhook secret}"

path="${1:-/webhook/create-order}"
default_body='{"gpu_type":"RTX 4090","max_price":0.5}'
body="${2:-$default_body}"

ts="${GPU_RELAY_TIMESTAMP:-$(date +%s)}"
# Note: openssl takes the key on its command line (visible in `ps` on a shared machine).
sig="v2=$(printf 'v2.%s.POST.%s.%s' "$ts" "$path" "$body" | openssl dgst -sha256 -hmac "$GPU_RELAY_SECRET" -hex | awk '{print $NF}')"

if [ -n "${GPU_RELAY_DRY_RUN:-}" ]; then
  printf 'X-Webhook-Timestamp: %s\nX-Webhook-Signature: %s\n' "$ts" "$sig"
  exit 0
fi
curl --silent --show-error --fail-with-body \
  --request POST "${GPU_RELAY_URL%/}${path}" \
  --header 'Content-Type: application/json' \
  --header "X-Webhook-Timestamp: ${ts}" \
  --header "X-Webhook-Signature: ${sig}" \
  --data-binary "$body" \
  --write-out '%{stderr}HTTP %{http_code}\n'
echo
