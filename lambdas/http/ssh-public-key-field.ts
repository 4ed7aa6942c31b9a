/**
 * The SSH public key field (issue 37), shared by create-order's access fields and the caller key's
 * admin bodies, in a module of its own so that an admin route does not bundle create-order's fields.
 */
import * as z from 'zod/mini';
import { parseSshPublicKey } from '../domain/access/order-access';
import { refuse } from './request-fields';

/** One OpenSSH public key line, trimmed (absent or null: undefined); a private key gets PRIVATE_KEY_ERROR. */
/* @__NO_SIDE_EFFECTS__ */
export const sshPublicKeyLine = () =>
  z.pipe(
    z.unknown(),
    z.transform((value, ctx): string | undefined => {
      if (value === undefined || value === null) return undefined;
      const parsed = parseSshPublicKey(value);
      return parsed.ok ? (value as string).trim() : refuse(ctx, parsed.error);
    }),
  );
export const SshPublicKeySchema = sshPublicKeyLine();
