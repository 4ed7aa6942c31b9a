/**
 * SSH key pairs for tests that log in to the simulator's ssh endpoints. ssh2's generateKeyPairSync
 * now and then returns a key its own parser refuses (as local/simulator/ssh-endpoints.ts notes for its
 * host key), so a pair is kept only once ssh2 parses both halves back.
 */
import { utils as sshUtils } from 'ssh2';

export interface TestSshKeyPair {
  /** OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`), for ssh2's `privateKey` or an `ssh -i` file (mode 0600). */
  readonly privateKey: string;
  /** Its public key line, `ssh-ed25519 AAAA… comment`, as a `.pub` file holds it. */
  readonly publicKey: string;
}

/** A fresh ed25519 key pair (ssh2 parses both halves). */
export const generateSshKeyPair = (comment = 'test@gpu-order-relay'): TestSshKeyPair => {
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const pair = sshUtils.generateKeyPairSync('ed25519', { comment });
    if (!(sshUtils.parseKey(pair.private) instanceof Error) && !(sshUtils.parseKey(pair.public) instanceof Error))
      return { privateKey: pair.private, publicKey: pair.public };
  }
  throw new Error('could not generate an ed25519 key pair ssh2 can parse');
};
