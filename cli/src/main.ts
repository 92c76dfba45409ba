#!/usr/bin/env node
// `censo`: the service's work from a terminal or a cron job, on the same core and the same job
// boundary (`runJob`, the worker-thread pool), with no server and no Redis (SPEC §6). Data goes to
// stdout (or -o), messages and progress to stderr. Exit 0 ok, 1 bad input, 2 wrong usage.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Commander from 'commander';
import { ConfigError, loadColumnsFile, type OutputFormat } from '@censo/shared/local';
import { corrigir, listOne } from './single.js';
import { lote, maxConcurrency, type LoteFormat } from './lote.js';
import { loteServidor } from './servidor.js';
import { BadUsage, errnoCode, fail, InputError, quote, reasonOf } from './failures.js';
import { handleInterrupts } from './interrupt.js';
import { formatFor } from './output.js';
import { CensoCommand, PORTUGUESE_HELP } from './usage.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const { CommanderError, InvalidArgumentError, Option } = createRequire(import.meta.url)('commander') as typeof Commander;

const FORMATS = ['json', 'csv', 'xlsx'] as const;

type LoteCommandOptions = { format?: LoteFormat; output?: string; concurrency?: number; servidor?: string; chave?: string };

/** cli/package.json, next to dist/ in the repository and in an installed copy alike. */
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

function positiveInteger(value: string): number {
  if (!/^[1-9]\d*$/.test(value)) throw new InvalidArgumentError('deve ser um número inteiro positivo.');
  return Number(value);
}

async function main(argv: readonly string[]): Promise<number> {
  const program = new CensoCommand('censo')
    .description('Divergências do retorno do Censo Escolar com a Receita Federal, sem servidor.')
    .usage('[opções] [comando]')
    .option('-q, --quiet', 'sem barra de progresso nem resumo (só os erros)')
    .version(version, '-V, --version', 'mostra a versão')
    .helpOption('-h, --help', 'mostra esta ajuda')
    .helpCommand('help [comando]', 'mostra a ajuda de um comando')
    .showHelpAfterError('(use --help para ver as opções)')
    .exitOverride()
    .configureHelp(PORTUGUESE_HELP)
    .configureOutput({ writeErr: (text) => process.stderr.write(text), writeOut: (text) => process.stdout.write(text) });

  const vocabulary = () => loadColumnsFile(process.env.COLUMNS_FILE?.trim() || null);
  const quiet = () => Boolean(program.opts<{ quiet?: boolean }>().quiet);
  // No default: without --format, -o's extension decides (formatFor).
  const format = (formats: readonly string[]) =>
    new Option('-f, --format <formato>', `formato da saída: ${formats.join(', ')} (padrão: a extensão de -o, senão json)`).choices(formats);
  const output = () => new Option('-o, --output <arquivo>', 'grava no arquivo em vez da saída padrão');
  let status = 0;

  program
    .command('divergencias')
    .description('lista as divergências com a Receita Federal de um retorno (.json ou .xlsx)')
    .usage('[opções] <retorno>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .addOption(format(FORMATS))
    .addOption(output())
    .action(async (retorno: string, opts: { format?: OutputFormat; output?: string }) => {
      const chosen = formatFor(opts.format, opts.output, FORMATS);
      await listOne({ kind: 'divergencias', retorno, format: chosen, output: opts.output, vocabulary: await vocabulary() });
    });

  program
    .command('retorno-rf')
    .description('as pessoas do arquivo de migração corrigidas pelas divergências do retorno')
    .usage('[opções] <retorno> <txt>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .argument('<txt>', 'arquivo de migração enviado ao Censo (.txt)')
    .addOption(format(FORMATS))
    .addOption(output())
    .action(async (retorno: string, txt: string, opts: { format?: OutputFormat; output?: string }) => {
      const chosen = formatFor(opts.format, opts.output, FORMATS);
      await listOne({ kind: 'retorno-rf', retorno, txt, format: chosen, output: opts.output, vocabulary: await vocabulary() });
    });

  program
    .command('corrigir')
    .description('grava o arquivo de migração corrigido, pronto para reenviar ao Educacenso (ISO-8859-1)')
    .usage('[opções] <retorno> <txt>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .argument('<txt>', 'arquivo de migração enviado ao Censo (.txt)')
    .requiredOption('-o, --output <saida.txt>', 'arquivo corrigido a gravar')
    .action(async (retorno: string, txt: string, opts: { output: string }) => {
      const counts = await corrigir({ retorno, txt, output: opts.output, vocabulary: await vocabulary() });
      process.stderr.write(`Pessoas corrigidas: ${counts.pessoasCorrigidas}\nCorreções não aplicadas: ${counts.naoAplicadas}\n`);
    });

  program
    .command('lote')
    .description('as divergências de todos os retornos (.json, .xlsx) de uma pasta e subpastas, num só resultado')
    .usage('[opções] <pasta>')
    .argument('<pasta>', 'pasta com os retornos')
    .addOption(format(FORMATS))
    .addOption(output())
    .option(
      '-c, --concurrency <n>',
      `arquivos processados ao mesmo tempo (padrão: número de CPUs; no máximo o dobro delas, ${maxConcurrency()} aqui)`,
      positiveInteger,
    )
    .option('--servidor <url>', 'envia a pasta a um censo-api como um lote (chave em CENSO_API_KEY ou --chave); rodar de novo retoma')
    .option('--chave <chave>', 'chave da API para --servidor (padrão: CENSO_API_KEY)')
    .action(async (pasta: string, opts: LoteCommandOptions) => {
      let concurrency = opts.concurrency;
      if (concurrency !== undefined && concurrency > maxConcurrency()) {
        process.stderr.write(`censo: --concurrency ${concurrency} reduzido para ${maxConcurrency()} (o dobro das CPUs desta máquina).\n`);
        concurrency = maxConcurrency();
      }
      const common = {
        folder: pasta,
        format: formatFor(opts.format, opts.output, FORMATS),
        output: opts.output,
        concurrency,
        quiet: quiet(),
      };
      const summary =
        opts.servidor !== undefined || opts.chave !== undefined
          ? await loteServidor({ ...common, servidor: opts.servidor, chave: opts.chave })
          : await lote({ ...common, vocabulary: await vocabulary() });
      if (!quiet()) {
        process.stderr.write(`Arquivos lidos: ${summary.read}; com falha: ${summary.failed}; divergências gravadas: ${summary.rows}.\n`);
      }
      if (summary.failed > 0) status = 1;
    });

  try {
    await program.parseAsync(argv, { from: 'user' });
    return status;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are not errors; everything else commander refuses is wrong usage.
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version' ? 0 : 2;
    }
    if (err instanceof BadUsage) return fail(err.message, 2);
    if (err instanceof InputError || err instanceof ConfigError) return fail(err.message, 1);
    // The file system refused something no check above names: one line, not a stack.
    if (errnoCode(err) !== null) {
      const where = (err as NodeJS.ErrnoException).path;
      return fail(`Não foi possível ler ou gravar${where === undefined ? '' : ` ${quote(where)}`}: ${reasonOf(err)}.`, 1);
    }
    throw err;
  }
}

handleInterrupts();
process.exitCode = await main(process.argv.slice(2));
