// What every tab's tasks share (SPEC §3.6, §7.1): the progress bar of a form, a set of files sent
// once as a task and followed to its end, the form and the result it shows (nothing on screen
// belongs to files other than the ones chosen), a download from the service, and a task's JSON
// result shown as a table.
import { ApiError, apiErrorOf, filenameOf, follow, getBlob, getHeaders, save, startTask } from './api.js';
import { showError } from './chave.js';
import { renderTable, tableWorker } from './table.js';

const $ = (id) => document.getElementById(id);

export const ESTADO = {
  aguardando: 'Na fila',
  processando: 'Processando',
  concluida: 'Concluída',
  falhou: 'Falhou',
  cancelada: 'Cancelada',
};
const MB = 1024 * 1024;
export const LIMITE = 25 * MB;

export const plural = (n, one, many) => `${n.toLocaleString('pt-BR')} ${n === 1 ? one : many}`;
const mb = (bytes) => (bytes / MB).toLocaleString('pt-BR', { maximumFractionDigits: 1 });

// Progress -------------------------------------------------------------------------------------

/**
 * The bar of one form and the words beside it: the upload's percentage, size and (when slow)
 * the time left, then the task's state and the seconds since it was sent.
 */
export function progressIn(box) {
  const bar = box.querySelector('progress');
  const words = box.querySelector('.progresso-texto');
  const started = Date.now();
  let timer = null;
  box.hidden = false;
  bar.value = 0;
  words.textContent = 'Enviando…';
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const stopTimer = () => timer !== null && (clearInterval(timer), (timer = null));
  return {
    sent(loaded, total) {
      bar.value = Math.round((loaded / total) * 100);
      let text = `Enviando: ${bar.value}% (${mb(loaded)} de ${mb(total)} MB)`;
      const elapsed = (Date.now() - started) / 1000;
      const left = loaded > 0 ? ((total - loaded) * elapsed) / loaded : Infinity;
      // Only worth saying when the wait is noticeable.
      if (elapsed >= 2 && left >= 3 && Number.isFinite(left)) text += ` — faltam cerca de ${Math.ceil(left)} s`;
      words.textContent = text;
    },
    state(estado) {
      bar.removeAttribute('value'); // indeterminate: the service gives no percentage
      const say = () => (words.textContent = `${ESTADO[estado] ?? estado}… ${seconds()} s`);
      say();
      stopTimer();
      timer = setInterval(say, 1000);
    },
    loading() {
      stopTimer();
      words.textContent = `Carregando o resultado… ${seconds()} s`;
    },
    done() {
      stopTimer();
      box.hidden = true;
      words.textContent = '';
    },
  };
}

/** The service's own 413 (SPEC §5), said before a byte is sent, with the file's name. */
export const tooBig = (file) => new ApiError(413, `Arquivo excede o limite de 25 MB: ${file.name}. Escolha um arquivo menor.`);

/** Sends `form` to `route` as a task and follows it to its end; resolves with the concluded monitor. */
export async function runTask(route, form, progress) {
  for (const value of form.values()) {
    if (value instanceof File && value.size > LIMITE) throw tooBig(value);
  }
  const monitor = await startTask(route, form, (loaded, total) => progress.sent(loaded, total));
  const ended = await follow(`/api/tarefas/${monitor.id}`, (m) => progress.state(m.estado));
  if (ended.estado === 'falhou') throw new ApiError(ended.erro.status, ended.erro.erro);
  if (ended.estado !== 'concluida') throw new ApiError(409, 'A tarefa foi cancelada. Envie os arquivos de novo.');
  return ended;
}

// One task of the page -------------------------------------------------------------------------

/**
 * One form and the result it shows (SPEC §3.6: nothing on screen belongs to files other than
 * those chosen). `shown` is what the result on screen came from (its task and the files sent):
 * the only thing a download may use, so a download never uses files the inputs no longer hold.
 * Choosing files, a new run or an error clears the result. While work runs, the form and
 * `buttons` are disabled, so a second click cannot start a second upload.
 */
