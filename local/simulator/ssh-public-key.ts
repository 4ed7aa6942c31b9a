/**
 * One OpenSSH public key line (`<type> <base64 blob>[ comment]`, as in a `.pub` file or
 * authorized_keys), read the way the simulated marketplace reads a create_order `ssh_key`: a type it
 * knows, a blob whose own type names the same, no line break. The simulator refuses anything else, so
 * a relay that sends a private key, a file with two lines or a mangled key fails locally.
 */

/** The key types an order's `ssh_key` may name (those the relay lets callers send, plus sk-ecdsa). */
export const SIM_SSH_KEY_TYPES: readonly string[] = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
  'ssh-rsa',
];

/** A public key: its type and its SSH wire blob (what a client offers at a publickey login). */
export interface SimSshPublicKey {
  readonly type: string;
  readonly blob: Buffer;
}

const LINE = /^(\S+) ([A-Za-z0-9+/]+={0,2})(?: [^\r\n]*)?$/;

/** The key of one public key line, or undefined when the line is not one. */
export const parseSshPublicKeyLine = (line: string): SimSshPublicKey | undefined => {
  const match = LINE.exec(line);
  const type = match?.[1];
  const base64 = match?.[2];
  if (type === undefined || base64 === undefined || !SIM_SSH_KEY_TYPES.includes(type)) return undefined;
  const blob = Buffer.from(base64, 'base64');
  // Buffer.from skips what is not base64; a round trip tells a clean encoding.
  if (blob.toString('base64') !== base64 || blob.length < 4) return undefined;
  const nameLength = blob.readUInt32BE(0);
  // The blob starts with its own type name (a uint32 length, then the name), followed by key data.
  if (blob.length <= 4 + nameLength || blob.subarray(4, 4 + nameLength).toString('latin1') !== type) return undefined;
  return { type, blob };
};
