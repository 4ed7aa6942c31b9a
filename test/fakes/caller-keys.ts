/** In-memory caller keys (issue 24) and a reversible sealer, for unit tests of the admin routes and the signature chain. */
import type { CallerKeyRecord, CallerKeyStore, KeySealer } from '../../lambdas/domain/caller-keys';

export class FakeCallerKeyStore implements CallerKeyStore {
  public readonly records = new Map<string, CallerKeyRecord>();
  public reads = 0;

  public async list(): Promise<readonly CallerKeyRecord[]> {
    this.reads += 1;
    return [...this.records.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  public async add(record: CallerKeyRecord): Promise<boolean> {
    if (this.records.has(record.name)) return false;
    this.records.set(record.name, record);
    return true;
  }

  public async revoke(name: string, nowSeconds: number): Promise<'revoked' | 'already' | 'unknown'> {
    const record = this.records.get(name);
    if (!record) return 'unknown';
    if (record.revoked_at !== undefined) return 'already';
    this.records.set(name, { ...record, revoked_at: nowSeconds });
    return 'revoked';
  }
}

/** Not encryption: marks the value so a test can tell a sealed secret from a clear one. */
export const fakeSealer: KeySealer = {
  seal: async (secret) => `sealed:${Buffer.from(secret, 'utf8').toString('base64')}`,
  open: async (sealed) => Buffer.from(sealed.replace(/^sealed:/, ''), 'base64').toString('utf8'),
};
