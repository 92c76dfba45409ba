// The few pages sign-in shows outside the staff page: access denied (default deny, SPEC §8) and a
// sign-in that could not finish. Portuguese, no script, the page's own stylesheet, every value
// escaped; a Content-Security-Policy that allows nothing else.
import type { FastifyReply } from 'fastify';

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

/**
 * `formAction`: where the page's forms may go, redirects included (the logout form ends at the
 * provider's end_session_endpoint).
 */
function csp(formAction: readonly string[]): string {
  return [
    "default-src 'none'",
    "style-src 'self'",
    `form-action 'self'${formAction.map((origin) => ` ${origin}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="pt-BR">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)} — censo-api</title>
  <link rel="stylesheet" href="/app.css">
</head>
<body>
  <header><h1>Retorno do Censo × Receita Federal</h1></header>
  <main>
    <h2>${escapeHtml(title)}</h2>
${body}
  </main>
</body>
</html>
`;
}

export function sendPage(reply: FastifyReply, status: number, html: string, formAction: readonly string[] = []): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', csp(formAction))
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .send(html);
}

/** Default deny: signed in, but the provider's groups grant neither task. */
export function deniedPage(who: string, logoutUrl: string, csrf: string): string {
  return page(
    'Acesso negado',
    `    <p>Você entrou como <strong>${escapeHtml(who)}</strong>, mas sua conta não tem permissão para usar este serviço.</p>
    <p>Peça à equipe responsável pelo Censo Escolar na secretaria que inclua sua conta no grupo de acesso e entre de novo.</p>
    <form method="post" action="${escapeHtml(logoutUrl)}">
      <input type="hidden" name="csrf" value="${escapeHtml(csrf)}">
      <button type="submit">Sair</button>
    </form>`,
  );
}

/** A sign-in that did not finish: what happened, in words, and the way back. */
export function signInFailedPage(reason: string, loginUrl: string): string {
  return page(
    'Não foi possível entrar',
    `    <p>${escapeHtml(reason)}</p>
    <p><a href="${escapeHtml(loginUrl)}">Entrar de novo</a></p>`,
  );
}
