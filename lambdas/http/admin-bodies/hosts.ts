/** The body of POST /admin/hosts/{server_id}/avoid (issue 31 §2; one module per admin body). */
import * as z from 'zod/mini';
import { MIN_HOURS, minHoursText } from '../../domain/requests/number-bounds';
import { bodyObject } from '../request-fields';

/** POST /admin/hosts/{server_id}/avoid (issue 31 §2): for how long and why; both optional. */
export const AvoidHostBodySchema = bodyObject({
  hours: z.optional(
    z
      .number('hours must be a number greater than 0 and at most 720')
      .check(
        z.positive('hours must be a number greater than 0 and at most 720'),
        z.gte(MIN_HOURS, minHoursText('hours')),
        z.lte(720, 'hours must be a number greater than 0 and at most 720'),
      ),
  ),
  reason: z.optional(
    z
      .string('reason must be a text of at most 200 characters')
      .check(z.maxLength(200, 'reason must be a text of at most 200 characters')),
  ),
});
