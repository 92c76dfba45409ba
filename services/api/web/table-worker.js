// A task's result, fetched, parsed and kept off the main thread: the page asks for one screen
// page at a time and gets back only its cells, so a 25 MB answer never blocks the tab (issue 25).
import { TableData } from './table-data.js';

let data = null;

async function load({ url, headers, list, columns, options }) {
  const response = await fetch(url, { headers, cache: 'no-store' });
  if (!response.ok) {
    let erro = `Erro ${response.status}.`;
    try {
      erro = (await response.json()).erro ?? erro;
    } catch {
      // not JSON: keep the status
    }
    return { error: { status: response.status, erro } };
  }
  const body = await response.json();
  data = new TableData(body[list], columns, options);
  return { counts: data.counts() };
}

self.addEventListener('message', async ({ data: message }) => {
  const { id, type } = message;
  try {
    if (type === 'load') {
      const loaded = await load(message);
      self.postMessage({ id, ...loaded, ...(loaded.error ? {} : { page: data.page(message.view) }) });
    } else if (type === 'page') {
      self.postMessage({ id, page: data.page(message.view) });
    }
  } catch (err) {
    self.postMessage({ id, error: { status: 0, erro: `Falha ao ler o resultado: ${err?.message ?? err}` } });
  }
});
