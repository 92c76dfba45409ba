// /auth/* (SPEC §8): the browser's side of sign-in. GET /auth/login sends the person to the
// provider; GET /auth/callback checks the answer and starts a session; POST /auth/logout ends it and
// the provider's; GET /auth/sessao says who is signed in; GET /auth/negado is the default-deny page.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CsrfInvalidError, NoSessionError, type SignInConfig } from '@censo/shared';
import { ProviderUnavailableError, SignInRefusedError, type RelyingParty, type SignedInPerson } from './oidc.js';
import { deniedPage, sendPage, signInFailedPage } from './pages.js';
import { permissionsOf } from './permissions.js';
import { csrfMatches, type StaffSessions } from './sessions.js';

export interface SignInRoutesOptions {
  readonly settings: SignInConfig;
  readonly sessions: StaffSessions;
  readonly relyingParty: RelyingParty;
}

const MESSAGES = {
  notStartedHere: 'A entrada expirou ou não foi iniciada neste navegador. Entre de novo a partir da página do serviço.',
  refused: 'O provedor de identidade não concluiu a entrada (acesso recusado ou cancelado).',
  invalid: 'A resposta do provedor de identidade não pôde ser validada.',
  unavailable: 'O provedor de identidade não respondeu. Tente de novo em instantes.',
} as const;

/** Routes for browsers, not for the API's clients: left out of the OpenAPI document. */
const hidden = { schema: { hide: true } } as const;

export async function signInRoutes(app: FastifyInstance, opts: SignInRoutesOptions): Promise<void> {
  const { settings, sessions, relyingParty } = opts;
  const home = `${settings.publicUrl}/`;
  const login = `${settings.publicUrl}/auth/login`;
  const failed = (reply: FastifyReply, status: number, reason: string) => sendPage(reply, status, signInFailedPage(reason, login));

  // The deny page's logout form posts a field; nothing else here takes a body.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  app.get('/auth/login', hidden, async (_request, reply) => {
    const pending = sessions.beginSignIn(reply);
    try {
      const target = await relyingParty.authorizationUrl(pending);
      return reply.header('cache-control', 'no-store').redirect(target.href, 302);
    } catch (err) {
      if (err instanceof ProviderUnavailableError) return failed(reply, 503, MESSAGES.unavailable);
      throw err;
    }
  });

  app.get('/auth/callback', hidden, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const pending = sessions.finishSignIn(request, reply, typeof query.state === 'string' ? query.state : undefined);
    if (pending === null) return failed(reply, 400, MESSAGES.notStartedHere);
    // The redirect URI the provider was given, with the query the browser brought back.
    const callbackUrl = new URL(relyingParty.redirectUri);
    callbackUrl.search = new URL(request.url, 'http://callback').search;
    let person: SignedInPerson;
    try {
      person = await relyingParty.finish(callbackUrl, { state: query.state as string, ...pending });
    } catch (err) {
      if (err instanceof ProviderUnavailableError) return failed(reply, 503, MESSAGES.unavailable);
      if (err instanceof SignInRefusedError) {
        request.log.info({ providerError: err.providerError }, 'sign-in refused by the provider');
        return failed(reply, 400, MESSAGES.refused);
      }
      // The library's reason (a bad signature, a wrong nonce, issuer or audience) without its values.
      request.log.warn({ code: (err as { code?: unknown }).code, reason: (err as Error).message }, 'sign-in response rejected');
      return failed(reply, 400, MESSAGES.invalid);
    }
    const permissoes = permissionsOf(person.roles, settings);
    const previous = request.cookies[sessions.cookieName(request)] ?? null;
    await sessions.start(reply, { sub: person.sub, email: person.email, nome: person.nome, permissoes, idToken: person.idToken }, previous);
    return reply.header('cache-control', 'no-store').redirect(permissoes.length > 0 ? home : `${settings.publicUrl}/auth/negado`, 303);
  });

  app.get('/auth/sessao', hidden, async (request, reply) => {
    const current = await sessions.current(request);
    if (current === null) throw new NoSessionError();
    const { nome, email, permissoes } = current.session;
    // The page reads the CSRF token here and sends it back on POST and DELETE.
    return reply.header('cache-control', 'no-store').header('x-csrf-token', current.session.csrf).send({ nome, email, permissoes });
  });

  app.get('/auth/negado', hidden, async (request, reply) => {
    const current = await sessions.current(request);
    if (current === null || current.session.permissoes.length > 0) return reply.redirect(home, 303);
    const who = current.session.nome ?? current.session.email ?? current.session.sub;
    const endSession = await relyingParty.endSessionUrl(null);
    return sendPage(
      reply,
      403,
      deniedPage(who, `${settings.publicUrl}/auth/logout`, current.session.csrf),
      endSession ? [endSession.origin] : [],
    );
  });

  // A logout changes something only with the session's cookie and its CSRF token (SPEC §9), which
  // a page of another site has neither of: SameSite=Lax keeps the cookie off its cross-site POST,
  // and it cannot read the token.
  // - No live session in the request (the cross-site form, or a session already over): nothing to
  //   end, so nothing is touched. No Set-Cookie (clearing the cookie would sign the person out of
  //   this browser all the same: a browser applies a top-level answer's cookies even cross-site)
  //   and no trip to the provider's logout (that would end the provider's session). The answer
  //   goes home, where the page shows whoever is still signed in.
  // - A live session without its token (a same-site page, a stale tab): the 403 `Token CSRF
  //   inválido.` that /api/* answers, and the session goes on.
  app.post('/auth/logout', hidden, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const current = await sessions.current(request);
    if (current === null) return leave(request, reply, home);
    if (!csrfMatches(current.session, headerOrField(request, 'x-csrf-token', 'csrf'))) throw new CsrfInvalidError();
    await sessions.end(current.id);
    sessions.clearCookie(reply);
    return leave(request, reply, (await relyingParty.endSessionUrl(current.session.idToken))?.href ?? home);
  });
}

/**
 * The page signs out with fetch (a form's redirect to the provider would need the provider in the
 * page's form-action): it gets the address and goes there itself. A form follows a 303.
 */
function leave(request: FastifyRequest, reply: FastifyReply, target: string): FastifyReply {
  if (wantsJson(request)) return reply.send({ redirecionar: target });
  return reply.redirect(target, 303);
}

function headerOrField(request: FastifyRequest, header: string, field: string): string | undefined {
  const fromHeader = request.headers[header];
  if (typeof fromHeader === 'string') return fromHeader;
  const value = (request.body as Record<string, unknown> | undefined)?.[field];
  return typeof value === 'string' ? value : undefined;
}

function wantsJson(request: FastifyRequest): boolean {
  return /\bapplication\/json\b/.test(request.headers.accept ?? '');
}