export function task({ form, box, results, buttons, clear }) {
  let shown = null;
  let running = false;

  function reset() {
    shown = null;
    for (const result of results) result.hidden = true;
    clear();
  }

  async function request(action) {
    if (running) return;
    running = true;
    const controls = [...form.elements, ...buttons()];
    for (const control of controls) control.disabled = true;
    try {
      await action();
    } catch (err) {
      reset();
      throw err;
    } finally {
      for (const control of controls) control.disabled = false;
      running = false;
    }
  }

  const edited = () => {
    if (running) return;
    reset();
    box.clear();
    box.status('');
  };
  form.addEventListener('input', edited);
  form.addEventListener('change', edited);

  return {
    /** Clears the result, sends what the inputs hold now, shows what `work(form)` answers. */
    run(work) {
      // Captured before the form is disabled: a disabled input is left out of its FormData.
      const sent = new FormData(form);
      return request(async () => {
        reset();
        shown = await work(sent);
      });
    },
    /** Runs `action` with what produced the result on screen; nothing when there is none. */
    withShown: (action) => (shown === null ? Promise.resolve() : request(() => action(shown))),
    /** Runs `action` with what produced the result on screen (a deletion); clears that result when it answers true. */
    discard: (action) =>
      shown === null
        ? Promise.resolve()
        : request(async () => {
            if (await action(shown)) reset();
          }),
    request,
  };
}

/**
 * `panel`'s download buttons, for `task`'s `buttons`: the downloads wait while a task runs; the
 * pager keeps its own state (its first page's "Página anterior" stays disabled, whatever ran meanwhile).
 */
export const panelButtons = (panel) => () => [...$(panel).querySelectorAll('.acoes button')];

/**
 * Saves what `path` answers. `named`: the name the page gives it (a batch's or a school's, so a
 * folder of downloads says whose each one is); else the service's name, else `fallback`.
 */
export async function downloadFrom(box, path, fallback, named = null) {
  const { blob, headers } = await getBlob(path);
  const name = named ?? filenameOf(headers.get('content-disposition'), fallback);
  save(blob, name);
  box.status(`Arquivo ${name} baixado.`);
  return headers;
}

/**
 * Runs a list task and shows its JSON result as a table: its first screen page as soon as it
 * arrives (parsed in a worker started with the upload, so it is ready when the job ends), the
 * rest while it loads. Resolves once every row is in, with the task, the source and the counts.
 */
export async function runAndShow(route, form, progress, table) {
  const worker = tableWorker();
  let tarefa;
  try {
    tarefa = await runTask(route, form, progress);
  } catch (err) {
    worker.close();
    throw err;
  }
  progress.loading();
  return { tarefa, ...(await showResult(tarefa, worker, table)) };
}

/** Shows a concluded task's result, read by `worker` (see runAndShow). */
async function showResult(tarefa, worker, { container, caption, columns, textColumns, groupColumn, tallyColumns, selectColumns }) {
  let source;
  try {
    source = await worker.source(`/api/tarefas/${tarefa.id}/resultado`, getHeaders(), columns, {
      textColumns,
      groupColumn,
      tallyColumns,
      selectColumns,
    });
  } catch (err) {
    throw err instanceof Error ? err : apiErrorOf(err);
  }
  container.parentElement.hidden = false;
  const table = renderTable(container, { caption, columns, source, textColumns, groupColumn, selectColumns });
  try {
    const all = await table.ready;
    return { source, ...all };
  } catch (err) {
    source.close();
    throw err instanceof Error ? err : apiErrorOf(err);
  }
}

/** A page the pager could not fetch (a lost session, the database gone): said in `box`, and the result cleared. */
export function onTableFailure(panel, box) {
  $(panel).addEventListener('falha', (e) => {
    const err = e.detail instanceof Error ? e.detail : apiErrorOf(e.detail);
    $(panel).replaceChildren();
    $(panel).parentElement.hidden = true;
    showError(err, box);
  });
}
