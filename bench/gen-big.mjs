#!/usr/bin/env node
// Generates a large synthetic census text file and its return (.json and .xlsx) for the
// benchmarks, with the expected counts. Deterministic: the same arguments always give the same
// bytes. Adapted from the project's tools/gen-big.mjs; exceljs is resolved from this repo.
//   node bench/gen-big.mjs --persons 100000 --out .bench/p100k [--rows-per-person 3] [--formats txt,json,xlsx]
// Every person gets `rows-per-person` return rows; about half cite the Receita Federal with a
// `<sent> -- <correct>` content, the rest are other census messages that must be ignored.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

export async function generate({ persons = 10_000, perPerson = 3, out, formats = ['txt', 'json', 'xlsx'] }) {
  fs.mkdirSync(out, { recursive: true });
  const want = new Set(formats);
  const school = '12345678';
  const RF = 'O campo não está de acordo com a base da Receita Federal.';
  const FIRST = ['MARIA', 'JOAO', 'ANA', 'PEDRO', 'LUCIA', 'CARLOS', 'JULIA', 'RAFAEL', 'BEATRIZ', 'THIAGO'];
  const LAST = ['SILVA', 'SOUZA', 'OLIVEIRA', 'SANTOS', 'LIMA', 'PEREIRA', 'COSTA', 'ALVES', 'FERREIRA', 'RODRIGUES'];
  let seed = 42; // mulberry32: deterministic, so every run makes the same files
  const rnd = (n) => {
    let t = (seed += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
  const name = () => `${FIRST[rnd(10)]} ${FIRST[rnd(10)]} ${LAST[rnd(10)]} ${LAST[rnd(10)]}`;
  const digits = (n) => Array.from({ length: n }, () => rnd(10)).join('');
  const date = () => `${String(1 + rnd(28)).padStart(2, '0')}/${String(1 + rnd(12)).padStart(2, '0')}/${1970 + rnd(45)}`;

  // The text file is built in memory in 1 MiB pieces (latin1, as INEP writes it).
  const txtParts = [];
  let txtBuf = '';
  const header = ['Registro', 'Linha', 'Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'];
  const rows = [];
  let divergencias = 0;
  let pessoas = 0;
  txtBuf += `00|${school}|1|03/02/2025|19/12/2025|ESCOLA ESTADUAL GERADA${'|'.repeat(50)}\n`;
  for (let i = 0; i < persons; i++) {
    const line = i + 2;
    const code = `P${String(i).padStart(7, '0')}`;
    const p = { inep: digits(12), cpf: digits(11), nome: name(), nasc: date(), mae: name() };
    const f = new Array(108).fill('');
    Object.assign(f, {
      0: '30',
      1: school,
      2: code,
      3: p.inep,
      4: p.cpf,
      5: p.nome,
      6: p.nasc,
      7: '1',
      8: p.mae,
      10: '2',
      11: '1',
      13: '1',
      14: '76',
    });
    txtBuf += f.join('|') + '\n';
    if (txtBuf.length > 1 << 20) {
      txtParts.push(Buffer.from(txtBuf, 'latin1'));
      txtBuf = '';
    }
    let hit = false;
    for (let k = 0; k < perPerson; k++) {
      const kind = rnd(8);
      if (kind === 0) rows.push([30, line, code, 'Número do CPF', RF, `${p.cpf} -- ${digits(11)}`]);
      else if (kind === 1) rows.push([30, line, code, 'Nome completo', RF, `${p.nome} -- ${name()}`]);
      else if (kind === 2) rows.push([30, line, code, 'Data de nascimento', RF, `${p.nasc} -- ${date()}`]);
      else if (kind === 3)
        rows.push([
          30,
          line,
          code,
          'Identificação única (Inep)',
          'Filiação 1 (nome da mãe) divergente da base da Receita Federal.',
          `${p.mae} -- ${name()}`,
        ]);
      else if (kind === 4)
        rows.push([30, line, code, 'Município de nascimento', 'O campo foi preenchido com valor não permitido.', '9999999']);
      else if (kind === 5) rows.push([60, line, code, 'Turma', 'O campo não foi preenchido quando deveria ser preenchido.', '']);
      else if (kind === 6) rows.push([30, line, code, 'Cor/Raça', 'O campo foi preenchido com valor não permitido.', '7']);
      else rows.push([30, line, code, 'Endereço Eletrônico', 'O campo contém caractere(s) não permitido(s).', 'x@y']);
      if (kind <= 3) {
        divergencias++;
        hit = true;
      }
    }
    if (hit) pessoas++;
  }
  txtBuf += '99|\n';
  txtParts.push(Buffer.from(txtBuf, 'latin1'));
  if (want.has('txt')) fs.writeFileSync(path.join(out, 'censo.txt'), Buffer.concat(txtParts));

  if (want.has('json')) {
    const parts = ['['];
    rows.forEach((r, i) => parts.push((i ? ',\n' : '\n') + JSON.stringify(Object.fromEntries(header.map((h, j) => [h, String(r[j])])))));
    parts.push('\n]\n');
    fs.writeFileSync(path.join(out, 'retorno.json'), parts.join(''));
  }
  if (want.has('xlsx')) {
    const ExcelJS = createRequire(import.meta.url)('exceljs');
    const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path.join(out, 'retorno.xlsx'), useSharedStrings: true });
    const ws = wb.addWorksheet('Erros');
    ws.addRow(['Relatório de erros - Censo Escolar']).commit();
    ws.addRow(header).commit();
    for (const r of rows) ws.addRow(r).commit();
    ws.commit();
    await wb.commit();
  }
  const summary = { persons, rows: rows.length, divergencias, pessoas };
  fs.writeFileSync(path.join(out, 'expected-summary.json'), JSON.stringify(summary, null, 2) + '\n');
  return summary;
}

const USAGE = `usage: node bench/gen-big.mjs [--persons N] [--rows-per-person N] [--formats txt,json,xlsx] [--out DIR]
  Writes DIR/censo.txt, DIR/retorno.json, DIR/retorno.xlsx and DIR/expected-summary.json.
  Defaults: --persons 10000 --rows-per-person 3 --formats txt,json,xlsx --out .bench/gen`;

function usageError(message) {
  console.error(`gen-big: ${message}\n${USAGE}`);
  process.exit(2);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let values;
  try {
    ({ values } = (await import('node:util')).parseArgs({
      options: {
        persons: { type: 'string', default: '10000' },
        out: { type: 'string', default: '.bench/gen' },
        'rows-per-person': { type: 'string', default: '3' },
        formats: { type: 'string', default: 'txt,json,xlsx' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    usageError(err.message);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  for (const name of ['persons', 'rows-per-person']) {
    if (!/^[1-9]\d*$/.test(values[name])) usageError(`--${name} must be a positive whole number, got "${values[name]}"`);
  }
  const formats = values.formats.split(',');
  const unknown = formats.filter((f) => !['txt', 'json', 'xlsx'].includes(f));
  if (unknown.length > 0) usageError(`unknown format: ${unknown.join(', ')}`);
  const out = path.resolve(values.out);
  const summary = await generate({
    persons: Number(values.persons),
    perPerson: Number(values['rows-per-person']),
    out,
    formats,
  });
  for (const f of fs.readdirSync(out)) console.log(f.padEnd(24), (fs.statSync(path.join(out, f)).size / 1048576).toFixed(2), 'MiB');
  console.log(JSON.stringify(summary));
}
