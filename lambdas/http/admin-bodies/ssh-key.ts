/** The body of PUT /admin/keys/{name}/ssh-key (issue 37 §2; one module per admin body). */
import * as z from 'zod/mini';
import { bodyObject, refuse } from '../request-fields';
import { SshPublicKeySchema } from '../ssh-public-key-field';

/** PUT /admin/keys/{name}/ssh-key body (issue 37 §2). */
export const SshKeyBodySchema = bodyObject({
  ssh_public_key: z.pipe(
    SshPublicKeySchema,
    z.transform((line, ctx): string => line ?? refuse(ctx, 'ssh_public_key required')),
  ),
});
