// Sections 1, 2 and 2b: the core's readers, the retorno-rf merge, the corrected census file and
// the spreadsheet answers, each case in a fresh process (bench/core.mjs).
import { BEFORE_REV } from '../before.mjs';
import { runCore } from '../core.mjs';
import { fmt, table } from '../lib.mjs';
import { MiB } from './report.mjs';

/** Resolves with the core's measurements, which later sections compare against. */
export async function coreSections({ log, section, target, data, RUNS }) {
  log(`\nCore readers (${RUNS} runs per case, one process each)...`);
  const core = await runCore(data, RUNS, log);
  const coreRow = (id, vsId) => {
    const r = core[id];
    return [r.label, fmt(r.ms), fmt(r.rowsPerSec), fmt(r.maxRssMB), vsId ? `${(r.ms / core[vsId].ms).toFixed(2)}×` : ''];
  };
  const H = ['reader', 'time ms', 'return rows/s', 'peak RSS MiB', 'time vs core'];
  section(
    '1. Core read + extract',
    [
      `Each case runs ${RUNS} times in a fresh \`node\` process (\`bench/one.mjs\`); cases are interleaved run by run, the table shows medians and peak RSS is the process's \`VmHWM\` (each process loads the core alone, \`@censo/shared/local\`). "core" is the return read in batches through the divergence rules (\`readRetornoBatches\` + \`divergenciaBatches\`, as \`runJob\` does), the work of a \`/api/divergencias-rf\` job minus writing the result. Ratios below are computed within each run, then the median taken.`,
      '',
      `**xlsx, 300k rows (p100k, ${(data.p100k.sizes.xlsx / MiB).toFixed(1)} MiB)**`,
      '',
      table(H, [
        coreRow('xlsx100-core', 'xlsx100-core'),
        coreRow('xlsx100-exceljs', 'xlsx100-core'),
        coreRow('xlsx100-floor', 'xlsx100-core'),
      ]),
      '',
      `**xlsx near the limit, 600k rows (x25, ${(data.x25.sizes.xlsx / MiB).toFixed(1)} MiB)**`,
      '',
      table(H, [coreRow('xlsx25-core', 'xlsx25-core'), coreRow('xlsx25-exceljs', 'xlsx25-core'), coreRow('xlsx25-floor', 'xlsx25-core')]),
      '',
      `**json near the limit, ${fmt(data.j25.rows)} rows (j25, ${(data.j25.sizes.json / MiB).toFixed(1)} MiB)**`,
      '',
      table(H, [coreRow('json25-core', 'json25-core'), coreRow('json25-parse', 'json25-core')]),
      '',
      `Same-run ratios: exceljs is ${core.ratios.xlsx100CoreVsExceljs.toFixed(2)}× (300k) / ${core.ratios.xlsx25CoreVsExceljs.toFixed(2)}× (600k) slower than the core; the core is ${core.ratios.xlsx100CoreVsFloor.toFixed(2)}× / ${core.ratios.xlsx25CoreVsFloor.toFixed(2)}× the floor; json core / bare JSON.parse = ${core.ratios.json25CoreVsParse.toFixed(2)}×.`,
    ].join('\n'),
  );
  const mergeRow = (id, name) => {
    const r = core[id];
    return [name, fmt(r.ms), fmt(r.rowsPerSec), fmt(r.out), fmt(r.out / (r.ms / 1000)), (r.bytes / MiB).toFixed(1), fmt(r.maxRssMB)];
  };
  section(
    '2. retorno-rf merge',
    [
      '`runJob` of kind `retorno-rf` in one process: read and extract the xlsx return, merge with the text file (SPEC §3.2), write the `{"pessoas": [...]}` body to disk.',
      `"Before" rows run the same case on the core built at ${BEFORE_REV} (\`bench/before.mjs\`), alternating with the current build in the same run.`,
      '',
      table(
        ['input', 'time ms', 'return rows/s', 'pessoas', 'pessoas/s', 'result MiB', 'peak RSS MiB'],
        [
          mergeRow(
            'merge-t25',
            `t25: txt ${(data.t25.sizes.txt / MiB).toFixed(1)} MiB (${fmt(data.t25.persons)} persons) + xlsx ${(data.t25.sizes.xlsx / MiB).toFixed(1)} MiB`,
          ),
          mergeRow('merge-t25-pool', 't25 on a one-thread job pool (whole process: main thread, pool, job thread)'),
          mergeRow('merge-t25-before', `t25, the core at ${BEFORE_REV} (before the merge kept one object per person)`),
          mergeRow('merge-t25-pool-before', `t25 on a one-thread job pool, the core at ${BEFORE_REV}`),
          mergeRow(
            'merge-p100k',
            `p100k: txt ${(data.p100k.sizes.txt / MiB).toFixed(1)} MiB + xlsx ${(data.p100k.sizes.xlsx / MiB).toFixed(1)} MiB`,
          ),
        ],
      ),
    ].join('\n'),
  );
  target(
    'xlsx ≥ 200k return rows/s through the core (300k-row return / 600k-row return)',
    `${fmt(core['xlsx100-core'].rowsPerSec)} / ${fmt(core['xlsx25-core'].rowsPerSec)} rows/s`,
    core['xlsx100-core'].rowsPerSec >= 200_000 && core['xlsx25-core'].rowsPerSec >= 200_000,
  );
  target(
    'xlsx peak RSS ≤ 150 MB at 25 MB',
    `${fmt(core['xlsx25-core'].maxRssMB)} MiB (max of runs ${fmt(core['xlsx25-core'].maxRssMax)})`,
    core['xlsx25-core'].maxRssMax * 1.048576 <= 150,
  );
  target(
    'xlsx core ≤ 2.5× the inflate-and-scan floor (300k-row / 600k-row return)',
    `${(core['xlsx100-core'].ms / core['xlsx100-floor'].ms).toFixed(2)}× / ${(core['xlsx25-core'].ms / core['xlsx25-floor'].ms).toFixed(2)}×`,
    core['xlsx100-core'].ms <= 2.5 * core['xlsx100-floor'].ms && core['xlsx25-core'].ms <= 2.5 * core['xlsx25-floor'].ms,
  );
  target(
    'retorno-rf job peak RSS ≤ 150 MiB (t25; in one process / on a job pool)',
    `${fmt(core['merge-t25'].maxRssMB)} / ${fmt(core['merge-t25-pool'].maxRssMB)} MiB (before: ${fmt(core['merge-t25-before'].maxRssMB)} / ${fmt(core['merge-t25-pool-before'].maxRssMB)})`,
    core['merge-t25'].maxRssMB <= 150 && core['merge-t25-pool'].maxRssMB <= 150,
  );
  target(
    'json ≤ 2× a bare JSON.parse of the same file',
    `${core.ratios.json25CoreVsParse.toFixed(2)}×`,
    core.ratios.json25CoreVsParse <= 2,
  );
  target(
    'json peak RSS ≤ 200 MB at 25 MB',
    `${fmt(core['json25-core'].maxRssMB)} MiB (JSON.parse: ${fmt(core['json25-parse'].maxRssMB)} MiB)`,
    core['json25-core'].maxRssMax * 1.048576 <= 200,
  );

  const jobRow = (id, name, vsId) => {
    const r = core[id];
    return [name, fmt(r.ms), fmt(r.out), (r.bytes / MiB).toFixed(1), fmt(r.maxRssMB), vsId ? `${(r.ms / core[vsId].ms).toFixed(2)}×` : ''];
  };
  section(
    '2b. The corrected census file and the spreadsheet answers',
    [
      '`runJob` in one process, peak RSS from `VmHWM`. The corrected file is the retorno-rf merge plus a streamed rewrite of the whole txt; the formats write the same p100k divergences as JSON, CSV or XLSX (yazl, one sheet, inline strings).',
      '',
      table(
        ['job', 'time ms', 'items', 'result MiB', 'peak RSS MiB', 'time vs'],
        [
          jobRow('merge-t25', 't25 retorno-rf (pessoas JSON)', 'merge-t25'),
          jobRow('corrigido-t25', 't25 censo-corrigido (the txt, ISO-8859-1)', 'merge-t25'),
          jobRow('corrigido-t25-before', `t25 censo-corrigido, the core at ${BEFORE_REV}`, 'merge-t25'),
          jobRow('div100-json', 'p100k divergencias, json', 'div100-json'),
          jobRow('div100-csv', 'p100k divergencias, csv', 'div100-json'),
          jobRow('div100-xlsx', 'p100k divergencias, xlsx', 'div100-json'),
        ],
      ),
      '',
      `Same-run time ratios to the core at ${BEFORE_REV}: retorno-rf ${core.ratios.mergeVsBefore.toFixed(2)}×, censo-corrigido ${core.ratios.corrigidoVsBefore.toFixed(2)}×.`,
      '',
      `Same-run ratios: censo-corrigido / retorno-rf = ${core.ratios.corrigidoVsRf.toFixed(2)}×; csv / json = ${core.ratios.csvVsJson.toFixed(2)}×; xlsx / json = ${core.ratios.xlsxVsJson.toFixed(2)}×.`,
    ].join('\n'),
  );
  target('censo-corrigido ≤ 1.3× the retorno-rf time (t25)', `${core.ratios.corrigidoVsRf.toFixed(2)}×`, core.ratios.corrigidoVsRf <= 1.3);
  target('xlsx answer ≤ 2× the JSON answer (p100k divergences)', `${core.ratios.xlsxVsJson.toFixed(2)}×`, core.ratios.xlsxVsJson <= 2);
  target(
    'censo-corrigido peak RSS ≤ 1.2× the retorno-rf job',
    `${fmt(core['corrigido-t25'].maxRssMB)} / ${fmt(core['merge-t25'].maxRssMB)} MiB (censo-corrigido before: ${fmt(core['corrigido-t25-before'].maxRssMB)} MiB)`,
    core['corrigido-t25'].maxRssMax <= 1.2 * core['merge-t25'].maxRssMax,
  );
  return core;
}
