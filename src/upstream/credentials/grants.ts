// Where the users' own upstream tokens are kept (sealed by the caller): in this replica's memory,
// or in Redis with the Redis store, so a sign-in completed at one replica serves at every other.

import { BoundedMap } from '../../bounded.js';

export interface GrantStore {
  getGrant(key: string): Promise<string | undefined>;
  putGrant(key: string, sealed: string, ttlMs: number): Promise<void>;
  dropGrant(key: string): Promise<void>;
}

/** Most grants one replica keeps in memory; the oldest goes first. */
const MAX_GRANTS = 10_000;

export class MemoryGrants implements GrantStore {
  private readonly grants = new BoundedMap<string, { sealed: string; until: number }>(MAX_GRANTS);

  async getGrant(key: string): Promise<string | undefined> {
    const g = this.grants.get(key);
    if (g === undefined || g.until > Date.now()) return g?.sealed;
    this.grants.delete(key);
    return undefined;
  }

  async putGrant(key: string, sealed: string, ttlMs: number): Promise<void> {
    this.grants.delete(key);
    this.grants.set(key, { sealed, until: Date.now() + ttlMs });
  }

  async dropGrant(key: string): Promise<void> {
    this.grants.delete(key);
  }
}
