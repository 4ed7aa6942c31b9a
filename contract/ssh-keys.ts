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

/**
 * A cheap first check of a configured key (DEFAULT_SSH_PUBLIC_KEY, at deploy and in every function's
 * environment): one line of a taken type with a base64 blob, and no private key. The request rules
 * (lambdas/domain/access/order-access.ts) parse the blob itself.
 */
export const isPublicKeyLineShape = (line: string): boolean => {
  if (/PRIVATE KEY|PuTTY-User-Key-File/.test(line) || /[\r\n]/.test(line.trim())) return false;
  const [type, blob] = line.trim().split(/[ \t]+/);
  return (
    (SSH_PUBLIC_KEY_TYPES as readonly string[]).includes(type ?? '') &&
    /^[A-Za-z0-9+/]+={0,2}$/.test(blob ?? '') &&
    line.trim().length <= MAX_SSH_PUBLIC_KEY_LENGTH
  );
};
