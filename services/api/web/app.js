// The staff page (SPEC §3.6): the key once per tab (or the signed-in session, §8), the tasks,
// every error with the service's own `erro`, in the panel of the task it belongs to. Each set of
// files is uploaded once, as an asynchronous task (§7.1); the table, the counts and every
// download come from that task, so nothing on screen can belong to files other than the ones
// chosen. Several returns go as one batch (§7.3), whose summary and comparison are on the Lotes
// tab (§10). This file starts the page and wires the tabs; each tab is a module of its own
// (divergencias.js, retorno.js, lotes.js, consultas.js), the key and the messages are chave.js,
// what the tasks share tarefas.js, the sign-in session.js and eMAG 3.1's access bar access-bar.js.
import { initAccessBar } from './access-bar.js';
import { key } from './api.js';
import { adoptTypedKey, boxes, guarded, header, initChave } from './chave.js';
import { initConsultas, loadQueries } from './consultas.js';
import { initDivergencias } from './divergencias.js';
import { initLotes } from './lotes.js';
import { initSafra } from './safra.js';
import { initRetorno } from './retorno.js';
import { signedIn } from './session.js';
import { downloadFrom } from './tarefas.js';

const $ = (id) => document.getElementById(id);

let lotes = null;

/** The tabs a person can choose now (Consultas only where the service has queries). */
const visibleTabs = () => [...document.querySelectorAll('[role="tab"]')].filter((tab) => !tab.hidden);

/** Shows `tab`'s panel; `load`: ask for what the tab lists (off when the caller asks for something more precise). */
function selectTab(tab, { load = true } = {}) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute('aria-selected', String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute('aria-controls')).hidden = !selected;
  }
  tab.focus();
  adoptTypedKey();
  if (!load || (!key.get() && !signedIn())) return; // nothing to ask for yet: the tab asks once there is a key
  if (tab.id === 'aba-consultas') void loadQueries();
  if (tab.id === 'aba-lotes') void lotes.opened();
}

/**
 * What this service offers the page (pagina.json): the Consultas tab only where queries are
 * configured, so the page never asks for a list that can only answer 503.
 */
async function offered() {
  try {
    const response = await fetch('/pagina.json', { cache: 'no-store' });
    if (!response.ok) return;
    const { consultas } = await response.json();
    $('aba-consultas').hidden = consultas !== true;
  } catch {
    // no answer: the tab stays hidden, and every other task still works
  }
}

/** Files dropped on a box become its input's choice (the first one when it takes one). */
function dropZone(box, input) {
  box.addEventListener('dragover', (e) => {
    e.preventDefault();
    box.classList.add('arrastando');
  });
  box.addEventListener('dragleave', () => box.classList.remove('arrastando'));
  box.addEventListener('drop', (e) => {
    e.preventDefault();
    box.classList.remove('arrastando');
    const files = [...(e.dataTransfer?.files ?? [])];
    if (input.disabled || files.length === 0) return;
    const chosen = new DataTransfer();
    for (const file of input.multiple ? files : files.slice(0, 1)) chosen.items.add(file);
    input.files = chosen.files;
    // Setting files from script fires no event: announce it as a choice, which clears the result.
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

function init() {
  initAccessBar({ say: (text) => header.status(text) });
  void offered();
  // A key entered: the open tab asks for what it lists.
  initChave({
    entered: () => {
      const open = visibleTabs().find((tab) => tab.getAttribute('aria-selected') === 'true');
      if (open?.id === 'aba-lotes') void lotes.opened();
      if (open?.id === 'aba-consultas') void loadQueries();
    },
  });

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const shown = visibleTabs();
      const i = shown.indexOf(tab);
      if (e.key === 'ArrowRight') selectTab(shown[(i + 1) % shown.length]);
      if (e.key === 'ArrowLeft') selectTab(shown[(i - 1 + shown.length) % shown.length]);
      if (e.key === 'Home') selectTab(shown[0]);
      if (e.key === 'End') selectTab(shown[shown.length - 1]);
    });
  }
  for (const box of document.querySelectorAll('.caixa-arquivo')) dropZone(box, box.querySelector('input[type="file"]'));

  lotes = initLotes({ box: boxes.lotes, guarded, download: downloadFrom });
  initSafra({ box: boxes.lotes, guarded });
  initDivergencias({ lotes, selectTab });
  initRetorno();
  initConsultas();
}

init();
