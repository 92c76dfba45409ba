// Where the page speaks: a live status line (announced politely) and an alert box. The key has
// its own pair under the header; each task panel has its own, so a message belongs to its tab:
// another tab's count or error never sits over a result (a hidden panel's messages hide with it).
import { ApiError } from './api.js';

/** The status line and alert box of `scope`: the header's (ids) or a panel's (data-mensagens). */
export function messagesIn(scope) {
  const line = scope.querySelector('[data-mensagens="status"]');
  const alert = scope.querySelector('[data-mensagens="erro"]');
  return messages(line, alert);
}

export function messages(line, alert) {
  const box = {
    status(text) {
      line.textContent = text;
    },
    /** The service's `erro`, or what the person should do next. */
    tell(text) {
      alert.textContent = text;
      alert.hidden = false;
      line.textContent = '';
    },
    clear() {
      alert.hidden = true;
      alert.textContent = '';
    },
    /** A refused call says the service's words; anything else says the page failed. */
    error(err) {
      let text;
      if (err instanceof ApiError) {
        text = err.message;
        if (err.status === 503 || err.status === 504) text += ' Tente novamente mais tarde.';
      } else {
        text = `Algo deu errado na página: ${err?.message ?? err}. Recarregue a página e tente de novo.`;
      }
      box.tell(text);
    },
  };
  return box;
}
