/**
 * Checks a create_order request before it is sent (marketplace-api.md §4.1, §8), so an input the
 * marketplace would reject never costs a paced call, and never leaves an order's outcome unclear.
 */
import * as z from 'zod/mini';
import { PortsSchema } from '../../contract/shapes';
import { InvalidOrderRequestError } from '../domain/errors';
import type { CreateOrderRequest } from '../domain/marketplace-types';
import { ENV_AMPERSAND_ERROR, isSendableEnvValue } from '../domain/requests/request-rules';
import { ENGLISH_TEXTS } from '../domain/zod-texts';
import { commandBytes, MAX_COMMAND_BYTES, MAX_SSH_PUBLIC_KEY_LENGTH } from '../domain/access/order-access';

let schema: ReturnType<typeof buildCreateOrderRequestSchema> | undefined;

/** The create_order body's schema, built on first use (issue 40 §1): only PlaceOrder sends one. */
export const CreateOrderRequestSchema = (): ReturnType<typeof buildCreateOrderRequestSchema> =>
  (schema ??= buildCreateOrderRequestSchema());

const buildCreateOrderRequestSchema = () =>
  z.object({
    renting_server: z.int().check(z.nonnegative()),
    type: z.enum(['on-demand', 'spot']),
    currency: z.string().check(z.minLength(1)),
    image: z.string().check(z.minLength(1)),
    ports: z.optional(PortsSchema),
    // Production fails the whole order (HTTP 500 code 1) for one such value: never sent, never retried.
    env: z.optional(
      z.record(z.string().check(z.minLength(1)), z.string().check(z.refine(isSendableEnvValue, ENV_AMPERSAND_ERROR))),
    ),
    ssh_password: z.optional(
      z.string().check(z.regex(/^[A-Za-z0-9]{1,32}$/, 'ssh_password must be alphanumeric, at most 32 characters')),
    ),
    spotprice: z.optional(z.number().check(z.positive())),
    // Access (issue 37; marketplace-live.md "Fourth round", S13, S14): the key line, the token, the script.
    ssh_key: z.optional(
      z
        .string()
        .check(z.minLength(1), z.maxLength(MAX_SSH_PUBLIC_KEY_LENGTH, 'ssh_key must be at most 3072 characters')),
    ),
    autossh_entrypoint: z.optional(z.boolean()),
    jupyter_token: z.optional(
      z.string().check(z.regex(/^[A-Za-z0-9]{1,32}$/, 'jupyter_token must be alphanumeric, at most 32 characters')),
    ),
    command: z.optional(
      z.string().check(z.refine((c) => commandBytes(c) <= MAX_COMMAND_BYTES, 'command must be at most 16 KiB')),
    ),
  });

/**
 * Returns the request reduced to the fields the API lists; throws InvalidOrderRequestError naming
 * every problem. The message never echoes values (ssh_password is a secret).
 */
export const validateOrderRequest = (request: CreateOrderRequest): CreateOrderRequest => {
  const parsed = CreateOrderRequestSchema().safeParse(request, ENGLISH_TEXTS);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`);
  // Checked apart from the schema so it is reported together with any other problem.
  if (request?.type === 'spot' && request.spotprice === undefined)
    problems.push('spotprice: required for a spot order');
  if (!parsed.success || problems.length > 0) {
    throw new InvalidOrderRequestError(`invalid create_order request: ${problems.join('; ')}`);
  }
  return parsed.data;
};
