// requestState is attacker-controlled input [MRTR "requestState integrity"], so Causeway seals
// it: AES-256-GCM under the newest configured key (any configured key opens), binding the
// principal, the method, a digest of the original params, the pending call, the round and an
// expiry. Anything that fails to open or to match is refused before reaching the upstream.

import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../dialect/index.js';
import type { JsonObject } from '../jsonrpc.js';

export interface StateClaims {
  /** Principal hash. */
  p: string;
  /** Method. */
  m: string;
  /** Digest of the original params. */
  d: string;
  /** Pending call id (empty when no call is held, e.g. a re-issue after a URL elicitation). */
  c: string;
  /** Round number the state answers. */
  r: number;
  /** Replica holding the call. */
  h: string;
  /** Expiry, ms since the epoch. */
  e: number;
  /** How a replica other than the holder takes the call up on its upstream stream; absent when it cannot. */
  u?: ResumeClaims;
  /** Where u is absent: the call upstream (session digest, JSON-RPC id), so a replay can cancel it. */
  o?: Pick<ResumeClaims, 's' | 'i'>;
  /** The traceparent of the round that sealed the state (tracing on): the next round's span links to it. */
  x?: string;
}

/** Where the held call stands on its upstream stream when the round was sealed. */
export interface ResumeClaims {
  /** sessionDigest of the upstream session the call runs on. */
  s: string;
  /** The call's upstream JSON-RPC id. */
  i: string | number;
  /** The call's upstream progress token, when it has one. */
  k?: string;
  /** The stream event before the first outstanding ask: a resume after it replays that ask. */
  l: string;
  /** The last stream event the holder had read: what follows it, the holder never saw. */
  t: string;
  /** Upstream ids of the asks outstanding at the seal (the ones this round's answers are for). */
  q: Array<string | number>;
}

export { sessionDigest } from '../upstream/index.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class StateSealer {
  private readonly keys: Buffer[];

  /** `keys`: base64 32-byte keys, newest first; none means a random per-process key. */
  constructor(keys: readonly string[]) {
    this.keys = keys.length > 0 ? keys.map((k) => Buffer.from(k, 'base64')) : [randomBytes(32)];
    for (const k of this.keys)
      if (k.length !== 32) throw new Error('mrtr.stateKeys: every key must be 32 bytes, base64');
  }

  seal(claims: StateClaims): string {
    return this.encrypt(0, undefined, claims);
  }

  /**
   * Seals another value Causeway hands out or keeps (a sign-in state, a stored upstream token)
   * under the same keys, with `purpose` as associated data: one kind never opens as another.
   */
  sealFor(purpose: string, value: unknown): string {
    return this.encrypt(1, purpose, value);
  }

  /** A value sealFor sealed for `purpose`, or undefined. */
  openFor(purpose: string, sealed: string): unknown {
    return this.decrypt(sealed, 1, purpose);
  }

  private encrypt(version: number, purpose: string | undefined, value: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv);
    if (purpose !== undefined) cipher.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([version]), iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** The claims, or undefined when the state was not sealed by any configured key. */
  open(state: string): StateClaims | undefined {
    return this.decrypt(state, 0, undefined) as StateClaims | undefined;
  }

  private decrypt(state: string, version: number, purpose: string | undefined): unknown {
    const raw = Buffer.from(state, 'base64url');
    if (raw.length < 1 + IV_BYTES + TAG_BYTES + 2 || raw[0] !== version || raw.toString('base64url') !== state)
      return undefined;
    const iv = raw.subarray(1, 1 + IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES);
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAuthTag(tag);
        if (purpose !== undefined) decipher.setAAD(Buffer.from(purpose));
        const text = Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
        return JSON.parse(text) as unknown;
      } catch {
        // next key
      }
    }
    return undefined;
  }
}

/** The params that identify the request: everything but _meta and the multi-round fields. */
export function paramsDigest(params: JsonObject): string {
  const { _meta, inputResponses, requestState, ...rest } = params;
  void _meta;
  void inputResponses;
  void requestState;
  return createHash('sha256').update(canonicalJson(rest)).digest('base64url').slice(0, 22);
}
