// The auth.* settings checked together at start-up, so that an incoherent resource server is
// refused with every reason at once rather than half-enforced: what each mode needs, URLs a
// token's audience and issuer can be compared with, signing algorithms that cannot be downgraded,
// and nothing that would carry the client's token upstream.

import { AUTH_ALGORITHMS, SETTINGS, type Config } from './schema.js';
import { parseRules } from './scope-rules.js';
import type { Topology } from './topology.js';
import { safeForSecrets } from './credentials.js';

/** Headers that carry the client's token for Causeway; an upstream never gets them then. */
const TOKEN_HEADERS = ['authorization', 'dpop'];

/** An absolute https URL (http only on loopback), without fragment; undefined when it is one. */
function urlProblem(key: string, value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `auth.${key}: expected an absolute URL`;
  }
  if (!safeForSecrets(u)) return `auth.${key}: must be https (http only on loopback)`;
  if (u.hash !== '' || value.includes('#')) return `auth.${key}: must not have a fragment`;
  return undefined;
}

export function authProblems(c: Config, topology: Topology): string[] {
  const a = c.auth;
  const problems: string[] = [];
  const signIns = topology.upstreams.filter((u) => u.credentials?.grant === 'authorization_code');
  for (const u of topology.upstreams) {
    if (a.mode === 'none' && u.credentials?.grant === 'token_exchange') {
      problems.push(
        `upstream ${u.name}: credentials grant token_exchange needs auth.mode ` +
          `jwt or introspection: it exchanges the client's verified token`,
      );
    }
    if (a.mode === 'none' && u.credentials?.grant === 'authorization_code') {
      problems.push(
        `upstream ${u.name}: credentials grant authorization_code needs auth.mode ` +
          `jwt or introspection: a user's token is kept for their verified identity`,
      );
    }
  }
  if (a.mode === 'none') {
    // Settings given for a resource server that is off are a deployment that believes it is protected.
    for (const s of SETTINGS) {
      if (!s.path.startsWith('auth.') || s.path === 'auth.mode') continue;
      const v = a[s.path.slice(5) as keyof Config['auth']];
      if (JSON.stringify(v) !== JSON.stringify(s.default)) problems.push(`${s.path}: set, but auth.mode is none`);
    }
    return problems;
  }
  const need = (key: keyof Config['auth'], url: boolean) => {
    const v = a[key] as string;
    if (v === '') problems.push(`auth.${key}: required when auth.mode is ${a.mode}`);
    else if (url) {
      const p = urlProblem(key, v);
      if (p) problems.push(p);
    }
  };
  need('issuer', true);
  need('resource', true);
  if (a.resource !== '' && /[?]/.test(a.resource)) problems.push('auth.resource: must not have a query');
  a.authorizationServers.forEach((s, i) => {
    const p = urlProblem(`authorizationServers[${i}]`, s);
    if (p) problems.push(p);
  });
  for (const [issuer, jwksUrl] of Object.entries(a.moreIssuers)) {
    if (a.mode !== 'jwt') {
      problems.push('auth.moreIssuers: only in jwt mode (an opaque token does not say its issuer)');
      break;
    }
    if (issuer === a.issuer) problems.push(`auth.moreIssuers: ${issuer} is auth.issuer already`);
    for (const p of [urlProblem('moreIssuers issuer', issuer), urlProblem(`moreIssuers ${issuer}`, jwksUrl)])
      if (p) problems.push(p);
  }
  if (a.mode === 'jwt') {
    need('jwksUrl', true);
    const bad = a.algorithms.filter((x) => !AUTH_ALGORITHMS.includes(x));
    if (a.algorithms.length === 0) problems.push('auth.algorithms: at least one is needed');
    if (bad.length > 0)
      problems.push(`auth.algorithms: not accepted (only ${AUTH_ALGORITHMS.join(', ')}): ${bad.join(', ')}`);
  } else {
    need('introspectionUrl', true);
    need('introspectionClientId', false);
    need('introspectionClientSecret', false);
  }
  const badDpop = a.dpopAlgorithms.filter((x) => !AUTH_ALGORITHMS.includes(x));
  if (a.dpop === 'off' && a.dpopNonces) problems.push('auth.dpopNonces: needs auth.dpop allowed or required');
  if (a.dpop !== 'off' && a.dpopAlgorithms.length === 0)
    problems.push('auth.dpopAlgorithms: at least one is needed unless auth.dpop is off');
  if (badDpop.length > 0)
    problems.push(`auth.dpopAlgorithms: not accepted (only ${AUTH_ALGORITHMS.join(', ')}): ${badDpop.join(', ')}`);
  problems.push(...parseRules(a.rules).problems);
  problems.push(...signInProblems(a, topology, signIns));
  if (c.principal.mode !== 'none')
    problems.push('principal.mode: must be none when auth.mode is set: the principal is then the token’s iss and sub');
  if (c.principal.hashSecret.length < 16)
    problems.push('principal.hashSecret: required (16+ characters) when auth.mode is set');
  for (const u of topology.upstreams) {
    const passed = u.forwardHeaders.filter((h) => TOKEN_HEADERS.includes(h.toLowerCase()));
    if (passed.length > 0)
      problems.push(
        `upstream ${u.name}: forwardHeaders must not name ${passed.join(', ')} ` +
          `when auth.mode is set: the client's token is for Causeway alone`,
      );
  }
  return problems;
}

/** The settings of the users' sign-in at upstreams (grant authorization_code): needed, or not to be set. */
function signInProblems(
  a: Config['auth'],
  topology: Topology,
  signIns: readonly Topology['upstreams'][number][],
): string[] {
  const out: string[] = [];
  if (signIns.length > 0) {
    if (a.callbackUrl === '') out.push(`auth.callbackUrl: required: upstream ${signIns[0]!.name} has users sign in`);
    else {
      const p = urlProblem('callbackUrl', a.callbackUrl);
      if (p) out.push(p);
    }
    const taken = topology.mounts.map((m) => m.path);
    for (const key of ['callbackUrl', 'clientMetadataUrl'] as const) {
      const path = URL.canParse(a[key]) ? new URL(a[key]).pathname : undefined;
      if (path !== undefined && taken.includes(path))
        out.push(`auth.${key}: its path ${path} is already served (a mount, or the callback)`);
      if (path !== undefined) taken.push(path);
    }
    if (a.clientMetadataUrl !== '') {
      // draft-ietf-oauth-client-id-metadata-document: an https URL with a path, the client id itself.
      const u = URL.canParse(a.clientMetadataUrl) ? new URL(a.clientMetadataUrl) : undefined;
      if (u?.protocol !== 'https:' || u.pathname === '/' || u.search !== '' || a.clientMetadataUrl.includes('#')) {
        out.push('auth.clientMetadataUrl: must be an https URL with a path, no query or fragment');
      }
    }
  } else {
    for (const key of ['callbackUrl', 'clientMetadataUrl'] as const) {
      if (a[key] !== '') out.push(`auth.${key}: set, but no upstream has credentials grant authorization_code`);
    }
  }
  return out;
}
