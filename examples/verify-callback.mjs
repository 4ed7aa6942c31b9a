#!/usr/bin/env node
// A callback receiver for the GPU Order Relay (Node 20+, no packages): it verifies every signed
// callback and ignores forgeries, stale deliveries and replays.
//
//   GPU_RELAY_SECRET=... PORT=8080 node examples/verify-callback.mjs
//   then pass callback_url=http://<this host>:8080/callback in your requests.
//
// The relay signs each callback like a timestamped request:
//   X-Webhook-Timestamp  Unix seconds when the delivery was signed
//   X-Webhook-Signature  lowercase hex HMAC-SHA256 of "<timestamp>.<raw body>" with the webhook secret
//   X-Webhook-Id         unique per task, the same on every retry of that delivery
// Prints one JSON line per accepted callback on stdout.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.GPU_RELAY_SECRET;
if (!secret) {
  console.error('set GPU_RELAY_SECRET to the webhook secret');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 8080);
const TOLERANCE_SECONDS = 300; // the relay's own replay window

/** Delivery ids already processed, with when they arrived: a retry or a replay is not processed twice. */
const seen = new Map();

/** Returns null when the delivery is authentic and fresh, else the reason to reject it. */
const verifyCallback = (headers, rawBody, nowSeconds = Date.now() / 1000) => {
  const timestamp = headers['x-webhook-timestamp'];
  const signature = headers['x-webhook-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return 'missing signature headers';
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return 'stale timestamp';
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
  const received = Buffer.from(signature, 'hex');
  // Compare in constant time, and only buffers of equal length (timingSafeEqual throws otherwise).
  if (received.length !== expected.length || !timingSafeEqual(received, expected)) return 'invalid signature';
  return null;
};

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    // Verify the raw bytes before parsing: re-serialised JSON would not match the signature.
    const raw = Buffer.concat(chunks);
    const problem = req.method === 'POST' ? verifyCallback(req.headers, raw) : 'POST only';
    if (problem) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: problem }));
      console.error(`rejected a callback: ${problem}`);
      return;
    }
    const id = req.headers['x-webhook-id'] ?? '';
    const now = Date.now() / 1000;
    for (const [key, at] of seen) if (now - at > 2 * TOLERANCE_SECONDS) seen.delete(key); // older ones fail the timestamp check anyway
    if (seen.has(id)) {
      // A retry after a lost answer, or a replay: acknowledge it (so the relay stops retrying) but do nothing.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, duplicate: true }));
      return;
    }
    seen.set(id, now);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
    // Your code here: the result is authentic and seen for the first time.
    let result;
    try {
      result = JSON.parse(raw.toString('utf8'));
    } catch {
      result = raw.toString('utf8');
    }
    console.log(JSON.stringify({ id, result }));
  });
});

server.listen(port, () => {
  console.error(`listening on http://127.0.0.1:${server.address().port}/callback`);
});
