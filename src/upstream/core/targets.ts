// The equivalent URLs of one logical upstream (replicas of one legacy deployment). New sessions
// are spread over them round-robin; a URL that cannot be reached (or answers an initialize with
// 502, 503 or 504) `ejectAfterFailures` times in a row is ejected for `ejectMs`, then re-admitted on probation (one
// more failure ejects it again). Any answer from a URL re-admits it at once. Health is passive and per replica: only
// real traffic tells a URL is down or back. A lone URL is never ejected: there is nowhere else to go.

import { errorCode } from './errors.js';

export interface TargetPolicy {
  ejectAfterFailures: number;
  ejectMs: number;
}

interface Target {
  readonly url: string;
  failures: number;
  ejectedUntil: number;
  /** Re-admitted after an ejection: the next failure ejects at once. */
  probation: boolean;
}

export interface TargetEvents {
  onEject?(url: string, index: number): void;
  onReadmit?(url: string, index: number): void;
}

/** Failures that prove the request never reached the upstream, so it may be sent elsewhere. */
const NOT_DELIVERED = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function neverDelivered(err: unknown): boolean {
  const code = errorCode(err) ?? errorCode((err as { cause?: unknown } | null)?.cause);
  return code !== undefined && NOT_DELIVERED.has(code);
}

export class TargetSet {
  private readonly targets: Target[];
  private next = 0;

  constructor(
    urls: readonly string[],
    private readonly policy: TargetPolicy,
    private readonly events: TargetEvents = {},
    private readonly now: () => number = Date.now,
  ) {
    if (urls.length === 0) throw new Error('an upstream needs at least one URL');
    this.targets = urls.map((url) => ({ url, failures: 0, ejectedUntil: 0, probation: false }));
  }

  get urls(): string[] {
    return this.targets.map((t) => t.url);
  }

  get size(): number {
    return this.targets.length;
  }

  /** The URL for a new session: the next admitted one; when all are ejected, the one readmitted soonest. */
  pick(exclude: ReadonlySet<string> = new Set()): string {
    const n = this.targets.length;
    for (let i = 0; i < n; i++) {
      const t = this.targets[(this.next + i) % n]!;
      if (!exclude.has(t.url) && this.admits(t.url)) {
        this.next = (this.next + i + 1) % n;
        return t.url;
      }
    }
    const candidates = this.targets.filter((t) => !exclude.has(t.url));
    const pool = candidates.length > 0 ? candidates : this.targets;
    return pool.reduce((a, b) => (b.ejectedUntil < a.ejectedUntil ? b : a)).url;
  }

  /**
   * False while the URL is ejected. An unknown URL (say, from a record written under another config) is not admitted.
   */
  admits(url: string | undefined): boolean {
    const t = this.find(url);
    if (!t) return false;
    if (t.ejectedUntil === 0) return true;
    if (this.now() < t.ejectedUntil) return false;
    t.ejectedUntil = 0;
    t.probation = true;
    this.events.onReadmit?.(t.url, this.targets.indexOf(t));
    return true;
  }

  /** A request to `url` could not be delivered. */
  failed(url: string): void {
    const t = this.find(url);
    if (!t || this.targets.length === 1 || t.ejectedUntil > this.now()) return;
    t.failures += 1;
    if (t.probation || t.failures >= this.policy.ejectAfterFailures) {
      t.ejectedUntil = this.now() + this.policy.ejectMs;
      t.failures = 0;
      t.probation = false;
      this.events.onEject?.(t.url, this.targets.indexOf(t));
    }
  }

  /** `url` answered: it is up, whatever its ejection said. */
  succeeded(url: string): void {
    const t = this.find(url);
    if (!t) return;
    t.failures = 0;
    t.probation = false;
    if (t.ejectedUntil !== 0) {
      t.ejectedUntil = 0;
      this.events.onReadmit?.(t.url, this.targets.indexOf(t));
    }
  }

  /** Each URL's passive health as this replica sees it: failures in a row, and until when it is ejected (0: not). */
  health(): Array<{ url: string; failures: number; ejectedUntil: number }> {
    const now = this.now();
    return this.targets.map((t) => ({
      url: t.url,
      failures: t.failures,
      ejectedUntil: t.ejectedUntil > now ? t.ejectedUntil : 0,
    }));
  }

  /** Position of a URL in the configured list, or -1. */
  indexOf(url: string | undefined): number {
    return this.targets.findIndex((t) => t.url === url);
  }

  at(index: number): string | undefined {
    return this.targets[index]?.url;
  }

  private find(url: string | undefined): Target | undefined {
    if (url === undefined) return undefined;
    for (const t of this.targets) if (t.url === url) return t;
    return undefined;
  }
}
