import * as z from 'zod/mini';
import { AcceptedSchema } from '../../../lambdas/http/response-schemas';
import { normalizeCreateOrder, normalizePriceAlert } from '../../../lambdas/domain/requests/request-rules';
import {
  CancelOrderBodySchema,
  CancelTaskBodySchema,
  callbackUrlProblem,
  CreateKeyBodySchema,
  CreateOrderBodySchema,
  CreateOrderLeaseBodySchema,
  ExtendOrderBodySchema,
  EXCLUDE_SERVERS_ERROR,
  parseBody,
  PriceAlertBodySchema,
  SetSpotPriceBodySchema,
  StatusBodySchema,
} from '../../../lambdas/http/requests';

const errorOf = (schema: z.core.$ZodType, body: unknown) => {
  const outcome = parseBody(schema, body);
  return outcome.ok ? undefined : outcome.error;
};

const DEFAULTS = {
  image: 'nvidia/cuda:12',
  currency: 'NATIVE-Blockchain',
  ports: { '22': 'tcp', '8888': 'http' },
} as const;

describe('Function: parseBody (create-order)', () => {
  it.each([
    [{}],
    [{ gpu_type: '' }],
    [{ gpu_type: '   ' }],
    [{ gpu_type: 42 }],
    [{ gpu_type: null }],
    [{ gpu_type: ['A100'] }],
  ])('returns gpu_type required for %j', (body) => {
    expect(errorOf(CreateOrderBodySchema, body)).toBe('gpu_type required');
  });

  it.each([
    [{ gpu_type: 'A100', max_price: 'abc' }, 'max_price must be a number'],
    [{ gpu_type: 'A100', max_price: '1.5' }, 'max_price must be a number'],
    [{ gpu_type: 'A100', max_price: 0 }, 'max_price must be a positive number'],
    [{ gpu_type: 'A100', max_price: -1 }, 'max_price must be a positive number'],
    [{ gpu_type: 'A100', use_spot: 'yes' }, 'use_spot must be a boolean'],
    [{ gpu_type: 'A100', use_spot: 1 }, 'use_spot must be a boolean'],
    [{ gpu_type: 'A100', image: 5 }, 'image must be a string'],
    [{ gpu_type: 'A100', image: ' ' }, 'image must not be empty'],
    [{ gpu_type: 'A100', callback_url: 'ftp://example.com/x' }, 'callback_url must be an absolute http(s) URL'],
    [{ gpu_type: 'A100', callback_url: '/relative' }, 'callback_url must be an absolute http(s) URL'],
    [{ gpu_type: 'A100', callback_url: 12 }, 'callback_url must be an absolute http(s) URL'],
    [{ gpu_type: 'x'.repeat(101) }, 'gpu_type must be at most 100 characters'],
    [{ gpu_type: 'A100', env: { 'BAD-NAME': 'x' } }, 'env names must be letters, digits and _'],
    [{ gpu_type: 'A100', env: { OK: 1 } }, 'env values must be strings'],
    [{ gpu_type: 'A100', env: 'A=1' }, 'env must be an object of strings'],
    // Production answers HTTP 500 code 1 to any env value with `&` (marketplace-live.md, S6).
    [{ gpu_type: 'A100', env: { OK: 'fine', URL: 'https://x.example/?a=1&b=2' } }, 'env values must not contain "&"'],
    [{ gpu_type: 'A100', env: { AMP: '&' } }, 'env values must not contain "&"'],
  ])('rejects %j with "%s"', (body, message) => {
    expect(errorOf(CreateOrderBodySchema, body)).toBe(message);
  });

  it('accepts a full body, trims gpu_type and treats null as absent', () => {
    const outcome = parseBody(CreateOrderBodySchema, {
      gpu_type: ' RTX 4090 ',
      max_price: 0.5,
      image: 'img',
      use_spot: false,
      callback_url: 'https://example.com/cb',
      env: { A: '1' },
    });
    expect(outcome).toEqual({
      ok: true,
      value: {
        gpu_type: 'RTX 4090',
        max_price: 0.5,
        image: 'img',
        use_spot: false,
        callback_url: 'https://example.com/cb',
        env: { A: '1' },
      },
    });
    const nulls = parseBody(CreateOrderBodySchema, {
      gpu_type: 'A100',
      max_price: null,
      image: null,
      use_spot: null,
      callback_url: null,
    });
    expect(nulls.ok && normalizeCreateOrder(nulls.value, DEFAULTS)).toEqual({
      gpu_type: 'A100',
      image: 'nvidia/cuda:12',
      currency: 'NATIVE-Blockchain',
      ports: DEFAULTS.ports,
      use_spot: true,
    });
  });
});

