/**
 * Encryption of caller key secrets at rest (issue 24): AES-256-GCM under a key derived (HKDF-SHA256)
 * from the caller-keys secret.
 *
 * - Deployed: `CALLER_KEYS_SECRET_ARN`, a generated Secrets Manager secret encrypted with the stack's
 *   own KMS key (envelope encryption: the table holds only ciphertext, the data key lives in Secrets
 *   Manager under KMS, and only the signed routes may read it).
 * - Locally: `CALLER_KEYS_SECRET` when set, else a key derived from WEBHOOK_SECRET with its own HKDF
 *   label (dynalite's data is thrown away with the process; changing WEBHOOK_SECRET makes the local
 *   keys undecryptable, and they verify nothing until re-created).
 *
 * The sealed form is `v1.<iv>.<tag>.<ciphertext>` (base64url); a secret whose tag does not verify
 * is refused like an unknown key.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { KeySealer } from '../domain/teams/caller-keys';
import type { RelayEnv } from './env';
import { getSecretString } from './secrets';

const INFO = 'gpu-relay caller keys v1';
/** Issue 29 §6: the container env a replaceable task keeps is sealed under its own key (another HKDF label, same secret). */
export const REPLACEMENT_ENV_INFO = 'gpu-relay replacement env v1';

/** The AES key from the caller-keys secret (`info`: what the key seals; caller key secrets by default). */
export const deriveSealingKey = (secret: string, info: string = INFO): Buffer =>
  Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from('gpu-relay', 'utf8'), Buffer.from(info, 'utf8'), 32),
  );

export class AesGcmKeySealer implements KeySealer {
  public constructor(private readonly key: () => Promise<Buffer>) {}

  public async seal(secret: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', await this.key(), iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [
      'v1',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      ciphertext.toString('base64url'),
    ].join('.');
  }

  public async open(sealed: string): Promise<string> {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined)
      throw new Error('sealed caller key secret has an unknown format');
    const decipher = createDecipheriv('aes-256-gcm', await this.key(), Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** The sealer from the environment (see the module comment for where its key comes from); `info` names what it seals. */
export const keySealerFromEnv = (env: RelayEnv, info: string = INFO): KeySealer =>
  new AesGcmKeySealer(async () => {
    if (env.CALLER_KEYS_SECRET_ARN) {
      const value = await getSecretString(env.CALLER_KEYS_SECRET_ARN);
      if (!value) throw new Error('the caller-keys secret is empty');
      return deriveSealingKey(value, info);
    }
    const local = env.CALLER_KEYS_SECRET || env.WEBHOOK_SECRET;
    if (!local)
      throw new Error(
        'no caller-keys secret configured (CALLER_KEYS_SECRET_ARN, CALLER_KEYS_SECRET or WEBHOOK_SECRET)',
      );
    return deriveSealingKey(env.CALLER_KEYS_SECRET ? local : `caller-keys:${local}`, info);
  });

/**
 * The sealer of the container env a replaceable task keeps (issue 29 §6): AES-256-GCM under a key
 * derived from the same KMS-protected data key as caller key secrets, with its own label.
 */
export const replacementEnvSealerFromEnv = (env: RelayEnv): KeySealer => keySealerFromEnv(env, REPLACEMENT_ENV_INFO);

/** Issue 37 §3: a create-order's access secrets (password, Jupyter token, script), under their own label. */
export const ORDER_ACCESS_INFO = 'gpu-relay order access v1';

/** The sealer of a create-order's access secrets (issue 37 §3): the caller keys' data key, its own label. */
export const orderAccessSealerFromEnv = (env: RelayEnv): KeySealer => keySealerFromEnv(env, ORDER_ACCESS_INFO);
