// The OpenID Connect relying party (SPEC §8), on openid-client (OpenID Certified): authorization
// code flow with PKCE S256, state and nonce, and the ID token validated whole (signature against the
// provider's keys, issuer, audience, azp, expiry, nonce). The provider's metadata is discovered on
// first use and kept; a provider that cannot be reached is retried at the next sign-in instead of
// stopping the service, whose key-based routes do not need it.
import * as client from 'openid-client';
import type { Logger, SignInConfig } from '@censo/shared';
import { rolesOf } from './permissions.js';

/** What the service keeps of a person who signed in. */
export interface SignedInPerson {
  readonly sub: string;
  readonly email: string | null;
  readonly nome: string | null;
  readonly roles: readonly string[];
  readonly idToken: string | null;
}

export interface PendingChecks {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

/** The provider could not be reached (discovery, token or userinfo endpoint). */
export class ProviderUnavailableError extends Error {
  constructor(cause: unknown) {
    super('identity provider unreachable', { cause });
    this.name = 'ProviderUnavailableError';
  }
}

/** The provider answered the sign-in with an error (the person refused, the client is misconfigured). */
export class SignInRefusedError extends Error {
  constructor(readonly providerError: string) {
    super(`the provider refused the sign-in: ${providerError}`);
    this.name = 'SignInRefusedError';
  }
}

/** Seconds allowed for each call to the provider. */
const PROVIDER_TIMEOUT_S = 10;

export class RelyingParty {
  private discovered: Promise<client.Configuration> | null = null;

  constructor(
    private readonly settings: SignInConfig,
    private readonly log: Logger,
  ) {}

  get redirectUri(): string {
    return `${this.settings.publicUrl}/auth/callback`;
  }

  /** Where the browser goes to sign in. */
  async authorizationUrl(checks: PendingChecks): Promise<URL> {
    const config = await this.configuration();
    return client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: this.settings.scopes,
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  /**
   * Validates the provider's answer (`callbackUrl`: the redirect URI with the query the browser
   * brought) and exchanges the code. Claims the ID token leaves out (providers that, like
   * oidc-provider, keep profile claims for the userinfo endpoint) are read from userinfo.
   */
  async finish(callbackUrl: URL, checks: PendingChecks): Promise<SignedInPerson> {
    const config = await this.configuration();
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedNonce: checks.nonce,
        expectedState: checks.state,
        idTokenExpected: true,
      });
    } catch (err) {
      if (err instanceof client.AuthorizationResponseError) throw new SignInRefusedError(err.error);
      throw unreachable(err) ?? err;
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new Error('no ID token in the token response');
    let claims: Record<string, unknown> = { ...idClaims };
    const missing = !('email' in claims) || !('name' in claims) || rolesOf(claims, this.settings.rolesClaim).length === 0;
    if (missing && config.serverMetadata().userinfo_endpoint) {
      try {
        // The ID token's own claims win: they are signed.
        claims = { ...(await client.fetchUserInfo(config, tokens.access_token, idClaims.sub)), ...idClaims };
      } catch (err) {
        throw unreachable(err) ?? err;
      }
    }
    return {
      sub: idClaims.sub,
      email: textClaim(claims.email),
      nome: textClaim(claims.name) ?? joined(claims.given_name, claims.family_name) ?? textClaim(claims.preferred_username),
      roles: rolesOf(claims, this.settings.rolesClaim),
      idToken: tokens.id_token ?? null,
    };
  }

  /**
   * RP-initiated logout: the provider's end_session_endpoint with the ID token as hint and the page
   * as the place to come back to; null when the provider has none (Google) or cannot be reached.
   */
  async endSessionUrl(idToken: string | null): Promise<URL | null> {
    const config = await this.configuration().catch(() => null);
    if (!config?.serverMetadata().end_session_endpoint) return null;
    return client.buildEndSessionUrl(config, {
      post_logout_redirect_uri: `${this.settings.publicUrl}/`,
      ...(idToken === null ? {} : { id_token_hint: idToken }),
    });
  }

  private configuration(): Promise<client.Configuration> {
    this.discovered ??= this.discover().catch((err: unknown) => {
      this.discovered = null;
      this.log.warn({ err, issuer: this.settings.issuer }, 'OpenID Provider discovery failed');
      throw new ProviderUnavailableError(err);
    });
    return this.discovered;
  }

  private async discover(): Promise<client.Configuration> {
    const issuer = new URL(this.settings.issuer);
    const execute = [client.enableNonRepudiationChecks];
    // Config allows http only for a loopback issuer (a provider on this machine, in tests).
    if (issuer.protocol === 'http:') execute.push(client.allowInsecureRequests);
    const { clientSecret } = this.settings;
    return client.discovery(
      issuer,
      this.settings.clientId,
      clientSecret === null ? undefined : { client_secret: clientSecret },
      // client_secret_basic is the method every provider must support (RFC 6749 §2.3.1).
      clientSecret === null ? client.None() : client.ClientSecretBasic(clientSecret),
      { execute, timeout: PROVIDER_TIMEOUT_S },
    );
  }
}

/** A network failure or timeout talking to the provider, as ProviderUnavailableError. */
function unreachable(err: unknown): ProviderUnavailableError | null {
  const name = (err as { name?: unknown } | null)?.name;
  if (err instanceof TypeError || name === 'TimeoutError' || name === 'AbortError') return new ProviderUnavailableError(err);
  return null;
}

function textClaim(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function joined(...parts: unknown[]): string | null {
  const texts = parts.map(textClaim).filter((part): part is string => part !== null);
  return texts.length > 0 ? texts.join(' ') : null;
}
