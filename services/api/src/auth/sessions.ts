// Staff sessions (SPEC §8): server-side records behind an opaque cookie. The cookie holds 256
// random bits; the store holds the session under an HMAC of them (SESSION_SECRET), so reading the
// store (a Redis dump, a replica) gives no cookie that works. A new id at every sign-in, 30 min idle
// and 8 h absolute lifetime, a CSRF token per session. A sign-in in progress (state, nonce, PKCE
// verifier) is not stored: it travels sealed (AES-256-GCM) in a short-lived cookie of the browser
// that started it, so an anonymous request writes nothing to the store, and a callback from another
// browser (login CSRF) or with another state finds no cookie to open.
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { Permission } from './permissions.js';
import type { SessionStore } from './session-store.js';

export interface StaffSession {
  readonly sub: string;
  readonly email: string | null;
  readonly nome: string | null;
  readonly permissoes: readonly Permission[];
  /** Sent back in `x-csrf-token` on POST and DELETE (SPEC §8). */
  readonly csrf: string;
  /** The ID token, as `id_token_hint` of the provider's logout. */
  readonly idToken: string | null;
  /** Epoch ms of the sign-in: the absolute lifetime counts from here. */
  readonly createdAt: number;
}

export interface SessionLifetimes {
  readonly idleMs: number;
  readonly absoluteMs: number;
}

/** SPEC §8. Tests shorten them through buildApp's deps, never through a setting. */
export const SESSION_LIFETIMES: SessionLifetimes = { idleMs: 30 * 60_000, absoluteMs: 8 * 60 * 60_000 };

/** What the callback needs to check the provider's answer against the request that started it. */
export interface PendingSignIn {
  readonly nonce: string;
  readonly codeVerifier: string;
}

/** Long enough for a person to type a password and pass a second factor. */
const SIGN_IN_TTL_MS = 10 * 60_000;

/** 32 random bytes, base64url: the shape of every id and token made here. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const randomToken = () => randomBytes(32).toString('base64url');

export interface SessionCookieOptions {
  /** PUBLIC_URL is https: cookies are Secure and take the __Host- prefix (no Domain, Path=/). */
  readonly secure: boolean;
}

export class StaffSessions {
  readonly cookieName: string;
  private readonly sealKey: Buffer;

  constructor(
    private readonly store: SessionStore,
    private readonly secret: string,
    private readonly lifetimes: SessionLifetimes,
    private readonly cookies: SessionCookieOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.cookieName = cookies.secure ? '__Host-censo-sessao' : 'censo-sessao';
    this.sealKey = Buffer.from(hkdfSync('sha256', secret, 'censo-api', 'sign-in state', 32));
  }

  /** The request's live session, its idle lifetime renewed; null when absent, unknown or expired. */
  async current(request: FastifyRequest): Promise<{ id: string; session: StaffSession } | null> {
    const id = request.cookies[this.cookieName];
    if (id === undefined || !TOKEN.test(id)) return null;
    const key = this.key('s', id);
    const stored = await this.store.get(key);
    if (stored === null) return null;
    const session = JSON.parse(stored) as StaffSession;
    const left = session.createdAt + this.lifetimes.absoluteMs - this.now();
    if (left <= 0) {
      await this.store.delete(key);
      return null;
    }
    await this.store.refresh(key, Math.min(this.lifetimes.idleMs, left));
    return { id, session };
  }

  /** A new session under a new id (never the one the browser had before), and its cookie. */
  async start(reply: FastifyReply, person: Omit<StaffSession, 'csrf' | 'createdAt'>, previousId: string | null): Promise<StaffSession> {
    if (previousId !== null) await this.end(previousId);
    const id = randomToken();
    const session: StaffSession = { ...person, csrf: randomToken(), createdAt: this.now() };
    await this.store.set(this.key('s', id), JSON.stringify(session), Math.min(this.lifetimes.idleMs, this.lifetimes.absoluteMs));
    reply.setCookie(this.cookieName, id, this.cookieOptions());
    return session;
  }

  async end(id: string): Promise<void> {
    if (TOKEN.test(id)) await this.store.delete(this.key('s', id));
  }

  clearCookie(reply: FastifyReply): void {
    reply.clearCookie(this.cookieName, this.cookieOptions());
  }

  /**
   * A sign-in about to go to the provider: fresh state, nonce and PKCE verifier, sealed in a cookie
   * named after the state (sign-ins started in two tabs both complete) that only the callback sees.
   */
  beginSignIn(reply: FastifyReply): { state: string } & PendingSignIn {
    const pending = { state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() };
    const name = this.signInCookieName(pending.state);
    const sealed = this.seal(name, JSON.stringify({ ...pending, expiresAt: this.now() + SIGN_IN_TTL_MS }));
    reply.setCookie(name, sealed, { ...this.signInCookieOptions(), maxAge: SIGN_IN_TTL_MS / 1000 });
    return pending;
  }

  /** What the sign-in named by `state` sealed, once (its cookie is cleared); null if this browser did not start it. */
  finishSignIn(request: FastifyRequest, reply: FastifyReply, state: string | undefined): PendingSignIn | null {
    if (state === undefined || !TOKEN.test(state)) return null;
    const name = this.signInCookieName(state);
    const sealed = request.cookies[name];
    if (sealed === undefined) return null;
    reply.clearCookie(name, this.signInCookieOptions());
    const opened = this.open(name, sealed);
    if (opened === null) return null;
    const record = JSON.parse(opened) as { state: string; expiresAt: number } & PendingSignIn;
    if (!sameText(record.state, state) || record.expiresAt <= this.now()) return null;
    return { nonce: record.nonce, codeVerifier: record.codeVerifier };
  }

  private signInCookieName(state: string): string {
    return `censo-entrada-${state.slice(0, 16)}`;
  }

  /** Sent to the callback only; no __Host- prefix, which would force Path=/. */
  private signInCookieOptions(): CookieSerializeOptions {
    return { ...this.cookieOptions(), path: '/auth/callback' };
  }

  private seal(name: string, text: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv).setAAD(Buffer.from(name));
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  private open(name: string, sealed: string): string | null {
    const bytes = Buffer.from(sealed, 'base64url');
    if (bytes.length < 29) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.sealKey, bytes.subarray(0, 12)).setAAD(Buffer.from(name));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      return null; // altered, or sealed under another SESSION_SECRET
    }
  }

  /** HttpOnly, SameSite=Lax (the provider's redirect back is a top-level GET), Secure over https. */
  private cookieOptions(): CookieSerializeOptions {
    return { path: '/', httpOnly: true, sameSite: 'lax', secure: this.cookies.secure };
  }

  private key(kind: 's', value: string): string {
    return `${kind}:${createHmac('sha256', this.secret).update(`${kind}:${value}`).digest('base64url')}`;
  }
}

/** Whether `token` is the session's CSRF token, in constant time. */
export function csrfMatches(session: StaffSession, token: string | undefined): boolean {
  return token !== undefined && sameText(session.csrf, token);
}

function sameText(a: string, b: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}
