// A real OpenID Provider for the sign-in tests: panva's oidc-provider (OpenID Certified; 8.x, the
// line that runs on Node 20) on a loopback address of its own (127.0.0.2, so its cookies and the
// service's never share a host), with its development login and consent forms, RS256-signed ID
// tokens, PKCE required, RP-initiated logout, and one client registered for the service under test.
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import Provider from 'oidc-provider';

export const OP_HOST = '127.0.0.2';
export const CLIENT_ID = 'censo-api';
export const CLIENT_SECRET = 'segredo-do-cliente-de-teste-0123456789';
export const SESSION_SECRET = 'segredo-de-sessao-de-teste-0123456789abcdef';

/** The people the provider knows: the login typed in its form is the account id (`sub`). */
export interface TestAccount {
  readonly email?: string;
  readonly name?: string;
  readonly groups?: readonly string[];
}

export interface TestProvider {
  readonly issuer: string;
  close(): Promise<void>;
}

/**
 * Starts the provider with a client whose redirect URIs are `${publicUrl}/auth/callback` for each
 * of `publicUrls` (and `${publicUrl}/` after logout).
 */
export async function startTestProvider(
  publicUrls: readonly string[],
  accounts: Readonly<Record<string, TestAccount>>,
  /** Publish a key other than the one that signs: every ID token's signature is then wrong. */
  { wrongKeys = false } = {},
): Promise<TestProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, OP_HOST, resolve));
  const issuer = `http://${OP_HOST}:${(server.address() as net.AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: publicUrls.map((url) => `${url}/auth/callback`),
        post_logout_redirect_uris: publicUrls.map((url) => `${url}/`),
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'teste', use: 'sig', alg: 'RS256' }] },
    // Profile claims go to userinfo only (conformIdTokenClaims, the default), as with some real
    // providers: the service must read them there. `groups` is a scope of its own.
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    findAccount: (_ctx, id) => {
      const account = accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...account, groups: account.groups ? [...account.groups] : undefined }) };
    },
    pkce: { required: () => true, methods: ['S256'] },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    // Plain http on loopback: SameSite=None would need Secure, which a browser refuses over http.
    cookies: { keys: ['chave-de-cookies-do-provedor-de-teste'], long: { sameSite: 'lax', signed: true }, short: { signed: true } },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><title>erro</title><pre>${JSON.stringify(out)}</pre>`;
    },
  });
  const handle = provider.callback();
  const { publicKey: otherKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const otherKeys = JSON.stringify({ keys: [{ ...otherKey.export({ format: 'jwk' }), kid: 'teste', use: 'sig', alg: 'RS256' }] });
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    if (wrongKeys && request.url === '/jwks') response.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(otherKeys);
    else void handle(request, response);
  });
  return {
    issuer,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The service's sign-in settings for `provider`. */
export function signInEnv(provider: TestProvider, publicUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    PUBLIC_URL: publicUrl,
    SESSION_SECRET,
    OIDC_SCOPES: 'openid profile email groups',
    OIDC_ROLES_RETORNO: 'censo-retorno',
    OIDC_ROLES_CONSULTA: 'censo-consulta',
    ...extra,
  };
}
