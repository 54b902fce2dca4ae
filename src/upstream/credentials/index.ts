// Upstream credentials: the token an upstream gets (credentials.ts), the grants kept per
// principal (grants.ts), the sign-in that earns one (sign-in.ts), and the HTTP calls both make to
// the upstream's authorization server (token-calls.ts).

export { type SubjectSource, type UpstreamAuthorization, UpstreamCredentials } from './credentials.js';
export { type GrantStore, MemoryGrants } from './grants.js';
export { type Sealer, SignInCallback, UpstreamSignIn } from './sign-in.js';
