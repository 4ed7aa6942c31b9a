#!/usr/bin/env node
// A callback receiver for the GPU Order Relay (Node 20+ and the `standardwebhooks` package): it
// verifies every delivery (task results and order lifecycle events) and ignores forgeries, stale
// deliveries and replays.
//
//   npm install standardwebhooks
//   GPU_RELAY_CALLBACK_SECRET=whsec_... PORT=8080 node examples/verify-callback.mjs
//   then pass callback_url=http://<this host>:8080/callback in your requests.
//
// The relay signs each delivery per Standard Webhooks (https://www.standardwebhooks.com) with its
// callback signing secret (CALLBACK_SIGNING_SECRET; not the webhook secret you sign requests with):
//   webhook-id         unique per delivery (per task result, per event), the same on every retry
//   webhook-timestamp  Unix seconds when this attempt was signed
//   webhook-signature  "v1,<base64 HMAC-SHA256 of '<id>.<timestamp>.<raw body>'>", one per active key,
//                      space-separated (two during a key rotation)
// Prints one JSON line per accepted delivery on stdout.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.GPU_RELAY_CALLBACK_SECRET;
if (!secret) {
  console.error('set GPU_RELAY_CALLBACK_SECRET to the relay\'s callback signing secret (whsec_...)');
  process.exit(2);
}
const webhook = new Webhook(secret);
const port = Number(process.env.PORT ?? 8080);
const TOLERANCE_SECONDS = 300; // standardwebhooks refuses timestamps more than 5 minutes from now

/** Delivery ids already processed, with when they arrived: a retry or a replay is not processed twice. */
const seen = new Map();

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const answer = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'POST') return answer(405, { error: 'POST only' });
    // Verify the raw bytes before parsing: re-serialised JSON would not match the signature.
    const raw = Buffer.concat(chunks);
    let result;
    try {
      // Checks the signature (constant time) and that webhook-timestamp is within 5 minutes; returns the parsed JSON.
      result = webhook.verify(raw, req.headers);
    } catch (error) {
      console.error(`rejected a delivery: ${error.message}`);
      return answer(401, { error: 'invalid or stale signature' });
    }
    const id = req.headers['webhook-id'];
    const now = Date.now() / 1000;
    for (const [key, at] of seen) if (now - at > 2 * TOLERANCE_SECONDS) seen.delete(key); // older ones fail the timestamp check anyway
    if (seen.has(id)) {
      // A retry after a lost answer, or a replay: acknowledge it (so the relay stops retrying) but do nothing.
      return answer(200, { ok: true, duplicate: true });
    }
    seen.set(id, now);
    answer(200, { ok: true });
    // Your code here: the delivery is authentic and seen for the first time. A lifecycle event has
    // `event` (order.lease_expiring, order.lease_expired, order.status_changed); a task result has none.
    console.log(JSON.stringify({ id, result }));
  });
});

server.listen(port, () => {
  console.error(`listening on http://127.0.0.1:${server.address().port}/callback`);
});
