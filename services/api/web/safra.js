// The season view of the Lotes tab (SPEC §13, issue 54): every round of the year from the ledger,
// as the state's curve (divergences to fix per round, schools with none), the schools with most
// left to fix, and the days to INEP's next deadline. The same numbers as GET /api/safras/{ano}.
import { ApiError, getJson } from './api.js';
import { stackedBarChart } from './chart.js';
import { localSource, renderTable } from './table.js';
import { plural } from './tarefas.js';

const $ = (id) => document.getElementById(id);
const number = (n) => Number(n).toLocaleString('pt-BR');
/** `2025-08-06` as the page writes dates. */
const dataBr = (iso) => iso.slice(0, 10).split('-').reverse().join('/');
/** The ways of fixing a school still has to act on (SPEC §11; `grafia` needs nothing). */
const PENDENTES = [
  { key: 'formulario', label: 'Formulário do Educacenso' },
  { key: 'receita', label: 'Cidadão na Receita Federal' },
  { key: 'arquivo', label: 'Arquivo corrigido' },
  { key: 'educacenso', label: 'Já no Educacenso' },
];

/** What the answer says, in a sentence a secretariat reads first. */
function explain(answer) {
  if (answer.rodadas.length === 0) return `Nenhuma rodada registrada em ${answer.ano}: envie os retornos das escolas num lote.`;
  const prazo = answer.prazo
    ? ` Próximo prazo do INEP: ${answer.prazo.titulo}, em ${dataBr(answer.prazo.fim)} ` +
      `(${answer.prazo.dias === 0 ? 'hoje' : plural(answer.prazo.dias, 'dia', 'dias')}).`
    : '';
  return (
    `${plural(answer.rodadas.length, 'rodada', 'rodadas')} em ${answer.ano}, ${plural(answer.escolas.length, 'escola', 'escolas')}; ` +
    `${plural(answer.escolas_com_pendencias, 'escola ainda tem', 'escolas ainda têm')} divergências a corrigir.${prazo}`
  );
}

export function initSafra({ box, guarded }) {
  $('ano-safra').value = String(new Date().getFullYear());
  $('form-safra').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(box, async () => {
      const ano = $('ano-safra').value.trim();
      let answer;
      try {
        answer = await getJson(`/api/safras/${encodeURIComponent(ano)}?format=json`);
      } catch (err) {
        $('explica-safra').textContent = err instanceof ApiError ? err.message : 'Não foi possível carregar a safra.';
        for (const id of ['grafico-safra', 'tabela-safra-rodadas', 'tabela-safra-escolas']) $(id).replaceChildren();
        return;
      }
      show(answer);
    });
  });
}

function show(answer) {
  $('explica-safra').textContent = explain(answer);
  const rodadas = answer.rodadas.map((r) => ({ ...r, nome: `Rodada ${r.rodada}`, data: dataBr(r.criado_em) }));
  $('grafico-safra').replaceChildren(
    ...(rodadas.length === 0
      ? []
      : [
          stackedBarChart({
            title: `Divergências a corrigir por rodada, ${answer.ano}`,
            description:
              'Uma barra por rodada, da primeira à última: as divergências de todas as escolas. Os mesmos números estão na tabela a seguir.',
            kinds: [{ key: 'divergencias', label: 'Divergências' }],
            rows: rodadas.map((r) => ({
              label: `${r.nome} (${r.data})`,
              values: r,
              note: plural(r.escolas_sem_divergencias, 'escola sem divergência', 'escolas sem divergência'),
            })),
            width: Math.max(280, Math.floor($('grafico-safra').clientWidth || 720)),
          }),
        ]),
  );
  const rodadaColumns = [
    { key: 'nome', label: 'Rodada' },
    { key: 'data', label: 'Data' },
    { key: 'escolas', label: 'Escolas', numeric: true },
    { key: 'arquivos', label: 'Arquivos', numeric: true },
    { key: 'falhas', label: 'Arquivos com erro', numeric: true },
    { key: 'divergencias', label: 'Divergências', numeric: true },
    { key: 'escolas_sem_divergencias', label: 'Escolas sem divergência', numeric: true },
  ];
  renderTable($('tabela-safra-rodadas'), {
    caption: `As rodadas de ${answer.ano}`,
    columns: rodadaColumns,
    source: localSource(rodadas, rodadaColumns, {}),
  });
  // The schools with most left to fix first: each school's line across the rounds beside it.
  const escolas = [...answer.escolas]
    .sort((a, b) => b.pendentes - a.pendentes || a.referencia.localeCompare(b.referencia, 'pt-BR'))
    .map((e) => ({
      ...e,
      desde: e.abertas_desde === null ? '' : `Rodada ${e.abertas_desde}`,
      linha: e.por_rodada.map((n) => (n === null ? '—' : number(n))).join(' → '),
      ...Object.fromEntries(PENDENTES.map(({ key }) => [key, e.correcao[key] ?? 0])),
    }));
  const escolaColumns = [
    { key: 'referencia', label: 'Escola' },
    { key: 'pendentes', label: 'A corrigir', numeric: true },
    { key: 'desde', label: 'Aberta desde' },
    ...PENDENTES.map(({ key, label }) => ({ key, label, numeric: true })),
    { key: 'linha', label: 'Divergências por rodada' },
  ];
  renderTable($('tabela-safra-escolas'), {
    caption: `As escolas, da que tem mais a corrigir (${number(escolas.length)})`,
    columns: escolaColumns,
    source: localSource(escolas, escolaColumns, { textColumns: ['referencia'] }),
    textColumns: ['referencia'],
  });
}
