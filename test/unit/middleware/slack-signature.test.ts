import { createHmac } from 'node:crypto';
import middy from '@middy/core';
import { decodeBody } from '../../../lambdas/middleware/body';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { UNSIGNED_SLACK_REFUSED_MESSAGE, verifySlackSignature } from '../../../lambdas/middleware/slack-signature';
import { apiEvent, lambdaContext } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const NOW = 1_531_420_618_000;
const TS = '1531420618';
const slackSign = (body: string | Buffer, ts = TS, secret = SECRET) =>
  `v0=${createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`v0:${ts}:`), Buffer.from(body)]))
    .digest('hex')}`;

const run = async (event: RelayEvent, secret: string | undefined, allowUnsigned?: boolean) => {
  const handler = middy<RelayEvent>()
    .use(decodeBody())
    .use(
      verifySlackSignature({
        secret: async () => secret,
        now: () => NOW,
        ...(allowUnsigned !== undefined ? { allowUnsigned: () => allowUnsigned } : {}),
      }),
    )
    .use(errorHandler())
    .handler(async () => ({ statusCode: 204, body: '' }));
  return parseResult(await handler(event, lambdaContext()));
};

describe('Middleware: verifySlackSignature', () => {
  const body = 'token=x&command=%2Fgpu&text=status';

  it('accepts a valid v0 signature over a base64-encoded form body', async () => {
    const event = apiEvent({
      body,
      base64: true,
      headers: { 'x-slack-signature': slackSign(body), 'x-slack-request-timestamp': TS },
    });
    expect((await run(event, SECRET)).statusCode).toBe(204);
  });

  it("matches the example from Slack's documentation", async () => {
    // The worked example in Slack's "Verifying requests from Slack" guide.
    const doc =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const event = apiEvent({
      body: doc,
      base64: true,
      headers: {
        'X-Slack-Signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
        'X-Slack-Request-Timestamp': TS,
      },
    });
    expect((await run(event, SECRET)).statusCode).toBe(204);
  });

  it.each([
    ['a forged signature', { 'x-slack-signature': slackSign(body, TS, 'wrong'), 'x-slack-request-timestamp': TS }],
    ['a missing signature', { 'x-slack-request-timestamp': TS }],
    ['a missing timestamp', { 'x-slack-signature': slackSign(body) }],
    [
      'a stale timestamp',
      { 'x-slack-signature': slackSign(body, '1531420000'), 'x-slack-request-timestamp': '1531420000' },
    ],
    [
      'an unknown version',
      { 'x-slack-signature': slackSign(body).replace('v0=', 'v1='), 'x-slack-request-timestamp': TS },
    ],
  ])('returns 401 for %s', async (_name, headers) => {
    const result = await run(apiEvent({ body, base64: true, headers }), SECRET);
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid Slack signature' } });
  });

  it('checks a mismatch once more against the secret read past the cache (regenerated in Slack)', async () => {
    const reads: boolean[] = [];
    const handler = middy<RelayEvent>()
      .use(decodeBody())
      .use(
        verifySlackSignature({
          secret: async (read) => {
            reads.push(read?.fresh === true);
            return read?.fresh ? 'regenerated' : SECRET;
          },
          now: () => NOW,
        }),
      )
      .use(errorHandler())
      .handler(async () => ({ statusCode: 204, body: '' }));
    const call = async (secret: string) =>
      parseResult(
        await handler(
          apiEvent({
            body,
            base64: true,
            headers: { 'x-slack-signature': slackSign(body, TS, secret), 'x-slack-request-timestamp': TS },
          }),
          lambdaContext(),
        ),
      );
    expect((await call('regenerated')).statusCode).toBe(204);
    expect(reads).toEqual([false, true]);
    expect((await call(SECRET)).statusCode).toBe(204);
    expect(reads).toEqual([false, true, false]); // a match needs no second read
    expect(await call('forged')).toMatchObject({ statusCode: 401, body: { error: 'Invalid Slack signature' } });
  });

  it('lets everything through when no signing secret is configured and unsigned commands are allowed (the spec)', async () => {
    expect((await run(apiEvent({ body, base64: true }), undefined, true)).statusCode).toBe(204);
  });

  it.each([
    ['by default', undefined],
    ['with allowUnsigned false', false],
  ])('refuses with 403 when no signing secret is configured, %s', async (_name, allowUnsigned) => {
    const signed = apiEvent({
      body,
      base64: true,
      headers: { 'x-slack-signature': slackSign(body), 'x-slack-request-timestamp': TS },
    });
    for (const event of [apiEvent({ body, base64: true }), signed]) {
      expect(await run(event, undefined, allowUnsigned)).toMatchObject({
        statusCode: 403,
        body: { error: UNSIGNED_SLACK_REFUSED_MESSAGE },
      });
    }
    expect(await run(apiEvent({ body, base64: true }), '', allowUnsigned)).toMatchObject({ statusCode: 403 });
  });
});
