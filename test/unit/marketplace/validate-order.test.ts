import { InvalidOrderRequestError } from '../../../lambdas/domain/errors';
import type { CreateOrderRequest } from '../../../lambdas/domain/marketplace-types';
import { validateOrderRequest } from '../../../lambdas/marketplace/validate-order';

const base: CreateOrderRequest = {
  renting_server: 12,
  type: 'spot',
  currency: 'NATIVE-Blockchain',
  image: 'img',
  spotprice: 1.5,
};

describe('Function: validateOrderRequest', () => {
  it('accepts a complete spot request and keeps only the listed fields', () => {
    const request = {
      ...base,
      ports: { '22': 'tcp', '8888': 'http' },
      env: { A: 'b' },
      ssh_password: 'Abc123',
      debug: true,
    } as CreateOrderRequest;
    expect(validateOrderRequest(request)).toEqual({
      ...base,
      ports: { '22': 'tcp', '8888': 'http' },
      env: { A: 'b' },
      ssh_password: 'Abc123',
    });
  });

  it('accepts an on-demand request without spotprice', () => {
    expect(validateOrderRequest({ ...base, type: 'on-demand', spotprice: undefined })).toMatchObject({
      type: 'on-demand',
    });
  });

  it('names every problem in one error', () => {
    const bad = {
      ...base,
      spotprice: undefined,
      ssh_password: 'x'.repeat(40),
      ports: { ssh: 'tcp' },
    } as unknown as CreateOrderRequest;
    const error = (() => {
      try {
        validateOrderRequest(bad);
        return undefined;
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOrderRequestError);
    expect(error?.message).toMatch(/spotprice/);
    expect(error?.message).toMatch(/ssh_password/);
    expect(error?.message).toMatch(/ports/);
    expect(error?.message).not.toContain('x'.repeat(40));
  });

  it('accepts exactly 32 alphanumeric characters as ssh_password', () => {
    expect(() => validateOrderRequest({ ...base, ssh_password: 'aB3'.repeat(10) + 'zz' })).not.toThrow();
    expect(() => validateOrderRequest({ ...base, ssh_password: '' })).toThrow(InvalidOrderRequestError);
  });

  it('never sends an env value holding "&" (production fails the order with HTTP 500 code 1), without echoing the value', () => {
    const error = (() => {
      try {
        validateOrderRequest({ ...base, env: { A: 'b', TOKEN: 'sEcReT&x' } });
        return undefined;
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOrderRequestError);
    expect(error?.message).toBe('invalid create_order request: env.TOKEN: env values must not contain "&"');
    expect(error?.message).not.toContain('sEcReT');
  });
});
