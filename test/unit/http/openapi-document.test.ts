import { spawnSync } from 'node:child_process';
import Ajv2020 from 'ajv/dist/2020';
import * as z from 'zod/mini';
import { ROUTES } from '../../../contract/routes';
import { buildOpenApiDocument } from '../../../lambdas/http/openapi-document';
import {
  CancelOrderBodySchema,
  CreateOrderBodySchema,
  PriceAlertBodySchema,
  StatusBodySchema,
} from '../../../lambdas/http/requests';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * @seriousme/openapi-schema-validator is ESM-only (it reads its schemas via import.meta.url), which
 * jest's CommonJS runtime cannot load; it runs in a child node process instead.
 */
const validateOpenApi = (doc: unknown): { valid: boolean; errors?: unknown } => {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const result = await new Validator().validate(JSON.parse(input));
    process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors }));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    input: JSON.stringify(doc),
    cwd: process.cwd(),
    encoding: 'utf8',
  });
  if (child.status !== 0) throw new Error(`validator failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as { valid: boolean; errors?: unknown };
};

describe('Function: buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument({ serverUrl: 'https://relay.example.com' }) as Json;

  it('is a valid OpenAPI 3.1 document', () => {
    // Act
    const result = validateOpenApi(doc);
    // Assess
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it('fails validation when broken, so the check above can fail', () => {
    const broken = { ...doc, paths: { ...doc.paths, '/health': { get: { responses: 'nope' } } } };
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it.each(ROUTES.map((r) => [r.method, r.path, r]))(
    'documents %s %s with its signature and rate limit',
    (method, path, route) => {
      const op = doc.paths[path]?.[method.toLowerCase()] as Json;
      expect(op).toBeDefined();
      expect(op.security).toEqual(route.signed ? [{ webhookSignature: [] }] : []);
      expect(op['x-rate-limited']).toBe(route.rateLimited);
      if (route.rateLimited) expect(op.responses['429']).toEqual({ $ref: '#/components/responses/TooManyRequests' });
      if (route.signed) {
        expect(op.responses['401']).toBeDefined();
        expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/WebhookTimestamp' });
      }
    },
  );

  it('documents the signature header as an apiKey security scheme and Retry-After on 429', () => {
    expect(doc.components.securitySchemes.webhookSignature).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-Webhook-Signature',
    });
    expect(doc.components.responses.TooManyRequests.headers['Retry-After']).toEqual({
      $ref: '#/components/headers/RetryAfter',
    });
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header' });
    expect(doc.paths['/webhook/create-order'].post.parameters).toContainEqual({
      $ref: '#/components/parameters/IdempotencyKey',
    });
  });

  it('answers every status the task routes can return, with error bodies', () => {
    const op = doc.paths['/webhook/create-order'].post as Json;
    expect(Object.keys(op.responses).sort()).toEqual(['202', '400', '401', '403', '413', '429', '500', '503']);
    expect(doc.components.responses.BadRequest.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
    expect(doc.components.schemas.Error).toMatchObject({ type: 'object', required: ['error'] });
  });

  it('describes the signed callback of each task route', () => {
    for (const path of ['/webhook/create-order', '/webhook/cancel-order', '/webhook/price-alert', '/webhook/status']) {
      const callback = doc.paths[path].post.callbacks.taskResult['{$request.body#/callback_url}'].post as Json;
      expect(callback.parameters.map((p: Json) => p.name)).toEqual([
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]);
      expect(callback.requestBody.content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/TaskResult',
      });
    }
  });

  it('takes the Slack command as a form and the server URL from the options', () => {
    expect(Object.keys(doc.paths['/slack/command'].post.requestBody.content)).toEqual([
      'application/x-www-form-urlencoded',
    ]);
    expect(doc.servers).toEqual([{ url: 'https://relay.example.com' }]);
    expect((buildOpenApiDocument() as Json).servers).toBeUndefined();
  });

  it('is deterministic', () => {
    expect(JSON.stringify(buildOpenApiDocument({ serverUrl: 'https://relay.example.com' }))).toBe(JSON.stringify(doc));
  });

  describe('request bodies agree with the zod schemas the handlers use', () => {
    // The whole document is one schema resource, so the #/components/schemas/... references resolve.
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(
      { $id: 'https://relay.invalid/openapi.json', components: doc.components },
      'https://relay.invalid/openapi.json',
    );
    const validator = (name: string) =>
      ajv.compile({ $ref: `https://relay.invalid/openapi.json#/components/schemas/${name}` });

    const cases: [string, z.core.$ZodType, unknown[]][] = [
      [
        'CreateOrderRequest',
        CreateOrderBodySchema,
        [
          { gpu_type: 'RTX 4090' },
          {
            gpu_type: 'A100',
            max_price: 0.5,
            use_spot: false,
            image: 'img:1',
            callback_url: 'https://e.com/cb',
            env: { A: 'b' },
          },
          { gpu_type: 'x', max_price: null, image: null },
          {},
          { gpu_type: 5 },
          { gpu_type: 'x', max_price: 'cheap' },
          { gpu_type: 'x', max_price: -1 },
          { gpu_type: 'x', use_spot: 'yes' },
          { gpu_type: 'x', env: { A: 1 } },
        ],
      ],
      [
        'CancelOrderRequest',
        CancelOrderBodySchema,
        [{ order_id: 5 }, { order_id: '12' }, {}, { order_id: 'abc' }, { order_id: 1.5 }, { order_id: 0 }],
      ],
      [
        'PriceAlertRequest',
        PriceAlertBodySchema,
        [
          { gpu_type: 'A100', target_price: 1 },
          { gpu_type: 'A100' },
          { target_price: 1 },
          { gpu_type: 'A', target_price: 0 },
        ],
      ],
      ['StatusRequest', StatusBodySchema, [{}, { callback_url: 'http://127.0.0.1:9/cb' }, { callback_url: 5 }]],
    ];

    it.each(cases)('%s accepts exactly what zod accepts', (name, schema, bodies) => {
      const validate = validator(name);
      for (const body of bodies) {
        expect({ body, documented: validate(body) }).toEqual({ body, documented: z.safeParse(schema, body).success });
      }
    });
  });
});
