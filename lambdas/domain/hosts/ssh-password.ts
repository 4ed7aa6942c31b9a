/**
 * The order's ssh_password under READINESS_PROBE=ssh-login (issue 31 §4): derived from the task id
 * with an HMAC keyed by a relay secret (the marketplace API key), so PlaceOrder (which sends it with
 * create_order) and CheckOrder (which logs in with it) agree without storing it anywhere: never in
 * the workflow input, the task record or a log. 32 alphanumeric characters, the marketplace's limit.
 */
import { createHmac } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export const orderSshPassword = (secret: string, taskId: string): string => {
  const digest = createHmac('sha256', secret).update(`ssh-password:${taskId}`, 'utf8').digest();
  return Array.from(digest, (byte) => ALPHABET[byte % ALPHABET.length]).join('');
};
