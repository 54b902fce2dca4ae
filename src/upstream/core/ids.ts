// Upstream JSON-RPC ids and progress tokens. Many modern requests share one upstream session,
// and their own ids and tokens are unique only per client, so Causeway mints its own, unique per
// replica and process, and maps answers back.

import { randomBytes } from 'node:crypto';

export class IdMinter {
  private n = 0;
  private readonly prefix: string;

  constructor(prefix = randomBytes(6).toString('base64url')) {
    this.prefix = `cw-${prefix}`;
  }

  requestId(): string {
    return `${this.prefix}-${++this.n}`;
  }

  progressToken(): string {
    return `${this.prefix}-p${++this.n}`;
  }
}
