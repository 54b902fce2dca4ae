// Quotas per tenant (the `quotas` settings): named limits on the calls a tenant may make in a
// window, optionally for one mount and for tools (prompts, resources) whose name matches a glob.
// The tenant is the access token's `quotas.tenantClaim`, else the principal. A call that finds a
// quota spent gets 429 with Retry-After, and a JSON-RPC error whose data names the quota, its
// window and when it resets; the upstream sees nothing. A store that cannot be reached lets the
// call through, as the rate limit does: a quota protects the upstream, not Causeway's availability.

import { createHash } from 'node:crypto';
import { CausewayError } from '../errors.js';
import { globToRegExp } from '../glob.js';
import type { QuotaRule } from '../config/index.js';
import type { Logger } from '../log.js';
import type { Counters, Spend } from './counters.js';

const WINDOWS: Readonly<Record<QuotaRule['per'], number>> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

interface Quota {
  name: string;
  limit: number;
  per: QuotaRule['per'];
  mount: string | undefined;
  matches: ((name: string | undefined) => boolean) | undefined;
  methods: ReadonlySet<string>;
}

/** What a quota counts of one call. */
export interface QuotaCall {
  tenant: string;
  mount: string;
  method: string;
  name: string | undefined;
}

export interface QuotaObserver {
  counted(quota: string): void;
  refused(quota: string): void;
}

export class Quotas {
  private readonly quotas: Quota[];
  /** The methods any quota counts: a request of another costs nothing here. */
  readonly methods: ReadonlySet<string>;

  constructor(
    rules: Readonly<Record<string, QuotaRule>>,
    private readonly counters: Counters,
    private readonly keyPrefix: string,
    private readonly observe: QuotaObserver,
    private readonly log: Logger,
  ) {
    this.quotas = Object.entries(rules).map(([name, r]) => {
      const pattern = r.name === undefined ? undefined : globToRegExp(r.name);
      return {
        name,
        limit: r.limit,
        per: r.per,
        mount: r.mount,
        matches: pattern && ((n: string | undefined) => n !== undefined && pattern.test(n)),
        methods: new Set(r.methods ?? ['tools/call']),
      };
    });
    this.methods = new Set(this.quotas.flatMap((q) => [...q.methods]));
  }

  /** The 429 for a call over one of its tenant's quotas; undefined to go on (and the call is counted). */
  async refuse(call: QuotaCall): Promise<CausewayError | undefined> {
    if (!this.methods.has(call.method)) return undefined;
    const hit = this.quotas.filter(
      (q) =>
        q.methods.has(call.method) &&
        (q.mount === undefined || q.mount === call.mount) &&
        (q.matches === undefined || q.matches(call.name)),
    );
    if (hit.length === 0) return undefined;
    // One hash tag per tenant: a Redis Cluster keeps all of a tenant's counters in one slot.
    const tenant = createHash('sha256').update(call.tenant).digest('base64url').slice(0, 22);
    const spends: Spend[] = hit.map((q) => ({
      key: `${this.keyPrefix}quota:{${tenant}}:${q.name}`,
      limit: q.limit,
      windowMs: WINDOWS[q.per],
    }));
    let spent;
    try {
      spent = await this.counters.spend(spends);
    } catch (err) {
      this.log.warn({ err }, 'quota store unreachable; call let through');
      return undefined;
    }
    if (spent === undefined) {
      for (const q of hit) this.observe.counted(q.name);
      return undefined;
    }
    const quota = hit[spent.index]!;
    this.observe.refused(quota.name);
    const seconds = Math.max(1, Math.ceil(spent.resetMs / 1000));
    const resetsAt = new Date(Date.now() + spent.resetMs).toISOString();
    return new CausewayError(
      'quota_exceeded',
      `Quota ${quota.name} spent (${quota.limit} per ${quota.per}); it resets in ${seconds} s`,
      { quota: quota.name, limit: quota.limit, window: quota.per, resetsAt, retryAfterSeconds: seconds },
      { headers: { 'retry-after': String(seconds) } },
    );
  }
}
