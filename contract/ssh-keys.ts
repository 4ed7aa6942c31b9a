/**
 * The public key lines the relay takes (issue 37 §1), shared by the request rules
 * (lambdas/domain/access/order-access.ts) and the CLI's checks of a .pub file before sending.
 */

/** Key types taken; ssh-rsa needs at least SSH_RSA_MIN_BITS. */
export const SSH_PUBLIC_KEY_TYPES = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'ssh-rsa',
] as const;
export type SshPublicKeyType = (typeof SSH_PUBLIC_KEY_TYPES)[number];

export const SSH_RSA_MIN_BITS = 2048;

/** Longest line: one client's cap, the only one recorded (the marketplace's own is not published). */
export const MAX_SSH_PUBLIC_KEY_LENGTH = 3072;
