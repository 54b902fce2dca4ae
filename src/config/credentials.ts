// An upstream's credentials entry, checked as the configuration is loaded: the grant, the
// endpoints its secrets may be sent to, and what each grant needs. Part of the topology
// (topology.ts), kept apart for its length.

export const CREDENTIAL_GRANTS = ['client_credentials', 'token_exchange', 'authorization_code'] as const;
export type CredentialGrant = (typeof CREDENTIAL_GRANTS)[number];

/** An upstream's `credentials`: Causeway's own token for it (upstream/credentials uses it). */
export interface CredentialSpec {
  grant: CredentialGrant;
  /** The token endpoint; for authorization_code, found in the issuer's metadata. */
  tokenUrl: string;
  /** authorization_code: the upstream's authorization server, whose metadata names its endpoints. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes asked for; empty: none named. */
  scope: string;
  /** The upstream's resource indicator [RFC 8707]; empty: none sent. */
  resource: string;
  /** token_exchange: the audience asked for [RFC 8693 §2.1]; empty: none sent. */
  audience: string;
}

const CREDENTIAL_KEYS = new Set([
  'grant',
  'tokenUrl',
  'issuer',
  'clientId',
  'clientSecret',
  'scope',
  'resource',
  'audience',
]);
const LOOPBACK = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])$/;

/** Whether secrets may go to a URL: https, or plain http to this machine only. */
export function safeForSecrets(u: URL): boolean {
  return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.test(u.hostname));
}

/** An upstream's credentials entry (an object of strings); undefined when there is none. */
export function credentialSpec(where: string, v: unknown, problems: string[]): CredentialSpec | undefined {
  if (
    typeof v !== 'object' ||
    v === null ||
    Array.isArray(v) ||
    !Object.values(v).every((x) => typeof x === 'string')
  ) {
    problems.push(`${where}: expected an object of strings`);
    return undefined;
  }
  if (Object.keys(v).length === 0) return undefined;
  const o = v as Record<string, string>;
  for (const k of Object.keys(o)) if (!CREDENTIAL_KEYS.has(k)) problems.push(`${where}: unknown setting ${k}`);
  if (!(CREDENTIAL_GRANTS as readonly string[]).includes(o.grant ?? ''))
    problems.push(`${where}.grant: expected one of ${CREDENTIAL_GRANTS.join(', ')}`);
  // A user's sign-in finds the endpoints in the issuer's metadata; the other grants name the token endpoint.
  const signIn = o.grant === 'authorization_code';
  // Without a clientId a sign-in is made as Causeway's metadata document or a registered client.
  for (const k of signIn ? ['issuer'] : ['tokenUrl', 'clientId', 'clientSecret'])
    if (!o[k]) problems.push(`${where}.${k}: required`);
  if (signIn && o.clientSecret && !o.clientId) problems.push(`${where}.clientSecret: only with a clientId`);
  if (signIn && o.tokenUrl)
    problems.push(`${where}.tokenUrl: not for grant authorization_code (the issuer's metadata names it)`);
  if (!signIn && o.issuer) problems.push(`${where}.issuer: only for grant authorization_code`);
  for (const k of ['tokenUrl', 'issuer']) {
    if (!o[k]) continue;
    try {
      const u = new URL(o[k]);
      // The client secret and the users' codes go there: in the clear only on this machine.
      if (!safeForSecrets(u)) problems.push(`${where}.${k}: must be https (http only on loopback)`);
    } catch {
      problems.push(`${where}.${k}: expected an absolute URL`);
    }
  }
  if (o.resource && !URL.canParse(o.resource)) problems.push(`${where}.resource: expected an absolute URL`);
  if (o.audience && o.grant !== 'token_exchange') problems.push(`${where}.audience: only for grant token_exchange`);
  return {
    grant: o.grant as CredentialGrant,
    tokenUrl: o.tokenUrl ?? '',
    issuer: o.issuer ?? '',
    clientId: o.clientId ?? '',
    clientSecret: o.clientSecret ?? '',
    scope: o.scope ?? '',
    resource: o.resource ?? '',
    audience: o.audience ?? '',
  };
}
