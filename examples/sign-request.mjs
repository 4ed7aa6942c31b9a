#!/usr/bin/env node
// Sends one signed request to the GPU Order Relay with Node 20+ (fetch + node:crypto, no packages).
//
//   GPU_RELAY_URL=http://127.0.0.1:5000 GPU_RELAY_SECRET=... \
//     node examples/sign-request.mjs /webhook/create-order '{"gpu_type":"RTX 4090","max_price":0.5}'
//
// Signature v2: X-Webhook-Signature = "v2=" + lowercase hex HMAC-SHA256, keyed with the webhook secret,
// of "v2.<timestamp>.POST.<path>.<body>", where <timestamp> is the X-Webhook-Timestamp header (Unix
// seconds) and <path> the request path with its query string, exactly as sent.
// GPU_RELAY_DRY_RUN=1 prints the two headers instead of sending; GPU_RELAY_TIMESTAMP fixes the timestamp
// (the worked example in docs/api.md).
import { createHmac } from 'node:crypto';

const url = process.env.GPU_RELAY_URL;
const secret = process.env.GPU_RELAY_SECRET;
if (!url || !secret) {
  console.error('set GPU_RELAY_URL and GPU_RELAY_SECRET');
  process.exit(2);
}
const path = process.argv[2] ?? '/webhook/create-order';
const body = process.argv[3] ?? JSON.stringify({ gpu_type: 'RTX 4090', max_price: 0.5 });

// Sign the exact bytes that go on the wire: encode once, sign and send the same Buffer.
const bytes = Buffer.from(body, 'utf8');
const timestamp = process.env.GPU_RELAY_TIMESTAMP ?? String(Math.floor(Date.now() / 1000));
const signature =
  'v2=' + createHmac('sha256', secret).update(`v2.${timestamp}.POST.${path}.`).update(bytes).digest('hex');

if (process.env.GPU_RELAY_DRY_RUN) {
  console.log(`X-Webhook-Timestamp: ${timestamp}\nX-Webhook-Signature: ${signature}`);
  process.exit(0);
}
const res = await fetch(`${url.replace(/\/+$/, '')}${path}`, {
  method: 'POST',
  headers: {
    'Content-Type': 'application/json',
    'X-Webhook-Timestamp': timestamp,
    'X-Webhook-Signature': signature,
  },
  body: bytes,
});
console.error(`HTTP ${res.status}`);
console.log(await res.text());
process.exitCode = res.ok ? 0 : 1;
