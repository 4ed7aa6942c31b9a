/**
 * The worked example of signature v2 in docs/api.md ("Signing a request"): fixed secret, timestamp,
 * route and body → the signature hex the page shows. The relay's signer, the CLI's and each file in
 * examples/ (Node, curl + openssl, Python; GPU_RELAY_DRY_RUN=1 prints the headers instead of sending)
 * reproduce it byte for byte.
 */
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { signatureV2 } from '../../../lambdas/domain/signing';
import { hmacHex, signedBytesV2 } from '../../../cli/signed-request';

const ROOT = path.resolve(__dirname, '../../..');
const SECRET = 'example-secret';
const TIMESTAMP = '1700000000';
const ROUTE = '/webhook/create-order';
const BODY = '{"gpu_type":"RTX 4090","max_price":0.5}';
const SIGNED = `v2.1700000000.POST./webhook/create-order.{"gpu_type":"RTX 4090","max_price":0.5}`;
const SIGNATURE = 'v2=9ff10db919ea09a300dbfcd0c1a4a58084b27fafe08b9b82c508e46b08fc8c7b';
const HEADERS = `X-Webhook-Timestamp: ${TIMESTAMP}\nX-Webhook-Signature: ${SIGNATURE}\n`;

const runs = (command: string, arg: string): boolean => spawnSync(command, [arg]).status === 0;

describe('Signature v2: the worked example of docs/api.md', () => {
  const page = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');

  it('is on the page: the signed bytes and the signature', () => {
    expect(page).toContain(SIGNED);
    expect(page).toContain(`X-Webhook-Signature: ${SIGNATURE}`);
    expect(page).toContain(`secret\n  \`${SECRET}\``);
  });

  it('is what HMAC-SHA256 of the signed bytes gives (computed here, independently)', () => {
    expect(`v2=${createHmac('sha256', SECRET).update(SIGNED, 'utf8').digest('hex')}`).toBe(SIGNATURE);
  });

  it("is what the relay's signer and the CLI's give", () => {
    expect(signatureV2(SECRET, TIMESTAMP, 'POST', ROUTE, BODY)).toBe(SIGNATURE);
    expect(`v2=${hmacHex(SECRET, signedBytesV2(TIMESTAMP, 'POST', ROUTE, Buffer.from(BODY)))}`).toBe(SIGNATURE);
  });

  const examples: [string, string, string][] = [
    ['examples/sign-request.mjs', process.execPath, 'examples/sign-request.mjs'],
    ['examples/sign-request.sh', 'bash', 'examples/sign-request.sh'],
    ['examples/sign_request.py', 'python3', 'examples/sign_request.py'],
  ];
  it.each(examples)('%s prints exactly its headers', (_name, command, file) => {
    if (command === 'bash' ? !runs('openssl', 'version') : command === 'python3' && !runs('python3', '--version')) {
      // The e2e examples test needs them too; the Node example is always checked.
      return;
    }
    const out = spawnSync(command, [path.join(ROOT, file), ROUTE, BODY], {
      env: {
        PATH: process.env.PATH ?? '',
        GPU_RELAY_URL: 'http://127.0.0.1:9',
        GPU_RELAY_SECRET: SECRET,
        GPU_RELAY_TIMESTAMP: TIMESTAMP,
        GPU_RELAY_DRY_RUN: '1',
      },
      encoding: 'utf8',
    });
    expect({ code: out.status, stdout: out.stdout }).toEqual({ code: 0, stdout: HEADERS });
  });
});
