// A task's result, fetched, parsed and kept off the main thread. The answer is read
// as it arrives: its items are cut out of the stream and parsed in runs, and the first screen
// page goes to the page as soon as it is there, long before a 25 MB answer has arrived whole.
// The page then asks for one screen page at a time and gets back only its cells.
import { PAGE_SIZE, TableData } from './table-data.js';

let data = null;
let complete = false;

/**
 * Cuts the items out of `{"<list>":[{...},{...}]}` text arriving in pieces: each call takes the
 * next piece and answers the text of the items it completed (`{...},{...}`), or ''; at most `max`
 * of them, the rest kept for the next call. Strings are tracked so a brace inside a value never
 * counts.
 */
function itemCutter() {
  let buffer = '';
  let scanned = 0;
  let cut = 0;
  let inArray = false;
  let inString = false;
  let escaped = false;
  let depth = 0;
  return (piece, max = Infinity) => {
    buffer += piece;
    let lastEnd = -1;
    let count = 0;
    let i = scanned;
    for (; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
      } else if (!inArray) {
        if (c === 0x5b) {
          inArray = true;
          cut = i + 1;
        }
      } else if (c === 0x22) inString = true;
      else if (c === 0x7b) depth++;
      else if (c === 0x7d && --depth === 0) {
        lastEnd = i;
        if (++count >= max) {
          i++;
          break;
        }
      }
    }
    if (lastEnd < 0) {
      scanned = buffer.length;
      return '';
    }
    const items = buffer.slice(cut, lastEnd + 1).replace(/^[\s,]+/, '');
    buffer = buffer.slice(lastEnd + 1);
    scanned = i - (lastEnd + 1);
    cut = 0;
    return items;
  };
}

async function load({ id, url, headers, columns, options }) {
  const response = await fetch(url, { headers, cache: 'no-store' });
  if (!response.ok) {
    let erro = `Erro ${response.status}.`;
    try {
      erro = (await response.json()).erro ?? erro;
    } catch {
      // not JSON: keep the status
    }
    self.postMessage({ id, error: { status: response.status, erro } });
    return;
  }
  const rows = [];
  data = new TableData(rows, columns, options);
  const cutter = itemCutter();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let firstSent = false;
  let told = Date.now();
  const take = (items) => {
    if (items !== '') for (const item of JSON.parse(`[${items}]`)) rows.push(item);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!firstSent) {
      // The first screen page from its own items: a first piece can hold a megabyte of them.
      take(cutter(value, PAGE_SIZE - rows.length));
      if (rows.length >= PAGE_SIZE) {
        firstSent = true;
        self.postMessage({ id, page: data.page({}), loading: true });
      }
      take(cutter(''));
    } else {
      take(cutter(value));
      if (Date.now() - told > 500) {
        told = Date.now();
        self.postMessage({ type: 'progresso', loaded: rows.length });
      }
    }
  }
  complete = true;
  if (!firstSent) self.postMessage({ id, page: data.page({}), loading: false });
  self.postMessage({ type: 'fim', counts: data.counts(), total: rows.length, ...data.summary() });
}

self.addEventListener('message', async ({ data: message }) => {
  const { id, type } = message;
  try {
    if (type === 'load') await load(message);
    // Filters and orders wait for the whole result; a page of what has arrived is always there.
    else if (type === 'page') self.postMessage({ id, page: data.page(complete ? message.view : { page: message.view.page }) });
  } catch (err) {
    self.postMessage({ id, type: 'falha', error: { status: 0, erro: `Falha ao ler o resultado: ${err?.message ?? err}` } });
  }
});
