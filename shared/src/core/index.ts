// The pure core: return readers, census text, the rules, the merge and the job body. No network,
// no environment, no HTTP: it reads and writes only the files it is given.
export * from './errors.js';
export * from './normalize.js';
export * from './types.js';
export * from './retorno/index.js';
export * from './censo/decode.js';
export * from './censo/txt.js';
export * from './strings.js';
export * from './dates.js';
export * from './divergencias.js';
export * from './vocabulary.js';
export * from './merge.js';
export * from './item-stream.js';
export * from './output/csv.js';
export * from './output/batch-lines.js';
export * from './output/json.js';
export * from './output/table.js';
export * from './output/planilha.js';
export * from './output/xlsx.js';
export { crc32InJs, zipArchive, type ZipOptions, type ZipPart } from './output/zip-writer.js';
export * from './censo/inep-values.js';
export * from './censo/corrigido.js';
export * from './reimportacao/correcao.js';
export * from './reimportacao/pessoas.js';
export * from './ieducar/script.js';
export * from './job.js';
export * from './lote.js';
export * from './progresso.js';
