// A browser's part of a sign-in, in Node fetch: a cookie jar per host (ports do not separate
// cookies, as in browsers), redirects followed one hop at a time, HTML forms submitted with their
// hidden fields. `aliases` maps a public origin (an https PUBLIC_URL) to where the service really
// listens, so a Secure cookie behaves as over https while the bytes go over loopback http.
import { expect } from 'vitest';

export interface StoredCookie {
  readonly value: string;
  readonly path: string;
  readonly secure: boolean;
}

export interface Visit {
  /** The address the browser shows (the public one, for an alias). */
  readonly url: URL;
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** Redirect statuses a browser follows; 307/308 keep the method, the others become GET. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_HOPS = 20;

export class TestBrowser {
  private readonly jar = new Map<string, Map<string, StoredCookie>>();
  /** Every Set-Cookie header received, as sent, for attribute checks. */
  readonly setCookies: string[] = [];

  constructor(private readonly aliases: Readonly<Record<string, string>> = {}) {}

  cookie(url: string, name: string): StoredCookie | undefined {
    return this.jar.get(new URL(url).hostname)?.get(name);
  }

  setCookie(url: string, name: string, value: string): void {
    const host = new URL(url).hostname;
    const cookies = this.jar.get(host) ?? new Map<string, StoredCookie>();
    cookies.set(name, { value, path: '/', secure: false });
    this.jar.set(host, cookies);
  }

  /** One request, no redirect followed; cookies sent and stored as a browser would. */
  async fetch(
    address: string | URL,
    init: { method?: string; headers?: Record<string, string>; body?: string | FormData } = {},
  ): Promise<Visit> {
    const url = new URL(address);
    const target = this.aliases[url.origin] ? new URL(url.pathname + url.search, this.aliases[url.origin]) : url;
    const headers: Record<string, string> = { ...init.headers };
    const cookieHeader = this.cookieHeader(url);
    if (cookieHeader) headers.cookie = cookieHeader;
    const response = await fetch(target, { method: init.method ?? 'GET', headers, body: init.body, redirect: 'manual' });
    for (const header of response.headers.getSetCookie()) this.store(url, header);
    return { url, status: response.status, headers: response.headers, body: await response.text() };
  }

  /**
   * Follows redirects from `address` until a page that is not one, or until `stopAt` says the next
   * address is where the test wants to step in (the visit that points there is returned).
   */
  async follow(
    address: string | URL,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
    stopAt: (next: URL) => boolean = () => false,
  ): Promise<Visit> {
    let visit = await this.fetch(address, init);
    for (let hop = 0; REDIRECTS.has(visit.status); hop++) {
      expect(hop, 'too many redirects').toBeLessThan(MAX_HOPS);
      const next = new URL(visit.headers.get('location')!, visit.url);
      if (stopAt(next)) return visit;
      const keep = visit.status === 307 || visit.status === 308;
      visit = await this.fetch(next, keep ? init : {});
    }
    return visit;
  }

  /**
   * Submits the form of `page` whose action contains `action`, with its hidden inputs and `fields`
   * (a submit button's name/value among them), and follows where it leads.
   */
  async submit(page: Visit, action: string, fields: Record<string, string> = {}, stopAt?: (next: URL) => boolean): Promise<Visit> {
    const form = [...page.body.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].find((match) =>
      attribute(match[1]!, 'action')?.includes(action),
    );
    expect(form, `a form posting to ${action} on ${page.url.href}: ${page.body.slice(0, 500)}`).toBeDefined();
    const values = new URLSearchParams();
    for (const input of form![2]!.matchAll(/<input\b([^>]*)>/gi)) {
      const name = attribute(input[1]!, 'name');
      if (name && attribute(input[1]!, 'type') === 'hidden') values.set(name, attribute(input[1]!, 'value') ?? '');
    }
    for (const [name, value] of Object.entries(fields)) values.set(name, value);
    const target = new URL(attribute(form![1]!, 'action')!, page.url);
    return this.follow(
      target,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: values.toString() },
      stopAt,
    );
  }

  private cookieHeader(url: URL): string {
    const cookies = this.jar.get(url.hostname);
    if (!cookies) return '';
    return [...cookies]
      .filter(([, cookie]) => url.pathname.startsWith(cookie.path) && (!cookie.secure || url.protocol === 'https:'))
      .map(([name, cookie]) => `${name}=${cookie.value}`)
      .join('; ');
  }

  private store(url: URL, header: string): void {
    this.setCookies.push(header);
    const [pair, ...attributes] = header.split(';').map((part) => part.trim());
    const eq = pair!.indexOf('=');
    const name = pair!.slice(0, eq);
    const value = pair!.slice(eq + 1);
    const attrs = new Map(attributes.map((a) => [a.split('=')[0]!.toLowerCase(), a.slice(a.indexOf('=') + 1)]));
    const cookies = this.jar.get(url.hostname) ?? new Map<string, StoredCookie>();
    this.jar.set(url.hostname, cookies);
    const maxAge = attrs.has('max-age') ? Number(attrs.get('max-age')) : null;
    const expires = attrs.has('expires') ? Date.parse(attrs.get('expires')!) : null;
    if (value === '' || (maxAge !== null && maxAge <= 0) || (expires !== null && expires <= Date.now())) {
      cookies.delete(name);
      return;
    }
    cookies.set(name, { value, path: attrs.get('path') ?? '/', secure: attrs.has('secure') });
  }
}

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  return match ? decodeEntities(match[1] ?? match[2] ?? match[3] ?? '') : undefined;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

/**
 * Signs in as `login` through the provider's forms, up to the provider's redirect back to the
 * service: returns the callback address without visiting it, so a test can alter it first.
 * `toProvider` may alter the authorization request on its way (as an attacker in the middle would).
 */
export async function signInUntilCallback(
  browser: TestBrowser,
  publicUrl: string,
  login: string,
  toProvider: (authorization: URL) => URL = (url) => url,
): Promise<{ authorization: URL; callback: URL }> {
  const service = new URL(publicUrl).origin;
  const leaving = await browser.follow(`${publicUrl}/auth/login`, {}, (next) => next.origin !== service);
  expect(leaving.status).toBe(302);
  const authorization = new URL(leaving.headers.get('location')!);
  const back = (next: URL) => next.origin === service;
  // The provider's login form, then its consent form (a first grant); a provider that remembers
  // the person (its own session) and the grant sends the browser straight back.
  let returning = await browser.follow(toProvider(new URL(authorization)), {}, back);
  if (/name="login"/.test(returning.body)) {
    returning = await browser.submit(returning, '/interaction/', { login, password: 'qualquer' }, back);
  }
  if (!REDIRECTS.has(returning.status)) returning = await browser.submit(returning, '/interaction/', {}, back);
  const callback = new URL(returning.headers.get('location')!, returning.url);
  expect(callback.pathname).toBe(`${new URL(publicUrl).pathname.replace(/\/$/, '')}/auth/callback`);
  return { authorization, callback };
}

/** The whole sign-in: the callback visited and its redirect followed to the page it leads to. */
export async function signIn(browser: TestBrowser, publicUrl: string, login: string): Promise<Visit> {
  const { callback } = await signInUntilCallback(browser, publicUrl, login);
  return browser.follow(callback);
}
