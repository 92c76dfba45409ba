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
  const response = await fetch(path, { headers: credentials('GET', key.get()), cache: 'no-store' });
  if (!response.ok) throw await errorOf(response.status, response);
  return response.json();
}

/** GET returning the body as a Blob (downloads) and its headers. */
export async function getBlob(path) {
  const response = await fetch(path, { headers: credentials('GET', key.get()) });
  if (!response.ok) throw await errorOf(response.status, response);
  return { blob: await response.blob(), headers: response.headers };
}

/** POST of a small JSON body (a batch's creation, its closing). */
export async function postJson(path, body = {}) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { ...credentials('POST', key.get()), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await errorOf(response.status, response);
  return response.json();
}

/** DELETE of something the caller sent (a task, a batch): 204, nothing to read. */
export async function deleteCall(path) {
  const response = await fetch(path, { method: 'DELETE', headers: credentials('DELETE', key.get()) });
  if (!response.ok) throw await errorOf(response.status, response);
}

/**
 * A name for a file saved on disk: `name` without what file systems refuse (path separators,
 * `:*?"<>|`, control characters), spaces as hyphens, at most 80 characters (no dot or hyphen left at its end); empty when nothing is left.
 */
export function fileSafe(name) {
  return (
    String(name ?? '')
      .normalize('NFC')
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069/\\:*?"<>|]+/g, ' ')
      .trim()
      .replace(/\s+/g, '-')
      .replace(/^\.+/, '')
      .slice(0, 80)
      .replace(/[-.]+$/, '')
  );
}

/** The headers a GET to /api/* carries now (for the table worker's fetch). */
export const getHeaders = () => credentials('GET', key.get());

/** An error a worker reported as `{ status, erro }`, as a refused call. */
export function apiErrorOf({ status, erro }) {
  if (status === 401) sessionLost();
  return new ApiError(status, erro);
}

/**
 * POSTs a form (files) with upload progress (XMLHttpRequest: fetch has no upload progress) and
 * resolves with the JSON answer. `onProgress(sent, total)`; `headers` are added to the call.
 */
export function postForm(path, form, { onProgress, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    for (const [name, value] of Object.entries({ ...credentials('POST', key.get()), ...headers })) xhr.setRequestHeader(name, value);
    if (onProgress) xhr.upload.addEventListener('progress', (e) => e.lengthComputable && onProgress(e.loaded, e.total));
    xhr.addEventListener('load', async () => {
      if (xhr.status < 200 || xhr.status >= 300) {
        reject(await errorOf(xhr.status, xhr.responseText));
        return;
      }
      resolve(JSON.parse(xhr.responseText));
    });
    xhr.addEventListener('error', () =>
      reject(new ApiError(0, 'Falha de rede: o serviço não respondeu. Verifique a conexão e tente de novo.')),
    );
    xhr.send(form);
  });
}

/** Sends the files of `form` to `route` as an asynchronous task (SPEC §7.1); resolves with its monitor. */
export function startTask(route, form, onProgress) {
  return postForm(route, form, { onProgress, headers: { prefer: 'respond-async' } });
}

const FINISHED = new Set(['concluida', 'falhou', 'cancelada']);

/**
 * How long to wait before the next look at a task that has run `elapsed` ms: a tenth of the wait
 * so far, between `min` and one second. A person waiting for a 1–3 s job learns of its end
 * within about 100–300 ms of it (a fixed half second was, on average, a quarter of a second
 * late); a long wait costs a look a second, each one a small GET.
 */
export const pace = (elapsed, min = 100) => Math.min(1000, Math.max(min, elapsed / 10));

/**
 * Follows a task (or a batch, `path` its monitor) until it ends, calling `onState(monitor)` at
 * each look, paced by `pace` (`min`: the shortest wait between looks).
 */
export async function follow(path, onState, finished = (m) => FINISHED.has(m.estado), { min = 100 } = {}) {
  const started = Date.now();
  for (;;) {
    const monitor = await getJson(path);
    onState(monitor);
    if (finished(monitor)) return monitor;
    await new Promise((resolve) => setTimeout(resolve, pace(Date.now() - started, min)));
  }
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
