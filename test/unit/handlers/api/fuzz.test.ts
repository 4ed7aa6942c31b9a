/** Random bodies, header spellings and encodings on every signed POST route: never a 5xx, nothing queued unless 202. */
import fc from 'fast-check';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { createCancelOrderHandler } from '../../../../lambdas/handlers/api/cancel-order';
import { createCreateOrderHandler } from '../../../../lambdas/handlers/api/create-order';
import { createPriceAlertHandler } from '../../../../lambdas/handlers/api/price-alert';
import { createStatusHandler } from '../../../../lambdas/handlers/api/status';
import { createSlackCommandHandler } from '../../../../lambdas/handlers/api/slack-command';
import { apiEvent, lambdaContext, sign } from '../../../fixtures/events/api-event';
import { acceptFakes } from '../../../fakes/deps';
import { SECRET } from '../../../fakes/env';

const ROUTES = [
  ['/webhook/create-order', createCreateOrderHandler],
  ['/webhook/cancel-order', createCancelOrderHandler],
  ['/webhook/price-alert', createPriceAlertHandler],
  ['/webhook/status', createStatusHandler],
  ['/slack/command', createSlackCommandHandler],
] as const;

const fieldValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.webUrl(),
  fc.jsonValue({ maxDepth: 2 }),
);
const body = fc.oneof(
  fc
    .record(
      {
        gpu_type: fieldValue,
        max_price: fieldValue,
        use_spot: fieldValue,
        order_id: fieldValue,
        target_price: fieldValue,
        callback_url: fieldValue,
        image: fieldValue,
        env: fieldValue,
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string(),
  fc.constant(''),
);

describe('Fuzz: signed routes', () => {
  it.each(ROUTES)('%s never answers 5xx and queues only what it accepts', async (path, create) => {
    await fc.assert(
      fc.asyncProperty(
        body,
        fc.boolean(),
        fc.constantFrom('x-webhook-signature', 'X-Webhook-Signature', 'X-WEBHOOK-SIGNATURE'),
        fc.constantFrom('valid', 'wrong', 'none'),
        fc.option(fc.string({ maxLength: 210 }), { nil: undefined }),
        async (text, base64, headerName, signing, idempotencyKey) => {
          const { fakes, deps } = acceptFakes({ MAX_REQUESTS_PER_MINUTE: '600' });
          const handler = create(() => deps);
          const headers: Record<string, string> = {};
          if (signing !== 'none') headers[headerName] = sign(signing === 'valid' ? SECRET : 'nope', text);
          if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
          if (path === '/slack/command') headers['content-type'] = 'application/x-www-form-urlencoded';
          const event: APIGatewayProxyEventV2 = apiEvent({ path, body: text, base64, headers });
          const result = (await handler(event, lambdaContext())) as { statusCode: number; body: string };
          expect(result.statusCode).toBeLessThan(500);
          expect(() => JSON.parse(result.body)).not.toThrow();
          const queued = fakes.queue.sent.length + fakes.workflow.started.length;
          const accepted =
            result.statusCode === 202 ||
            (path === '/slack/command' && JSON.parse(result.body).response_type === 'in_channel');
          expect(queued).toBe(accepted ? 1 : 0);
          expect(fakes.tasks.records.size).toBe(queued);
        },
      ),
      { numRuns: 300 },
    );
  });
});
