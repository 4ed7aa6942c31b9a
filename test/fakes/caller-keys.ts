/** In-memory caller keys (issue 24) and a reversible sealer, for unit tests of the admin routes and the signature chain. */
import {
  KeyLimitReachedError,
  MAX_CALLER_KEYS,
  type CallerKeyRecord,
  type CallerKeyStore,
  type KeySealer,
} from '../../lambdas/domain/teams/caller-keys';

export class FakeCallerKeyStore implements CallerKeyStore {
  public readonly records = new Map<string, CallerKeyRecord>();
  /** Names of deleted keys: never reused. */
  public readonly deleted = new Set<string>();
  public reads = 0;

  public async list(): Promise<readonly CallerKeyRecord[]> {
    this.reads += 1;
    return [...this.records.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  public async add(record: CallerKeyRecord): Promise<boolean> {
    if (this.records.has(record.name) || this.deleted.has(record.name)) return false;
    if (this.records.size >= MAX_CALLER_KEYS) throw new KeyLimitReachedError(MAX_CALLER_KEYS);
    this.records.set(record.name, record);
    return true;
  }

  public async remove(name: string): Promise<'deleted' | 'active' | 'unknown'> {
    const record = this.records.get(name);
    if (!record) return 'unknown';
    if (record.revoked_at === undefined) return 'active';
    this.records.delete(name);
    this.deleted.add(name);
    return 'deleted';
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
