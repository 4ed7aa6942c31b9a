/**
 * The order's ssh_password under READINESS_PROBE=ssh-login (issue 31 §4): derived from the task id
 * with an HMAC keyed by the relay's ssh password secret (issue 38 §4: its own secret, readable by
 * PlaceOrder and CheckOrder only; until then the marketplace API key, which eight functions read), so
 * PlaceOrder (which sends it with create_order) and CheckOrder (which logs in with it) agree without
 * storing it anywhere: never in the workflow input, the task record or a log. 32 alphanumeric
 * characters, the marketplace's limit.
 */
import { createHmac } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export const orderSshPassword = (secret: string, taskId: string): string => {
  const digest = createHmac('sha256', secret).update(`ssh-password:${taskId}`, 'utf8').digest();
  return Array.from(digest, (byte) => ALPHABET[byte % ALPHABET.length]).join('');
};

/**
 * Names a version of the ssh password secret without disclosing it: 12 hex digits of an HMAC with a
 * fixed label (48 bits of a keyed hash say nothing usable about a 64-character key). PlaceOrder
 * records it with the placement, so CheckOrder derives the password from the same version after a
 * rotation (AWSCURRENT or AWSPREVIOUS), with one login attempt instead of one per version.
 */
export const sshPasswordKeyId = (secret: string): string =>
  createHmac('sha256', secret).update('ssh-password-key-id', 'utf8').digest('hex').slice(0, 12);

/** The relay's own password of an order, and the key id of the secret version it was derived from. */
export interface RelaySshPassword {
  readonly password: string;
  readonly key_id: string;
}

/** The relay's own passwords (ports): what PlaceOrder sends, what CheckOrder logs in with. */
export interface RelaySshPasswords {
  /** The password PlaceOrder sends: derived from the current version of the secret. */
  forOrder(taskId: string): Promise<RelaySshPassword>;
  /**
   * The password CheckOrder logs in with: derived from the version `keyId` names (the current one
   * when no version matches, e.g. after two rotations within a readiness window). Without a key id
   * the order was placed before issue 38 and was sent the API-key derivation (see deps.ts).
   */
  forLogin(taskId: string, keyId: string | undefined): Promise<string>;
}

/**
 * RelaySshPasswords over the secret's versions (current first) and, for orders placed before the
 * relay had a secret of its own, the legacy key (the marketplace API key) they were derived with.
 */
export const relaySshPasswords = (
  versions: () => Promise<readonly string[]>,
  legacyKey: () => Promise<string>,
): RelaySshPasswords => ({
  forOrder: async (taskId) => {
    const [current] = await versions();
    if (current === undefined) throw new Error('the ssh password secret has no current version');
    return { password: orderSshPassword(current, taskId), key_id: sshPasswordKeyId(current) };
  },
  forLogin: async (taskId, keyId) => {
    if (keyId === undefined) return orderSshPassword(await legacyKey(), taskId);
    const all = await versions();
    const version = all.find((v) => sshPasswordKeyId(v) === keyId) ?? all[0];
    if (version === undefined) throw new Error('the ssh password secret has no current version');
    return orderSshPassword(version, taskId);
  },
});
