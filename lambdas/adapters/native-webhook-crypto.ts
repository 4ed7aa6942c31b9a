/**
 * Stand in for the two pure-JavaScript primitives `standardwebhooks` depends on, inside the Lambda
 * bundles only (esbuild aliases in lib/constructs/relay-bundling.ts): `fast-sha256`'s `hmac` and
 * `@stablelib/base64`'s `encode`/`decode`, answered by Node's native crypto and Buffer. The Standard
 * Webhooks scheme itself (what is signed, the header format, verification) stays the package's
 * `Webhook`; only the hash and base64 code is not bundled twice (Node has both), which keeps the job
 * worker inside its 400 KB budget (BENCHMARKS.md §7). test/unit/adapters/bundle-stand-ins.test.ts
 * checks that signatures are byte for byte those of the real modules.
 *
 * Only bundles see this module: jest, `npm start` and the CDK app import the real ones.
 */
import { createHmac } from 'node:crypto';

/** HMAC-SHA256 of `data` keyed with `key` (fast-sha256's `hmac`). */
export const hmac = (key: Uint8Array, data: Uint8Array): Uint8Array =>
  new Uint8Array(createHmac('sha256', key).update(data).digest());

/** Standard base64 with padding (@stablelib/base64's `encode`). */
export const encode = (data: Uint8Array): string =>
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');

/**
 * Standard base64 (@stablelib/base64's `decode`). Strict like the original: anything but the base64
 * alphabet with correct padding throws, so a malformed secret is refused rather than read leniently.
 */
export const decode = (text: string): Uint8Array => {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text))
    throw new Error('Base64Coder: incorrect characters for decoding');
  return new Uint8Array(Buffer.from(text, 'base64'));
};
