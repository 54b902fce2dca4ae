// What a 401 says about the server's authorization [MCP auth discovery; RFC 9728]: the
// WWW-Authenticate challenge, and the protected resource metadata it points at with
// resource_metadata, or, when it names none, the well-known URIs (the path-inserted one first,
// then the root), as a client finds them. The doctor only reads: it never asks for a token.

import type { UpstreamSpec } from '../config/index.js';
import { isObject } from '../jsonrpc.js';
import { wordsOf, type AuthFinding } from './report.js';

/** Most bytes of a metadata document read. */
const METADATA_LIMIT = 256 * 1024;

/** The value of one auth-param of a challenge (quoted or a token), e.g. resource_metadata. */
export function challengeParam(challenge: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|[\\s,])${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s,]+))`, 'i').exec(challenge);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

/** What the doctor sends as credentials: a configured grant, a static Authorization header, or nothing. */
export function credentialsOf(spec: UpstreamSpec): AuthFinding['credentials'] {
  if (spec.credentials) return spec.credentials.grant;
  return Object.keys(spec.headers).some((h) => h.toLowerCase() === 'authorization') ? 'header' : 'none';
}

/** Where the metadata may be: the challenge's resource_metadata, else the two well-known URIs. */
function metadataUrls(url: string, challenge: string | undefined): string[] {
  const named = challenge === undefined ? undefined : challengeParam(challenge, 'resource_metadata');
  if (named !== undefined) return [named];
  const u = new URL(url);
  const path = u.pathname === '/' ? '' : u.pathname;
  return [
    `${u.origin}/.well-known/oauth-protected-resource${path}`,
    `${u.origin}/.well-known/oauth-protected-resource`,
  ];
}

/** The 401's finding: its challenge and the metadata document, read within `timeoutMs`. */
export async function authFinding(
  url: string,
  spec: UpstreamSpec,
  challenge: string | undefined,
  timeoutMs: number,
): Promise<AuthFinding> {
  const finding: AuthFinding = {
    required: true,
    credentials: credentialsOf(spec),
    ...(challenge ? { challenge } : {}),
  };
  let lastError = 'no metadata document found';
  for (const at of metadataUrls(url, challenge)) {
    try {
      const res = await fetch(at, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
      const text = await res.text();
      if (!res.ok || text.length > METADATA_LIMIT) {
        lastError = `${at} answered HTTP ${res.status}`;
        continue;
      }
      const doc: unknown = JSON.parse(text);
      if (!isObject(doc)) throw new Error(`${at} is not a JSON object`);
      const strings = (v: unknown) =>
        Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined;
      return {
        ...finding,
        metadataUrl: at,
        ...(typeof doc.resource === 'string' ? { resource: doc.resource } : {}),
        authorizationServers: strings(doc.authorization_servers) ?? [],
        ...(strings(doc.scopes_supported) ? { scopesSupported: strings(doc.scopes_supported)! } : {}),
      };
    } catch (err) {
      lastError = `${at}: ${wordsOf(err)}`;
    }
  }
  return { ...finding, metadataError: lastError };
}
