// The season ledger's cost on a batch's intake (issue 54): what one task end adds on the API that
// records it — the HMACs and one transaction of multi-row INSERTs per commit of ends — on PGlite
// (the embedded default) and PostgreSQL. Run alone: `node bench/sections/safra.mjs [files]
// [divergences per file]` (after `npx tsc -b`; PostgreSQL at BENCH_SAFRA_DATABASE_URL, default the
// local server's `test` database, in a database of its own that it drops). Prints CPU ms and wall
// ms per file.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pgDb, pgliteDb } from '../../services/api/dist/safra/db.js';
import { migrate } from '../../services/api/dist/safra/migrations.js';
import { Impressoes } from '../../services/api/dist/safra/impressao.js';
import { SafraLedger } from '../../services/api/dist/safra/ledger.js';

const FILES = Number(process.argv[2] ?? 5_000);
/** Ends per commit: a request's group of TAREFAS_POR_JOB=50 ends together (SPEC §12). */
const PER_COMMIT = 50;
/**
 * Divergences per school file: 10 by default, a school with a few people to fix; the burst's
 * return (bench/burst.mjs, 1,500 rows) holds 745, the cost to set beside that bench's intake.
 */
const PER_FILE = Number(process.argv[3] ?? 10);
const CHAVES = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'];

function files(lote, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({
      tarefa: `${lote}-${i}`,
      lote,
      dono: 'b'.repeat(32),
      loteCriadoEm: Date.UTC(2025, 5, 2),
      escola: `escola-${i}/retorno.xlsx`,
      escolaOrigem: 'referencia',
      referencia: `escola-${i}/retorno.xlsx`,
      falhou: false,
      erro: null,
      concluidaEm: Date.UTC(2025, 5, 2, 1),
      divergencias: Array.from({ length: PER_FILE }, (_, j) => ({
        codigo_na_escola: `ALU${i}-${j}`,
        chave: CHAVES[j % CHAVES.length],
        campo: 'Número do CPF',
        correto: String(10_000_000_000 + i * PER_FILE + j),
        correcao: 'formulario',
      })),
    });
  }
  return out;
}

async function measure(name, db) {
  await migrate(db);
  const ledger = new SafraLedger(db, new Impressoes(randomBytes(32)));
  const all = files(name, FILES);
  // Warm-up: the first statements plan and (PGlite) compile.
  await ledger.registrar(files(`${name}-aquecimento`, PER_COMMIT));
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < all.length; i += PER_COMMIT) await ledger.registrar(all.slice(i, i + PER_COMMIT));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  await db.close();
  return { name, files: FILES, cpuMsPerFile: cpuMs / FILES, wallMsPerFile: wallMs / FILES };
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-safra-'));
const results = [];
try {
  results.push(await measure('pglite', await pgliteDb(path.join(dir, 'pglite'))));
  const server = process.env.BENCH_SAFRA_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const database = `bench_safra_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  try {
    results.push(await measure('postgresql', await pgDb(server.replace(/\/[^/]*$/, `/${database}`))));
  } finally {
    await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
    await admin.end();
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
for (const r of results)
  console.log(
    `${r.name}: ${r.files} files × ${PER_FILE} divergences, ${PER_COMMIT} ends a commit — ` +
      `${r.cpuMsPerFile.toFixed(3)} CPU ms per file in the API process, ${r.wallMsPerFile.toFixed(3)} ms wall per file`,
  );
