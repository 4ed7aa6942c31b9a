/**
 * The form of POST /slack/command, in a module of its own: the Slack function parses it, and
 * importing it from response-schemas.ts built every response schema of the OpenAPI document (and
 * the task view's) at each of its cold starts.
 */
import * as z from 'zod/mini';
import { MAX_URL_LENGTH } from './request-fields';

/** The form fields Slack posts to a slash-command URL (others are ignored). */
export const SlackCommandFormSchema = z.object({
  text: z.optional(z.string().check(z.maxLength(2000))),
  command: z.optional(z.string().check(z.maxLength(100))),
  response_url: z.optional(z.string().check(z.maxLength(MAX_URL_LENGTH))),
  user_id: z.optional(z.string().check(z.maxLength(100))),
});