describe('Unknown body fields (issue 29)', () => {
  it.each([
    ['create-order', CreateOrderLeaseBodySchema, { gpu_type: 'A100', max_price_typo: 1 }, 'max_price_typo'],
    ['cancel-order', CancelOrderBodySchema, { order_id: 5, hours: 2 }, 'hours'],
    ['extend-order', ExtendOrderBodySchema, { order_id: 5, hours: 2, desired_price: 3 }, 'desired_price'],
    ['set-spot-price', SetSpotPriceBodySchema, { order_id: 5, desired_price: 3, hours: 1 }, 'hours'],
    ['price-alert', PriceAlertBodySchema, { gpu_type: 'A100', target_price: 1, order_id: 5 }, 'order_id'],
    ['status', StatusBodySchema, { order_id: 5 }, 'order_id'],
    ['cancel-task', CancelTaskBodySchema, { task_id: '6f1c0d9e-1111-4222-8333-444455556666', x: 1 }, 'x'],
    ['admin keys create', CreateKeyBodySchema, { name: 'ci', scopes: ['read'], admin: true }, 'admin'],
  ] as const)('%s refuses `unknown field <name>`, naming the first unknown field', (_route, schema, body, field) => {
    expect(parseBody(schema, body)).toEqual({ ok: false, error: `unknown field ${field}` });
  });

  it("reports a field's own problem before an unknown field (the spec's texts first)", () => {
    expect(parseBody(CancelOrderBodySchema, { hours: 2 })).toEqual({ ok: false, error: 'order_id required' });
  });
});

describe('Function: parseBody (cancel-order)', () => {
  it.each([[{}], [{ order_id: 0 }], [{ order_id: '' }], [{ order_id: null }], [{ order_id: false }]])(
    'returns order_id required for %j',
    (body) => {
      expect(errorOf(CancelOrderBodySchema, body)).toBe('order_id required');
    },
  );

  it.each([
    [{ order_id: '12x' }],
    [{ order_id: 1.5 }],
    [{ order_id: true }],
    [{ order_id: [1] }],
    [{ order_id: ' 12' }],
    [{ order_id: '1e3' }],
    [{ order_id: 2 ** 60 }],
  ])('returns order_id must be an integer for %j', (body) => {
    expect(errorOf(CancelOrderBodySchema, body)).toBe('order_id must be an integer');
  });

  it('rejects zero-valued strings and negatives as not positive', () => {
    expect(errorOf(CancelOrderBodySchema, { order_id: '0' })).toBe('order_id must be a positive integer');
    expect(errorOf(CancelOrderBodySchema, { order_id: -4 })).toBe('order_id must be a positive integer');
  });

  it('accepts an integer or a string of digits', () => {
    expect(parseBody(CancelOrderBodySchema, { order_id: 12 })).toEqual({ ok: true, value: { order_id: 12 } });
    expect(parseBody(CancelOrderBodySchema, { order_id: '0012', callback_url: 'http://example.com' })).toEqual({
      ok: true,
      value: { order_id: 12, callback_url: 'http://example.com' },
    });
  });
});

describe('Function: parseBody (price-alert, status)', () => {
  it.each([
    [{}],
    [{ gpu_type: 'A100' }],
    [{ target_price: 1 }],
    [{ gpu_type: '', target_price: 1 }],
    [{ gpu_type: 'A100', target_price: null }],
  ])('returns gpu_type and target_price required for %j', (body) => {
    expect(errorOf(PriceAlertBodySchema, body)).toBe('gpu_type and target_price required');
  });

  it('names target_price when it has the wrong type or sign', () => {
    expect(errorOf(PriceAlertBodySchema, { gpu_type: 'A100', target_price: 'cheap' })).toBe(
      'target_price must be a number',
    );
    expect(errorOf(PriceAlertBodySchema, { gpu_type: 'A100', target_price: -1 })).toBe(
      'target_price must be a positive number',
    );
  });

  it('fills the configured image', () => {
    const outcome = parseBody(PriceAlertBodySchema, { gpu_type: 'A100', target_price: 0.4 });
    expect(outcome.ok && normalizePriceAlert(outcome.value, DEFAULTS)).toEqual({
      gpu_type: 'A100',
      target_price: 0.4,
      image: 'nvidia/cuda:12',
    });
  });

  it('accepts an empty status body and validates its callback_url', () => {
    expect(parseBody(StatusBodySchema, {})).toEqual({ ok: true, value: {} });
    expect(errorOf(StatusBodySchema, { callback_url: 'nope' })).toBe('callback_url must be an absolute http(s) URL');
  });
});

describe('Function: normalizeCreateOrder', () => {
  it('applies defaults: configured image, currency, ports, use_spot true', () => {
    expect(normalizeCreateOrder({ gpu_type: 'A100' }, DEFAULTS)).toEqual({
      gpu_type: 'A100',
      image: 'nvidia/cuda:12',
      currency: 'NATIVE-Blockchain',
      ports: DEFAULTS.ports,
      use_spot: true,
    });
  });

  it('keeps what the caller set', () => {
    expect(
      normalizeCreateOrder(
        { gpu_type: 'A100', max_price: 2, image: 'mine', use_spot: false, callback_url: 'https://x.example' },
        DEFAULTS,
      ),
    ).toMatchObject({
      max_price: 2,
      image: 'mine',
      use_spot: false,
      callback_url: 'https://x.example',
    });
  });
});

