/**
 * The access fields of create-order (issue 37 §1) and the caller key's SSH key (§2): how a caller
 * gets into its order. The rules are in lambdas/domain/access/order-access.ts. No error text ever
 * holds a value (a pasted private key, a password): each names the field and the rule.
 */
import * as z from 'zod/mini';
import {
  COMMAND_ERROR,
  commandBytes,
  JUPYTER_TOKEN_ERROR,
  JUPYTER_TOKEN_PATTERN,
  MAX_COMMAND_BYTES,
  MAX_PORTS,
  MAX_SSH_PUBLIC_KEY_LENGTH,
  PORTS_ERROR,
  portsProblem,
  SSH_PASSWORD_ERROR,
  SSH_PASSWORD_PATTERN,
} from '../domain/access/order-access';
import type { PortProtocol } from '../domain/marketplace-types';
import { describe, refuse } from './request-fields';
import { sshPublicKeyLine } from './ssh-public-key-field';

/** A field whose value must match `pattern` (a string), else `error`; the value is never part of the text. */
/* @__NO_SIDE_EFFECTS__ */
const secretField = (pattern: RegExp, error: string, meta: Record<string, unknown>) =>
  describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): string | undefined => {
        if (value === undefined || value === null) return undefined;
        return typeof value === 'string' && pattern.test(value) ? value : refuse(ctx, error);
      }),
    ),
    { type: 'string', ...meta },
  );

/** The access fields of create-order (issue 37 §1): how the caller gets into the order. */
const accessFields = {
  // Its own instance: describe registers the metadata on the schema it is given.
  ssh_public_key: describe(sshPublicKeyLine(), {
    type: 'string',
    maxLength: MAX_SSH_PUBLIC_KEY_LENGTH,
    description:
      'One OpenSSH public key line (`ssh-ed25519`, `ecdsa-sha2-nistp256/384/521`, `sk-ssh-ed25519@openssh.com`, `ssh-rsa` of at least 2048 bits; comment allowed), ' +
      "installed for root (the marketplace's `ssh_key`, sent with `autossh_entrypoint: true`). Default: the caller key's stored key (`PUT /admin/keys/{name}/ssh-key`), " +
      'for the shared secret DEFAULT_SSH_PUBLIC_KEY. A private key is refused: 400 `ssh_public_key is a private key: send the line of the .pub file`.',
  }),
  ssh_password: secretField(SSH_PASSWORD_PATTERN, SSH_PASSWORD_ERROR, {
    pattern: SSH_PASSWORD_PATTERN.source,
    description:
      "root's password in the container (12-32 letters and digits); the readiness login uses it. Sealed at rest, never shown. " +
      'Absent: the relay sets a password of its own, which no caller sees (log in with the key).',
  }),
  jupyter_token: secretField(JUPYTER_TOKEN_PATTERN, JUPYTER_TOKEN_ERROR, {
    pattern: JUPYTER_TOKEN_PATTERN.source,
    description:
      'The Jupyter token (16-32 letters and digits). When the order maps an http port and none is given, the relay generates one (32 letters and digits); ' +
      "it is sealed at rest and shown only in the signed result (`access.jupyter.token`) and to the task's own key.",
  }),
  ports: describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): Readonly<Record<string, PortProtocol>> | undefined => {
        if (value === undefined || value === null) return undefined;
        if (typeof value !== 'object' || Array.isArray(value)) return refuse(ctx, PORTS_ERROR);
        const problem = portsProblem(value as Record<string, unknown>);
        return problem ? refuse(ctx, problem) : (value as Record<string, PortProtocol>);
      }),
    ),
    {
      type: 'object',
      maxProperties: MAX_PORTS,
      additionalProperties: { type: 'string', enum: ['tcp', 'http'] },
      description:
        'Container port → `tcp` | `http` (at most 16). Replaces DEFAULT_PORTS; `22` (tcp) is added when the order carries an SSH key or password.',
    },
  ),
  command: describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): string | undefined => {
        if (value === undefined || value === null) return undefined;
        return typeof value === 'string' && value.length > 0 && commandBytes(value) <= MAX_COMMAND_BYTES
          ? value
          : refuse(ctx, COMMAND_ERROR);
      }),
    ),
    {
      type: 'string',
      description: `A start-up script the container runs (the marketplace's \`command\`), at most ${MAX_COMMAND_BYTES} bytes; sealed at rest like the password.`,
    },
  ),
};

/** The access fields, each optional (absent or null: not given). */
export const AccessFields = {
  ssh_public_key: z.optional(accessFields.ssh_public_key),
  ssh_password: z.optional(accessFields.ssh_password),
  jupyter_token: z.optional(accessFields.jupyter_token),
  ports: z.optional(accessFields.ports),
  command: z.optional(accessFields.command),
};
