/** The body of POST /admin/keys (issue 24; one module per admin body, as task-bodies/: a route builds only its own). */
import * as z from 'zod/mini';
import { SCOPES } from '../../../contract/scopes';
import { DEFAULT_KEY_NAME, endOfUtcDay, KEY_NAME_PATTERN } from '../../domain/teams/caller-keys';
import {
  boundText,
  MAX_BUDGET_USD_PER_DAY,
  MAX_ORDERS_PER_HOUR,
  MIN_BUDGET_USD_PER_DAY,
} from '../../domain/requests/number-bounds';
import { bodyObject } from '../request-fields';
import { SshPublicKeySchema } from '../ssh-public-key-field';

const BUDGET_RANGE_TEXT = `budget_usd_per_day must be between ${boundText(MIN_BUDGET_USD_PER_DAY)} and ${MAX_BUDGET_USD_PER_DAY} (USD per day)`;

// Caller keys: issue 24; the rules are in domain/teams/caller-keys.ts.
/** POST /admin/keys body. */
export const CreateKeyBodySchema = bodyObject({
  name: z.string().check(
    z.regex(KEY_NAME_PATTERN, 'name must be 1-64 lower-case letters, digits, - or _, starting with a letter or digit'),
    z.refine((name) => name !== DEFAULT_KEY_NAME, 'name "default" is the shared webhook secret\'s key'),
  ),
  scopes: z
    .array(z.enum(SCOPES, `scopes must name ${SCOPES.join(', ')}`))
    .check(z.minLength(1, 'scopes must name at least one scope')),
  orders_per_hour: z.optional(
    z
      .int('orders_per_hour must be a positive integer')
      .check(
        z.positive('orders_per_hour must be a positive integer'),
        z.lte(MAX_ORDERS_PER_HOUR, `orders_per_hour must be a whole number between 1 and ${MAX_ORDERS_PER_HOUR}`),
      ),
  ),
  budget_usd_per_day: z.optional(
    z
      .number('budget_usd_per_day must be a positive number')
      .check(
        z.positive('budget_usd_per_day must be a positive number'),
        z.gte(MIN_BUDGET_USD_PER_DAY, BUDGET_RANGE_TEXT),
        z.lte(MAX_BUDGET_USD_PER_DAY, BUDGET_RANGE_TEXT),
      ),
  ),
  expires: z.optional(
    z.string().check(z.refine((d) => endOfUtcDay(d) !== undefined, 'expires must be a date YYYY-MM-DD')),
  ),
  slack_user: z.optional(
    z.string().check(z.regex(/^[A-Z0-9]{2,64}$/, 'slack_user must be a Slack user ID like U0123ABC')),
  ),
  // Issue 37 §2: orders by this key that name no ssh_public_key carry this one.
  ssh_public_key: z.optional(SshPublicKeySchema),
});
