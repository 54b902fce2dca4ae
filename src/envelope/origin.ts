// Host and Origin validation against DNS rebinding [SHTTP "Security Warning"]. A Host that is
// not allowed, or an Origin that is present and not allowed, is refused with 403.

import { isIPv6 } from 'node:net';
import type { ErrorReason } from '../errors.js';

export interface OriginPolicy {
  /** Lower-case host names (no port); empty means any. */
  hosts: ReadonlySet<string>;
  /** Exact Origin values (scheme://host[:port]); empty means "its host is an allowed host". */
  origins: ReadonlySet<string>;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];

export function isLoopbackAddress(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

export function originPolicy(
  listenHost: string,
  allowedHosts: readonly string[],
  allowedOrigins: readonly string[],
): OriginPolicy {
  const hosts = allowedHosts.length > 0 ? allowedHosts : isLoopbackAddress(listenHost) ? LOOPBACK_NAMES : [];
  return {
    hosts: new Set(hosts.map((h) => h.toLowerCase())),
    origins: new Set(allowedOrigins),
  };
}

/** Host header value without its port, lower-cased; IPv6 literals keep their brackets. */
export function hostName(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(0, end + 1) : h;
  }
  const colon = h.indexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

function hostAllowed(policy: OriginPolicy, name: string): boolean {
  return (
    policy.hosts.size === 0 || policy.hosts.has(name) || (name.startsWith('[') && policy.hosts.has(name.slice(1, -1)))
  );
}

export function checkOrigin(
  policy: OriginPolicy,
  host: string | undefined,
  origin: string | undefined,
): { ok: true } | { ok: false; reason: ErrorReason } {
  if (policy.hosts.size > 0 && (host === undefined || !hostAllowed(policy, hostName(host)))) {
    return { ok: false, reason: 'forbidden_host' };
  }
  if (origin === undefined) return { ok: true };
  if (policy.origins.size > 0)
    return policy.origins.has(origin) ? { ok: true } : { ok: false, reason: 'forbidden_origin' };
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return { ok: false, reason: 'forbidden_origin' };
  }
  const name = hostName(originHost);
  if (policy.hosts.size > 0)
    return hostAllowed(policy, name) ? { ok: true } : { ok: false, reason: 'forbidden_origin' };
  // No host list: a browser origin must at least name the host it is talking to.
  return host !== undefined && hostName(host) === name ? { ok: true } : { ok: false, reason: 'forbidden_origin' };
}

/** reg-name or IPv4address: unreserved / pct-encoded / sub-delims, at least one [RFC 3986 §3.2.2]. */
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;
const PORT = /^[0-9]{0,5}$/;

/** The last value found valid: most requests of a replica name the same authority. */
let lastValid = '';

/** Whether a Host / :authority value is `host [ ":" port ]` as RFC 3986 §3.2.2-3 defines them. */
export function isValidAuthority(value: string): boolean {
  if (value === lastValid && value !== '') return true;
  if (!validAuthority(value)) return false;
  lastValid = value;
  return true;
}

function validAuthority(value: string): boolean {
  let rest: string;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0 || !isIPv6(value.slice(1, end))) return false;
    rest = value.slice(end + 1);
  } else {
    const colon = value.indexOf(':');
    const host = colon < 0 ? value : value.slice(0, colon);
    if (!REG_NAME.test(host)) return false;
    rest = colon < 0 ? '' : value.slice(colon);
  }
  return rest === '' || (rest.startsWith(':') && PORT.test(rest.slice(1)));
}
