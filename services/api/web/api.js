// Calls to the service with the key of this tab. The key lives in sessionStorage only: never in
// a URL, a cookie or localStorage (SPEC §3.6). Signed in (§8), the session's headers instead.
import { credentials, sessionLost } from './session.js';

const KEY = 'censo-api-key';

export const key = {
  get: () => sessionStorage.getItem(KEY),
  /** Keeps `value` trimmed (as the service reads its keys); an empty key is never kept. */
  set: (value) => {
    const trimmed = value.trim();
    if (trimmed !== '') sessionStorage.setItem(KEY, trimmed);
    return trimmed !== '';
  },
  clear: () => sessionStorage.removeItem(KEY),
};

/** A refused call: the service's `erro`, and its status. */
export class ApiError extends Error {
  constructor(status, erro) {
    super(erro);
    this.status = status;
  }
}

async function errorOf(status, body) {
  if (status === 401) sessionLost();
  let erro = `Erro ${status}.`;
  try {
    const text = typeof body === 'string' ? body : await body.text();
    erro = JSON.parse(text).erro ?? erro;
  } catch {
    // not JSON: keep the status
  }
  return new ApiError(status, erro);
}

/** GET returning JSON. */
export async function getJson(path) {
  const response = await fetch(path, { headers: credentials('GET', key.get()) });
  if (!response.ok) throw await errorOf(response.status, response);
  return response.json();
}

/** GET returning the body as a Blob (CSV export). */
export async function getBlob(path) {
  const response = await fetch(path, { headers: credentials('GET', key.get()) });
  if (!response.ok) throw await errorOf(response.status, response);
  return { blob: await response.blob(), headers: response.headers };
}

/**
 * POST a form with upload progress (XMLHttpRequest: fetch has no upload progress). Resolves with
 * the body as `json` or `blob` and a header reader.
 */
export function postForm(path, form, { as = 'json', onProgress } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    for (const [name, value] of Object.entries(credentials('POST', key.get()))) xhr.setRequestHeader(name, value);
    xhr.responseType = as === 'json' ? 'text' : 'blob';
    if (onProgress) xhr.upload.addEventListener('progress', (e) => e.lengthComputable && onProgress(e.loaded / e.total));
    xhr.addEventListener('load', async () => {
      if (xhr.status < 200 || xhr.status >= 300) {
        reject(await errorOf(xhr.status, as === 'json' ? xhr.responseText : xhr.response));
        return;
      }
      const header = (name) => xhr.getResponseHeader(name);
      resolve({ body: as === 'json' ? JSON.parse(xhr.responseText) : xhr.response, header });
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'Falha de rede: o serviço não respondeu.')));
    xhr.send(form);
  });
}

/** Saves a Blob as a file the browser downloads. */
export function save(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** `filename` (or `filename*`) of a Content-Disposition header. */
export function filenameOf(disposition, fallback) {
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition ?? '');
  if (star) return decodeURIComponent(star[1]);
  const plain = /filename="([^"]+)"/i.exec(disposition ?? '');
  return plain ? plain[1] : fallback;
}
