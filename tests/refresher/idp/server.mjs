// A real OpenID Connect provider (panva's certified `oidc-provider`) on loopback, for the token
// refresher's tests. Usage: node server.mjs PORT ACCESS_TOKEN_TTL_SECONDS
// Prints one JSON line {"issuer": ..., "client_id": ..., "client_secret": ...} once it listens.
// Refresh tokens always rotate (a reused one revokes the grant), so a refresher that forgets the
// rotated token fails. RFC 8693 token exchange is registered through the provider's own grant-type
// API: it checks the subject token with the provider's AccessToken model and issues a real
// AccessToken of the same grant, which the provider's userinfo endpoint then accepts.
import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2]);
const accessTokenTtl = Number(process.argv[3] || 60);
const issuer = `http://127.0.0.1:${port}`;
const client = {
  client_id: 'notebook-token-refresher',
  client_secret: 'a-test-secret-that-is-long-enough-0123456789',
  grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:token-exchange'],
  response_types: ['code'],
  redirect_uris: ['http://127.0.0.1/callback'],
};

const provider = new Provider(issuer, {
  clients: [client],
  findAccount: async (ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: `${sub}@example.org` }),
  }),
  claims: { openid: ['sub'], email: ['email'] },
  scopes: ['openid', 'offline_access', 'email'],
  features: { devInteractions: { enabled: true }, introspection: { enabled: true } },
  rotateRefreshToken: true,
  // introspection shows which audience an exchanged token was issued for
  extraTokenClaims: async (ctx, token) => (token.gty === 'token_exchange' ? { exchanged_for: ctx.oidc.params.audience } : undefined),
  ttl: { AccessToken: accessTokenTtl, RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600, IdToken: 600, AuthorizationCode: 60 },
});

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { params, client: caller } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest('subject_token_type must be an access token');
  }
  const subject = await provider.AccessToken.find(params.subject_token);
  if (!subject || subject.isExpired || subject.clientId !== caller.clientId) {
    throw new errors.InvalidGrant('subject_token is invalid, expired or not this client\'s');
  }
  const token = new provider.AccessToken({
    accountId: subject.accountId,
    client: caller,
    grantId: subject.grantId,
    scope: subject.scope,
    gty: 'token_exchange',
  });
  ctx.oidc.entity('AccessToken', token);
  const value = await token.save();
  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope: token.scope,
  };
}, ['subject_token', 'subject_token_type', 'audience', 'requested_token_type', 'scope']);

provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ issuer, client_id: client.client_id, client_secret: client.client_secret })}\n`);
});