describe('Function: callbackUrlProblem', () => {
  it('refuses private and loopback literals unless private callbacks are allowed', () => {
    expect(callbackUrlProblem('http://127.0.0.1:9000/cb', false)).toBe(
      'callback_url must not point at a private, loopback or reserved address',
    );
    expect(callbackUrlProblem('http://169.254.169.254/latest', false)).toMatch(/^callback_url must not/);
    expect(callbackUrlProblem('http://localhost/cb', false)).toBe('callback_url must not point at localhost');
    expect(callbackUrlProblem('http://127.0.0.1:9000/cb', true)).toBeUndefined();
  });

  it('always requires an absolute http(s) URL', () => {
    expect(callbackUrlProblem('file:///etc/passwd', true)).toBe('callback_url must be an absolute http(s) URL');
    expect(callbackUrlProblem('https://hooks.example.com/x', false)).toBeUndefined();
    expect(callbackUrlProblem(undefined, false)).toBeUndefined();
  });
});

describe('Response schemas', () => {
  it('generate JSON Schema for the OpenAPI document', () => {
    const schema = z.toJSONSchema(CreateOrderBodySchema, { io: 'input', unrepresentable: 'any' }) as {
      required?: string[];
      properties: Record<string, unknown>;
    };
    expect(schema.required).toEqual(['gpu_type']);
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['gpu_type', 'max_price', 'image', 'use_spot', 'callback_url']),
    );
    const cancel = z.toJSONSchema(CancelOrderBodySchema, { io: 'input', unrepresentable: 'any' }) as unknown as {
      properties: { order_id: { anyOf?: unknown[] } };
    };
    expect(cancel.properties.order_id.anyOf).toHaveLength(2);
    expect(AcceptedSchema.safeParse({ status: 'queued', task_id: 't', message: 'm' }).success).toBe(true);
  });
});

describe('Host filters and prefer (issue 31)', () => {
  it.each([
    [{ min_reliability: 1.5 }, 'min_reliability must be a number between 0 and 1'],
    [{ min_reliability: -0.1 }, 'min_reliability must be a number between 0 and 1'],
    [{ min_reliability: '0.9' }, 'min_reliability must be a number between 0 and 1'],
    [{ min_rating: 6 }, 'min_rating must be a number between 0 and 5'],
    [{ min_rating_count: 0 }, 'min_rating_count must be a whole number between 1 and 1000000'],
    [{ min_rating_count: 2.5 }, 'min_rating_count must be a whole number between 1 and 1000000'],
    [{ exclude_servers: [1, 'x'] }, EXCLUDE_SERVERS_ERROR],
    [{ exclude_servers: Array.from({ length: 101 }, (_, i) => i + 1) }, EXCLUDE_SERVERS_ERROR],
    [{ prefer: 'fastest' }, 'prefer must be one of first, cheapest, reliable'],
  ])('refuses %j with the field and its range', (fields, message) => {
    expect(errorOf(CreateOrderLeaseBodySchema, { gpu_type: 'A100', ...fields })).toBe(message);
  });

  it('refuses out-of-range filters on price-alert too', () => {
    expect(errorOf(PriceAlertBodySchema, { gpu_type: 'A100', target_price: 1, min_rating: 9 })).toBe(
      'min_rating must be a number between 0 and 5',
    );
  });

  it('completes a request with the relay defaults; min_rating_count is 1 when a rating floor applies', () => {
    const body = parseBody(CreateOrderLeaseBodySchema, {
      gpu_type: 'A100',
      min_rating: 4.5,
      exclude_servers: [7, 7, 9],
    });
    if (!body.ok) throw new Error(body.error);
    expect(normalizeCreateOrder(body.value, { ...DEFAULTS, minReliability: 0.98, prefer: 'cheapest' })).toMatchObject({
      min_reliability: 0.98,
      min_rating: 4.5,
      min_rating_count: 1,
      exclude_servers: [7, 9],
      prefer: 'cheapest',
    });
    // Nothing set anywhere: no filter, `first` (absent)
    const plain = normalizeCreateOrder({ gpu_type: 'A100' }, { ...DEFAULTS, prefer: 'first' });
    expect(plain).not.toHaveProperty('min_reliability');
    expect(plain).not.toHaveProperty('min_rating_count');
    expect(plain).not.toHaveProperty('prefer');
    expect(normalizePriceAlert({ gpu_type: 'A100', target_price: 1 }, { image: 'i', minRatingCount: 3 })).toMatchObject(
      {
        min_rating_count: 3,
      },
    );
  });
});
