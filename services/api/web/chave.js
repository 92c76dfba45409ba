// The key once per tab (SPEC §3.6), or the signed-in session (§8, session.js), and where the
// page says things: the header's line for the key and the page, one box per task's panel. Every
// action of a tab runs through `guarded`, so a missing or refused key is asked for again.
import { ApiError, key } from './api.js';
import { messages, messagesIn } from './messages.js';
import { signedIn } from './session.js';

const $ = (id) => document.getElementById(id);

/** The key's and the page's own messages, under the header. */
export const header = messages($('status'), $('erro'));
/** Each task's messages, in its own panel. */
export const boxes = {
  divergencias: messagesIn($('painel-divergencias')),
  retorno: messagesIn($('painel-retorno')),
  lotes: messagesIn($('painel-lotes')),
  consultas: messagesIn($('painel-consultas')),
};

/** `err` said in `box`; a refused key is asked for again. */
export function showError(err, box) {
  box.error(err);
  if (err instanceof ApiError && err.status === 401 && !signedIn()) askKey();
}

export function askKey() {
  key.clear();
  $('chave').value = '';
  $('chave').disabled = false;
  $('entrar').disabled = false;
  $('sair').hidden = true;
  $('chave').focus();
}

/** The key is kept: its field locks and focus moves on to the task, never to <body>. */
function keyEntered({ moveFocus = false } = {}) {
  $('chave').value = '';
  $('chave').disabled = true;
  $('entrar').disabled = true;
  $('sair').hidden = false;
  if (moveFocus) document.querySelector('[role="tabpanel"]:not([hidden]) input, [role="tabpanel"]:not([hidden]) select')?.focus();
}

/** A key typed and not entered is the key used (SPEC §3.6): it becomes the tab's key. */
export function adoptTypedKey() {
  if (!$('chave').disabled && key.set($('chave').value)) keyEntered();
}

/** Runs an action with its errors shown in `box` (its panel's) and the status line kept honest. */
export async function guarded(box, action) {
  box.clear();
  header.clear();
  adoptTypedKey();
  if (!key.get() && !signedIn()) {
    // About the key: said beside it, where the person goes next.
    header.tell('Informe a chave de acesso no alto da página e tente de novo.');
    askKey();
    return;
  }
  try {
    await action();
  } catch (err) {
    showError(err, box);
  }
}

/**
 * The key's form: a key kept from earlier in this tab locks the field; "Entrar" keeps a new one
 * and calls `entered()` (the open tab asks for what it lists); "Trocar chave" asks again.
 */
export function initChave({ entered }) {
  if (key.get()) keyEntered();
  $('chave-form').addEventListener('submit', (e) => {
    e.preventDefault();
    // Every message so far was about the key the person is now replacing, or is about to be stale.
    header.clear();
    for (const box of Object.values(boxes)) box.clear();
    if ($('chave').disabled) return;
    if (!key.set($('chave').value)) {
      header.tell('Informe a chave de acesso.');
      $('chave').focus();
      return;
    }
    keyEntered({ moveFocus: true });
    header.status('Chave registrada nesta aba.');
    entered();
  });
  $('sair').addEventListener('click', askKey);
}
