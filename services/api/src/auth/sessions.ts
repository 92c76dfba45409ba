// Staff sessions (SPEC §8): server-side records behind an opaque cookie. The cookie holds 256
// random bits; the store holds the session under an HMAC of them (SESSION_SECRET), so reading the
// store (a Redis dump, a replica) gives no cookie that works. A new id at every sign-in, 30 min idle
// and 8 h absolute lifetime, a CSRF token per session. A sign-in in progress (state, nonce, PKCE
// verifier) is not stored: it travels sealed (AES-256-GCM) in a short-lived cookie of the browser
// that started it, so an anonymous request writes nothing to the store, and a callback from another
// browser (login CSRF) or with another state finds nothing to open. Cookies are Secure when
// PUBLIC_URL is https or when the request itself came over https (through a proxy TRUST_PROXY
// names, SPEC §9).
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

/**
 * Sign-ins pending in one browser at once (two tabs, a click on Entrar twice): the newest ones are
 * kept, in one cookie. One cookie per sign-in made every abandoned one ride along to the callback
 * until it expired; about 50 of them and the callback's Cookie header passed Node's 16 KiB header
 * limit, and every sign-in in that browser ended in 431 for ten minutes (issue 33).
 */
const MAX_PENDING_SIGN_INS = 3;

/** The cookie of the pending sign-ins. Its path covers /auth/login, which reads it to add one. */
const SIGN_IN_COOKIE = 'censo-entrada';
const SIGN_IN_COOKIE_PATH = '/auth';

interface PendingRecord extends PendingSignIn {
  readonly state: string;
  readonly expiresAt: number;
}

/** 32 random bytes, base64url: the shape of every id and token made here. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const randomToken = () => randomBytes(32).toString('base64url');

export interface SessionCookieOptions {
  /**
   * PUBLIC_URL is https: cookies are Secure and take the __Host- prefix (no Domain, Path=/) on every
   * request. Otherwise only on requests that came over https (`request.protocol`, which counts
   * X-Forwarded-Proto from the proxies TRUST_PROXY names and from no one else).
   */
  readonly secure: boolean;
}

const SESSION_COOKIE = 'censo-sessao';

export class StaffSessions {
  private readonly sealKey: Buffer;

  constructor(
    private readonly store: SessionStore,
    private readonly secret: string,
    private readonly lifetimes: SessionLifetimes,
    private readonly cookies: SessionCookieOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.sealKey = Buffer.from(hkdfSync('sha256', secret, 'censo-api', 'sign-in state', 32));
  }

  /** Secure cookies for this request: PUBLIC_URL is https, or the request came over https. */
  private secure(request: FastifyRequest): boolean {
    return this.cookies.secure || request.protocol === 'https';
  }

  /** The session cookie's name for this request: a Secure cookie takes the __Host- prefix. */
  cookieName(request: FastifyRequest): string {
    return this.secure(request) ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE;
  }

  /** The request's live session, its idle lifetime renewed; null when absent, unknown or expired. */
  async current(request: FastifyRequest): Promise<{ id: string; session: StaffSession } | null> {
    const id = request.cookies[this.cookieName(request)];
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
    reply.setCookie(this.cookieName(reply.request), id, this.cookieOptions(reply.request));
    return session;
  }

  async end(id: string): Promise<void> {
    if (TOKEN.test(id)) await this.store.delete(this.key('s', id));
  }

  clearCookie(reply: FastifyReply): void {
    reply.clearCookie(this.cookieName(reply.request), this.cookieOptions(reply.request));
  }

  /**
   * A sign-in about to go to the provider: fresh state, nonce and PKCE verifier, sealed in the
   * pending sign-ins' cookie beside the newest others still alive (sign-ins started in two tabs
   * both complete), at most MAX_PENDING_SIGN_INS of them.
   */
  beginSignIn(reply: FastifyReply): { state: string } & PendingSignIn {
    const pending = { state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() };
    const others = this.pendingSignIns(reply.request);
    this.keepPending(reply, [{ ...pending, expiresAt: this.now() + SIGN_IN_TTL_MS }, ...others].slice(0, MAX_PENDING_SIGN_INS));
    return pending;
  }

  /** What the sign-in named by `state` sealed, once (it leaves the cookie); null if this browser did not start it. */
  finishSignIn(request: FastifyRequest, reply: FastifyReply, state: string | undefined): PendingSignIn | null {
    if (state === undefined || !TOKEN.test(state)) return null;
    const records = this.pendingSignIns(request);
    const found = records.find((record) => sameText(record.state, state));
    if (found === undefined) return null;
    const others = records.filter((record) => record !== found);
    this.keepPending(reply, others);
    return { nonce: found.nonce, codeVerifier: found.codeVerifier };
  }

  /** The request's pending sign-ins still alive, newest first; none when the cookie is absent or does not open. */
  private pendingSignIns(request: FastifyRequest): PendingRecord[] {
    const sealed = request.cookies[SIGN_IN_COOKIE];
    if (sealed === undefined) return [];
    const opened = this.open(SIGN_IN_COOKIE, sealed);
    if (opened === null) return [];
    const records = JSON.parse(opened) as unknown;
    return Array.isArray(records) ? (records as PendingRecord[]).filter((record) => record.expiresAt > this.now()) : [];
  }

  /** Writes the pending sign-ins' cookie, or clears it when none is left; it lives as long as the newest. */
  private keepPending(reply: FastifyReply, records: readonly PendingRecord[]): void {
    const options = this.signInCookieOptions(reply.request);
    if (records.length === 0) {
      if (reply.request.cookies[SIGN_IN_COOKIE] !== undefined) reply.clearCookie(SIGN_IN_COOKIE, options);
      return;
    }
    const maxAge = Math.max(1, Math.ceil((Math.max(...records.map((record) => record.expiresAt)) - this.now()) / 1000));
    reply.setCookie(SIGN_IN_COOKIE, this.seal(SIGN_IN_COOKIE, JSON.stringify(records)), { ...options, maxAge });
  }

  /** Sent under /auth only; no __Host- prefix, which would force Path=/. */
  private signInCookieOptions(request: FastifyRequest): CookieSerializeOptions {
    return { ...this.cookieOptions(request), path: SIGN_IN_COOKIE_PATH };
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
  private cookieOptions(request: FastifyRequest): CookieSerializeOptions {
    return { path: '/', httpOnly: true, sameSite: 'lax', secure: this.secure(request) };
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
