// The doctor's first contact with an HTTP server: one server/discover POST, through the same
// composed HTTP client Causeway gives the upstream (its URL, upstream.headers, and the token of
// upstream.credentials). Its answer says at once whether the server can be reached, whether it
// wants a token (401 and its challenge), and, read as the era probe reads it, which era it speaks.

import type { UpstreamSpec } from '../config/index.js';
import { isObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';
import {
  ModernClient,
  TargetSet,
  UpstreamCredentials,
  UpstreamDispatcher,
  UpstreamHttp,
  eraOf,
  httpWire,
  type ModernWire,
  type ProbeAnswer,
  type UpstreamAuthorization,
} from '../upstream/index.js';

export const CLIENT_INFO = { name: 'causeway-doctor', version: VERSION };

/** An HTTP upstream's one composed client and what it needs: built as Causeway builds its own. */
export interface HttpKit {
  http: UpstreamHttp;
  targets: TargetSet;
  credentials: UpstreamAuthorization | undefined;
  log: Logger;
  /** The modern side's client, over the same HTTP client. */
  modern: ModernClient;
  /** Headers of the last answer the modern client got (the 401's challenge among them). */
  lastHeaders(): Record<string, string | string[] | undefined>;
}

export function httpKit(spec: UpstreamSpec, log: Logger): HttpKit {
  const targets = new TargetSet(spec.urls, { ejectAfterFailures: spec.ejectAfterFailures, ejectMs: spec.ejectMs });
  // A client_credentials token is Causeway's own and can be fetched here; the other grants stand
  // for a client's or a user's token, which the doctor does not have.
  const credentials =
    spec.credentials?.grant === 'client_credentials'
      ? new UpstreamCredentials(spec.credentials, undefined, log)
      : undefined;
  const http = new UpstreamHttp({
    connectTimeoutMs: spec.connectTimeoutMs,
    requestTimeoutMs: spec.requestTimeoutMs,
    upstream: { name: spec.name, targets, credentials },
  });
  const inner = httpWire(new UpstreamDispatcher(http, targets, spec.headers, spec.name));
  let seen: Record<string, string | string[] | undefined> = {};
  const wire: ModernWire = {
    post: async (body, method, name, opts) => {
      // upstream.headers on every request, as the legacy client sends them (httpWire sends only
      // the request's own): the doctor judges the server's auth with what the operator gave.
      const answer = await inner.post(body, method, name, { ...opts, headers: { ...opts.headers, ...spec.headers } });
      seen = answer.headers;
      return answer;
    },
  };
  return {
    http,
    targets,
    credentials,
    log,
    modern: new ModernClient(wire, spec.maxResponseBytes),
    lastHeaders: () => seen,
  };
}

export interface Reached {
  answer: ProbeAnswer;
  /** The WWW-Authenticate of a 401 or 403. */
  challenge: string | undefined;
  /** What the answer says of the era; undefined when it says nothing (401, 5xx...). */
  era: 'legacy' | 'modern' | undefined;
  /** The answer in words, for the report's "how". */
  said: string;
}

/** One server/discover POST; rejects when the server cannot be reached at all. */
export async function reach(kit: HttpKit, timeoutMs: number): Promise<Reached> {
  const answer = await kit.modern.probe(AbortSignal.timeout(timeoutMs), CLIENT_INFO);
  const raw = kit.lastHeaders()['www-authenticate'];
  const challenge = Array.isArray(raw) ? raw.join(', ') : raw;
  return { answer, challenge, era: eraOf(answer), said: answerWords(answer) };
}

/** "HTTP 400, JSON-RPC error -32601 Method not found", "HTTP 200, a DiscoverResult", ... */
export function answerWords(answer: ProbeAnswer): string {
  const m = answer.message;
  if (isObject(m) && isObject(m.error)) {
    return `HTTP ${answer.status}, JSON-RPC error ${String(m.error.code)} ${String(m.error.message).slice(0, 160)}`;
  }
  return `HTTP ${answer.status}, ${isObject(m) && isObject(m.result) ? 'a DiscoverResult' : 'no JSON-RPC'}`;
}
