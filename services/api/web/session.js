// Staff sign-in on the page (SPEC §3.6, §8). GET /auth/sessao says which mode the service is in:
// 200 signed in (who, permissions, and the CSRF token in its x-csrf-token header), 401 sign-in
// configured and nobody signed in, 204 no sign-in (the page keeps the key field). Signed in, calls
// carry the session cookie and, on POST/DELETE, the CSRF token; never the key.
const $ = (id) => document.getElementById(id);
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

let person = null;
let csrf = null;

export function signedIn() {
  return person !== null;
}

/** The headers a call to /api/* needs: the session's (signed in) or the tab's key. */
export function credentials(method, apiKey) {
  if (person !== null) return STATE_CHANGING.has(method) ? { 'x-csrf-token': csrf } : {};
  return { 'x-api-key': apiKey ?? '' };
}

/** A 401 while signed in: the session ended (idle, 8 h, or signed out in another tab). */
export function sessionLost() {
  if (person === null) return;
  person = null;
  showSignIn('Sua sessão terminou. Entre de novo para continuar.');
}

function box() {
  let element = $('sessao');
  if (!element) {
    element = Object.assign(document.createElement('div'), { id: 'sessao', className: 'sessao' });
    $('chave-form').after(element);
  }
  $('chave-form').hidden = true;
  return element;
}

function showPerson() {
  const who = document.createElement('p');
  who.append('Conectado como ', Object.assign(document.createElement('strong'), { textContent: person.nome ?? person.email ?? '—' }));
  if (person.email && person.nome) who.append(` (${person.email})`);
  const leave = Object.assign(document.createElement('button'), { type: 'button', id: 'sair-sessao', textContent: 'Sair' });
  leave.addEventListener('click', signOut);
  box().replaceChildren(who, leave);
  document.querySelector('nav').hidden = false;
  document.querySelector('main').hidden = false;
}

function showSignIn(text) {
  const why = Object.assign(document.createElement('p'), { textContent: text });
  const enter = Object.assign(document.createElement('a'), { href: '/auth/login', textContent: 'Entrar', className: 'entrar' });
  box().replaceChildren(why, enter);
  // Nothing on the page works without a session: show only the way in.
  document.querySelector('nav').hidden = true;
  document.querySelector('main').hidden = true;
}

async function signOut() {
  const response = await fetch('/auth/logout', { method: 'POST', headers: { 'x-csrf-token': csrf, accept: 'application/json' } });
  person = null;
  const answer = response.ok ? await response.json() : null;
  // The provider's logout page (RP-initiated logout), or the page itself when it has none.
  window.location.assign(answer?.redirecionar ?? '/');
}

async function start() {
  let response;
  try {
    response = await fetch('/auth/sessao', { cache: 'no-store' });
  } catch {
    return; // no answer: the key field stays, and calls say what failed
  }
  if (response.status === 401) {
    showSignIn('Entre com a conta da secretaria para usar o serviço.');
    return;
  }
  if (response.status !== 200) return; // 204: no sign-in here, the key as before
  const body = await response.json();
  if (body.permissoes.length === 0) {
    window.location.replace('/auth/negado'); // default deny: the page that says so
    return;
  }
  person = body;
  csrf = response.headers.get('x-csrf-token');
  showPerson();
}

/** Settles once the mode is known; app.js needs nothing from it before a call. */
export const ready = start();
