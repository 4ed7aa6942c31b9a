#!/usr/bin/env bash
# Sends one signed request to the GPU Order Relay with curl and openssl.
#
#   GPU_RELAY_URL=http://127.0.0.1:5000 GPU_RELAY_SECRET=... \
#     ./examples/sign-request.sh /webhook/create-order '{"gpu_type":"RTX 4090","max_price":0.5}'
#
# X-Webhook-Signature = lowercase hex HMAC-SHA256, keyed with the webhook secret, of
# "<timestamp>.<body>" where <timestamp> is the X-Webhook-Timestamp header (Unix seconds).
# Sign the exact bytes you send: --data-binary sends $body untouched (no trailing newline).
# Prints the relay's JSON answer on stdout and "HTTP <status>" on stderr.
set -euo pipefail

: "${GPU_RELAY_URL:?set GPU_RELAY_URL, e.g. http://127.0.0.1:5000}"
: "${GPU_RELAY_SECRET:?set GPU_RELAY_SECRET to the webhook secret}"

path="${1:-/webhook/create-order}"
default_body='{"gpu_type":"RTX 4090","max_price":0.5}'
body="${2:-$default_body}"

ts="$(date +%s)"
# Note: openssl takes the key on its command line (visible in `ps` on a shared machine).
sig="$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$GPU_RELAY_SECRET" -hex | awk '{print $NF}')"

curl --silent --show-error --fail-with-body \
  --request POST "${GPU_RELAY_URL%/}${path}" \
  --header 'Content-Type: application/json' \
  --header "X-Webhook-Timestamp: ${ts}" \
  --header "X-Webhook-Signature: ${sig}" \
  --data-binary "$body" \
  --write-out '%{stderr}HTTP %{http_code}\n'
echo
