// The users' own upstream tokens in Redis, beside the sessions, so a sign-in completed at one
// replica serves at every other (upstream/credentials/grants.ts has the memory kind):
//
//   P grant:{K}  string  a grant sealed by upstream/credentials/sign-in.ts, for upstream|principal hash K; PX its life.

import type { RedisClient } from '../../../bus/index.js';
import { tag } from './hash-tag.js';

export class RedisGrants {
  constructor(
    private readonly client: RedisClient,
    private readonly keyPrefix: string,
  ) {}

  async getGrant(key: string): Promise<string | undefined> {
    return (await this.client.get(this.grantKey(key))) ?? undefined;
  }

  async putGrant(key: string, sealed: string, ttlMs: number): Promise<void> {
    await this.client.set(this.grantKey(key), sealed, 'PX', Math.max(1, Math.round(ttlMs)));
  }

  async dropGrant(key: string): Promise<void> {
    await this.client.del(this.grantKey(key));
  }

  private grantKey(key: string): string {
    return `${this.keyPrefix}grant:{${tag(key)}}`;
  }
}
