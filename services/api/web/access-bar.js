// eMAG 3.1's access bar: the shortcuts Alt+1 (content), Alt+2 (menu) and Alt+3 (search, when the
// screen has one: the filter of the table on view), their links at the top of the page, and the
// high-contrast switch, kept in localStorage (a preference, read by contraste.js before the first
// paint). Browsers map `accesskey` to Alt (or Alt+Shift) on their own; the keydown handler makes
// Alt+1/2/3 do the same everywhere, moving focus rather than only scrolling.
const CONTRASTE = 'censo-contraste';

/** The search field of the panel on view (a table's filter), when it has one that can be used. */
function visibleSearch() {
  const panel = document.querySelector('[role="tabpanel"]:not([hidden])');
  return (
    [...(panel?.querySelectorAll('input[type="search"]') ?? [])].find((input) => !input.disabled && input.offsetParent !== null) ?? null
  );
}

/** Shows "Ir para a busca" only while there is a search to go to. */
export function refreshSearchShortcut() {
  document.getElementById('atalho-busca').hidden = visibleSearch() === null;
}

function go(target, { say }) {
  if (target === 'conteudo') {
    document.getElementById('conteudo').focus();
  } else if (target === 'menu') {
    document.querySelector('[role="tab"][aria-selected="true"]')?.focus();
  } else {
    const search = visibleSearch();
    if (search) search.focus();
    else say('Não há busca nesta tela: ela aparece com a tabela de um resultado.');
  }
}

function setContrast(on) {
  document.documentElement.classList.toggle('contraste', on);
  document.getElementById('alto-contraste').setAttribute('aria-pressed', String(on));
  try {
    if (on) localStorage.setItem(CONTRASTE, '1');
    else localStorage.removeItem(CONTRASTE);
  } catch {
    // storage refused: the choice lasts while the page is open
  }
}

/** `say(text)`: the page's live status line, for a shortcut that has nowhere to go. */
export function initAccessBar({ say }) {
  const switcher = document.getElementById('alto-contraste');
  switcher.setAttribute('aria-pressed', String(document.documentElement.classList.contains('contraste')));
  switcher.addEventListener('click', () => setContrast(switcher.getAttribute('aria-pressed') !== 'true'));

  for (const link of document.querySelectorAll('[data-atalho]')) {
    link.addEventListener('click', (e) => {
      // Focus moves; the address keeps no fragment.
      e.preventDefault();
      go(link.dataset.atalho, { say });
    });
  }
  const TARGETS = { Digit1: 'conteudo', Numpad1: 'conteudo', Digit2: 'menu', Numpad2: 'menu', Digit3: 'busca', Numpad3: 'busca' };
  document.addEventListener('keydown', (e) => {
    // The key's position, not its character: Alt+1 types other characters on some layouts.
    const target = TARGETS[e.code];
    if (!target || !e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    go(target, { say });
  });
  // Tables come and go with results and tabs: the shortcut follows what is on screen.
  new MutationObserver(refreshSearchShortcut).observe(document.getElementById('conteudo'), {
    subtree: true,
    childList: true,
    attributes: true,
    attributeFilter: ['hidden', 'disabled'],
  });
  refreshSearchShortcut();
}
