// An incoherent resource server is refused at start-up with every reason at once: what each
// auth.mode needs, URLs a token can be compared with, no unsigned or HMAC algorithms, no rule
// that cannot be enforced, nothing that would carry the client's token upstream.

import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/load.js';

function problems(argv: string[], env: NodeJS.ProcessEnv = {}): string[] {
  try {
    // upstream.url is the one upstream's; a config naming upstreams gives each its own.
    loadConfig(argv.includes('--upstreams') ? argv : ['--upstream.url', 'http://127.0.0.1:1/mcp', ...argv], env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}

const JWT = [
  '--auth.mode',
  'jwt',
  '--auth.issuer',
  'https://as.example',
  '--auth.jwksUrl',
  'https://as.example/jwks',
  '--auth.resource',
  'https://mcp.example/mcp',
  '--principal.hashSecret',
  'x'.repeat(32),
];

t.test('a coherent jwt and introspection configuration loads', async (t) => {
  t.same(problems(JWT), []);
  const env = { CAUSEWAY_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret' };
  t.same(
    problems(
      [
        '--auth.mode',
        'introspection',
        '--auth.issuer',
        'https://as.example',
        '--auth.resource',
        'https://mcp.example/mcp',
        '--auth.introspectionUrl',
        'https://as.example/introspect',
        '--auth.introspectionClientId',
        'causeway',
        '--principal.hashSecret',
        'x'.repeat(32),
      ],
      env,
    ),
    [],
    'the client secret from the environment',
  );
});

t.test('jwt mode: every problem reported together', async (t) => {
  const found = problems([
    '--auth.mode',
    'jwt',
    '--auth.issuer',
    'http://as.example',
    '--auth.resource',
    'https://mcp.example/mcp#x',
    '--auth.algorithms',
    'RS256,none,HS256',
    '--auth.rules',
    '{"tools/call ":["a"],"*":[],"prompts/get x":["bad scope"]}',
    '--principal.mode',
    'bearer',
    '--upstream.forwardHeaders',
    'traceparent,Authorization',
  ]);
  t.same(found.sort(), [
    'auth.algorithms: not accepted (only RS256, RS384, RS512, PS256, ' +
      'PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519): none, HS256',
    'auth.issuer: must be https (http only on loopback)',
    'auth.jwksUrl: required when auth.mode is jwt',
    'auth.resource: must not have a fragment',
    'auth.rules.*: expected a non-empty list of scope names',
    'auth.rules.prompts/get x: expected a non-empty list of scope names',
    'auth.rules: "tools/call " is not "method" or "method name-pattern"',
    'principal.hashSecret: required (16+ characters) when auth.mode is set',
    'principal.hashSecret: required (16+ characters) when principal.mode is not none',
    'principal.mode: must be none when auth.mode is set: the principal is then the token’s iss and sub',
    'upstream default: forwardHeaders must not name Authorization ' +
      "when auth.mode is set: the client's token is for Causeway alone",
  ]);
});

t.test('introspection mode needs its endpoint and credentials', async (t) => {
  const found = problems([
    '--auth.mode',
    'introspection',
    '--auth.issuer',
    'https://as.example',
    '--auth.resource',
    'https://mcp.example/mcp',
    '--principal.hashSecret',
    'x'.repeat(32),
  ]);
  t.same(found, [
    'auth.introspectionUrl: required when auth.mode is introspection',
    'auth.introspectionClientId: required when auth.mode is introspection',
    'auth.introspectionClientSecret: required when auth.mode is introspection',
  ]);
});

t.test(
  'auth settings given while auth.mode is none are refused: the deployment believes it is protected',
  async (t) => {
    t.same(problems(['--auth.issuer', 'https://as.example', '--auth.rules', '{"*":["mcp"]}']), [
      'auth.issuer: set, but auth.mode is none',
      'auth.rules: set, but auth.mode is none',
    ]);
  },
);

t.test('DPoP: its algorithms checked like the tokens’, a choice of three modes', async (t) => {
  t.same(problems([...JWT, '--auth.dpop', 'required', '--auth.dpopAlgorithms', 'ES256,HS256,none']), [
    'auth.dpopAlgorithms: not accepted (only RS256, RS384, RS512, PS256, ' +
      'PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519): HS256, none',
  ]);
  t.same(problems([...JWT, '--auth.dpopAlgorithms', '']), [
    'auth.dpopAlgorithms: at least one is needed unless auth.dpop is off',
  ]);
  t.same(problems([...JWT, '--auth.dpop', 'off', '--auth.dpopAlgorithms', '']), [], 'none needed when off');
  t.equal(problems([...JWT, '--auth.dpop', 'sometimes']).length, 1, 'an unknown mode is refused');
});

t.test(
  'upstream credentials: what each grant needs, a secret sent only over TLS, never beside a static Authorization',
  async (t) => {
    const cc = {
      grant: 'client_credentials',
      tokenUrl: 'https://as.example/token',
      clientId: 'causeway',
      clientSecret: 's3cret',
    };
    const upstreams = (u: Record<string, unknown>) => ['--upstreams', JSON.stringify(u)];
    t.same(problems([...JWT, ...upstreams({ a: { url: 'http://127.0.0.1:1/mcp', credentials: cc } })]), []);
    t.same(
      problems(
        upstreams({
          a: { url: 'http://127.0.0.1:1/mcp', credentials: { ...cc, tokenUrl: 'http://127.0.0.1:9/token' } },
        }),
      ),
      [],
      'plain http on loopback, and no auth.mode needed',
    );
    t.same(
      problems(upstreams({ a: { url: 'http://127.0.0.1:1/mcp', credentials: { ...cc, grant: 'token_exchange' } } })),
      [
        'upstream a: credentials grant token_exchange needs auth.mode ' +
          "jwt or introspection: it exchanges the client's verified token",
      ],
    );
    t.same(
      problems([
        ...JWT,
        ...upstreams({
          a: {
            url: 'http://127.0.0.1:1/mcp',
            credentials: { ...cc, grant: 'token_exchange', audience: 'https://up.example' },
          },
        }),
      ]),
      [],
    );
    t.same(
      problems(
        upstreams({
          a: {
            url: 'http://127.0.0.1:1/mcp',
            credentials: { grant: 'password', tokenUrl: 'http://as.example/token', audience: 'x', extra: 'y' },
          },
          b: {
            url: 'http://127.0.0.1:1/mcp',
            credentials: { ...cc, grant: 'token_exchange', resource: 'not a url' },
            headers: { Authorization: 'Bearer static' },
          },
          c: { transport: 'stdio', command: 'node', credentials: cc },
          d: { url: 'http://127.0.0.1:1/mcp', credentials: 'cc' },
        }).concat(
          '--mounts',
          JSON.stringify({
            '/a': { upstreams: ['a'] },
            '/b': { upstreams: ['b'] },
            '/c': { upstreams: ['c'] },
            '/d': { upstreams: ['d'] },
          }),
        ),
      ).sort(),
      [
        'upstreams.a.credentials.audience: only for grant token_exchange',
        'upstreams.a.credentials.clientId: required',
        'upstreams.a.credentials.clientSecret: required',
        'upstreams.a.credentials.grant: expected one of client_credentials, token_exchange, authorization_code',
        'upstreams.a.credentials.tokenUrl: must be https (http only on loopback)',
        'upstreams.a.credentials: unknown setting extra',
        'upstreams.b.credentials.resource: expected an absolute URL',
        'upstreams.b: give credentials or an Authorization header, not both',
        'upstreams.c.credentials: only for transport streamable-http',
        'upstreams.d.credentials: expected an object of strings',
      ].sort(),
    );
  },
);

t.test(
  'users signing in at an upstream: the issuer instead of a token URL, and a callback that is not a mount',
  async (t) => {
    const signIn = {
      grant: 'authorization_code',
      issuer: 'https://login.crm.example',
      clientId: 'causeway',
      clientSecret: 's3cret',
    };
    const upstreams = (credentials: Record<string, string>) => [
      '--upstreams',
      JSON.stringify({ crm: { url: 'http://127.0.0.1:1/mcp', credentials } }),
    ];
    t.same(problems([...JWT, ...upstreams(signIn), '--auth.callbackUrl', 'https://mcp.example/oauth/callback']), []);
    t.same(problems([...JWT, ...upstreams(signIn)]), ['auth.callbackUrl: required: upstream crm has users sign in']);
    const callback = ['--auth.callbackUrl', 'https://mcp.example/oauth/callback'];
    const redis = problems([...JWT, ...upstreams(signIn), ...callback, '--store.kind', 'redis']);
    t.match(
      redis,
      [/^mrtr\.stateKeys: required with store\.kind redis: /],
      'the keys of every Redis-store config ' + '(checks.test.ts)',
    );
    t.equal(redis.length, 1);
    t.same(problems([...JWT, ...upstreams(signIn), '--auth.callbackUrl', 'https://mcp.example/mcp']), [
      'auth.callbackUrl: its path /mcp is already served (a mount, or the callback)',
    ]);
    t.same(problems(upstreams(signIn)), [
      'upstream crm: credentials grant authorization_code needs auth.mode jwt ' +
        "or introspection: a user's token is kept for their verified identity",
    ]);
    t.same(problems([...JWT, '--auth.callbackUrl', 'https://mcp.example/cb']), [
      'auth.callbackUrl: set, but no upstream has credentials grant authorization_code',
    ]);
    t.same(
      problems(
        upstreams({ ...signIn, issuer: 'http://login.crm.example', tokenUrl: 'https://login.crm.example/token' }),
      ).sort(),
      [
        'upstreams.crm.credentials.issuer: must be https (http only on loopback)',
        "upstreams.crm.credentials.tokenUrl: not for grant authorization_code (the issuer's metadata names it)",
      ],
    );
    t.same(
      problems(upstreams({ ...signIn, grant: 'client_credentials', tokenUrl: 'https://login.crm.example/token' })),
      ['upstreams.crm.credentials.issuer: only for grant authorization_code'],
    );
  },
);

t.test('a sign-in without a configured client: a metadata document URL that can be a client id', async (t) => {
  const upstreams = [
    '--upstreams',
    JSON.stringify({
      crm: {
        url: 'http://127.0.0.1:1/mcp',
        credentials: { grant: 'authorization_code', issuer: 'https://login.crm.example' },
      },
    }),
  ];
  const base = [...JWT, ...upstreams, '--auth.callbackUrl', 'https://mcp.example/oauth/callback'];
  t.same(problems(base), [], 'neither clientId nor secret: a registration, or the document');
  t.same(problems([...base, '--auth.clientMetadataUrl', 'https://mcp.example/oauth/client']), []);
  for (const bad of ['http://mcp.example/oauth/client', 'https://mcp.example/', 'https://mcp.example/c?x=1']) {
    t.same(
      problems([...base, '--auth.clientMetadataUrl', bad]),
      ['auth.clientMetadataUrl: must be an https URL with a path, no query or fragment'],
      bad,
    );
  }
  t.same(problems([...base, '--auth.clientMetadataUrl', 'https://mcp.example/oauth/callback']), [
    'auth.clientMetadataUrl: its path /oauth/callback is already served (a mount, or the callback)',
  ]);
  t.same(
    problems([
      '--upstreams',
      JSON.stringify({
        crm: {
          url: 'http://127.0.0.1:1/mcp',
          credentials: { grant: 'authorization_code', issuer: 'https://login.crm.example', clientSecret: 'x' },
        },
      }),
      ...JWT,
      '--auth.callbackUrl',
      'https://mcp.example/cb',
    ]),
    ['upstreams.crm.credentials.clientSecret: only with a clientId'],
  );
});

t.test('more issuers: jwt mode only, URLs as for auth.issuer, none twice', async (t) => {
  t.same(problems([...JWT, '--auth.moreIssuers', 'https://partners.example=https://partners.example/jwks']), []);
  t.same(
    problems([
      ...JWT,
      '--auth.moreIssuers',
      'https://as.example=https://as.example/jwks,http://partners.example=https://partners.example/jwks',
    ]).sort(),
    [
      'auth.moreIssuers issuer: must be https (http only on loopback)',
      'auth.moreIssuers: https://as.example is auth.issuer already',
    ],
  );
  const introspection = [
    '--auth.mode',
    'introspection',
    '--auth.issuer',
    'https://as.example',
    '--auth.resource',
    'https://mcp.example/mcp',
    '--auth.introspectionUrl',
    'https://as.example/introspect',
    '--auth.introspectionClientId',
    'c',
    '--auth.introspectionClientSecret',
    's',
    '--principal.hashSecret',
    'x'.repeat(32),
  ];
  t.same(problems([...introspection, '--auth.moreIssuers', 'https://partners.example=https://partners.example/jwks']), [
    'auth.moreIssuers: only in jwt mode (an opaque token does not say its issuer)',
  ]);
});

t.test('DPoP nonces need DPoP', async (t) => {
  t.same(problems([...JWT, '--auth.dpopNonces', 'true']), []);
  t.same(problems([...JWT, '--auth.dpop', 'off', '--auth.dpopNonces', 'true']), [
    'auth.dpopNonces: needs auth.dpop allowed or required',
  ]);
});
