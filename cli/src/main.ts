#!/usr/bin/env node
// `censo`: the service's work from a terminal or a cron job, on the same core and the same job
// boundary (`runJob`, the worker-thread pool), with no server and no Redis (SPEC §6). Data goes to
// stdout (or -o), messages and progress to stderr. Exit 0 ok, 1 bad input, 2 wrong usage.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Commander from 'commander';
import { ConfigError, loadColumnsFile, type OutputFormat } from '@censo/shared/local';
import { comparar, dadosOf, resumir } from './comparar.js';
import { escreverCartas } from './cartas.js';
import { corrigir, listOne } from './single.js';
import { ieducar } from './ieducar.js';
import { lote, maxConcurrency, type LoteFormat } from './lote.js';
import { apagarLote, listLotes, lotesTable } from './lotes.js';
import { loteServidor } from './servidor.js';
import { BadUsage, errnoCode, fail, InputError, quote, reasonOf } from './failures.js';
import { retornoFormat } from './inputs.js';
import { handleInterrupts } from './interrupt.js';
import { listOutput, textOutput } from './output.js';
import { comparacaoSummaryText, incomplete, naoAplicadasText, summaryText } from './summary.js';
import { CensoCommand, PORTUGUESE_HELP, singleDashOption } from './usage.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const { CommanderError, InvalidArgumentError, Option } = createRequire(import.meta.url)('commander') as typeof Commander;

const FORMATS = ['json', 'csv', 'xlsx'] as const;

type LoteCommandOptions = {
  format?: LoteFormat;
  output?: string;
  concurrency?: number;
  servidor?: string;
  chave?: string;
  novoLote?: boolean;
  dado?: string;
};

/** cli/package.json, next to dist/ in the repository and in an installed copy alike. */
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

function positiveInteger(value: string): number {
  if (!/^[1-9]\d*$/.test(value)) throw new InvalidArgumentError('deve ser um número inteiro positivo.');
  return Number(value);
}

/** `retorno-rf censo.txt retorno.json`: the two files in the wrong order, said with the right one. */
function refuseSwapped(command: string, retorno: string, txt: string, rest = ''): void {
  if (retornoFormat(retorno) === null && /\.txt$/i.test(retorno) && retornoFormat(txt) !== null) {
    throw new BadUsage(
      `os arquivos estão trocados: primeiro o retorno, depois o txt (censo ${command} ${quote(txt)} ${quote(retorno)}${rest}).`,
    );
  }
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
  // No default: without --format, -o's extension decides (listOutput).
  const format = (formats: readonly string[]) =>
    new Option('-f, --format <formato>', `formato da saída: ${formats.join(', ')} (padrão: a extensão de -o, senão json)`).choices(formats);
  const output = () => new Option('-o, --output <arquivo>', 'grava no arquivo em vez da saída padrão (- é a saída padrão)');
  const dado = () =>
    new Option(
      '--dado <dados>',
      'só as divergências destes dados, separados por vírgula: cpf, nome, data_nascimento, inep, nome_mae, nome_pai, outro',
    );
  let status = 0;

  program
    .command('divergencias')
    .description('lista as divergências com a Receita Federal de um retorno (.json ou .xlsx)')
    .usage('[opções] <retorno>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .addOption(format(FORMATS))
    .addOption(output())
    .action(async (retorno: string, opts: { format?: OutputFormat; output?: string }) => {
      const { format, output } = listOutput(opts.format, opts.output, FORMATS);
      await listOne({ kind: 'divergencias', retorno, format, output, vocabulary: await vocabulary() });
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
      refuseSwapped('retorno-rf', retorno, txt);
      const { format, output } = listOutput(opts.format, opts.output, FORMATS);
      await listOne({ kind: 'retorno-rf', retorno, txt, format, output, vocabulary: await vocabulary() });
    });

  program
    .command('corrigir')
    .description('grava o arquivo de migração corrigido, pronto para reenviar ao Educacenso (ISO-8859-1)')
    .usage('[opções] <retorno> <txt>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .argument('<txt>', 'arquivo de migração enviado ao Censo (.txt)')
    .requiredOption('-o, --output <saida.txt>', 'arquivo corrigido a gravar (- para a saída padrão)')
    .action(async (retorno: string, txt: string, opts: { output: string }) => {
      refuseSwapped('corrigir', retorno, txt, ` -o ${quote(opts.output)}`);
      const output = textOutput(opts.output);
      const counts = await corrigir({ retorno, txt, output, vocabulary: await vocabulary() });
      process.stderr.write(naoAplicadasText(counts));
    });

  program
    .command('ieducar')
    .description('grava os dois scripts SQL (prévia e correção) que corrigem no i-Educar o que o arquivo corrigido corrige')
    .usage('[opções] <retorno> <txt>')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .argument('<txt>', 'arquivo de migração enviado ao Censo (.txt): só as pessoas dele são alteradas')
    .option('-o, --output <pasta>', 'pasta onde gravar os dois arquivos (padrão: a pasta atual)')
    .option('--usuario <nome>', 'nome gravado na auditoria do i-Educar (padrão: censo-api)')
    .action(async (retorno: string, txt: string, opts: { output?: string; usuario?: string }) => {
      refuseSwapped('ieducar', retorno, txt);
      const files = await ieducar({
        retorno,
        txt,
        pasta: opts.output,
        vocabulary: await vocabulary(),
        ...(opts.usuario ? { usuario: opts.usuario } : {}),
      });
      if (!quiet()) process.stderr.write(files.map((file) => `Gravado: ${file}\n`).join(''));
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
    .option('--novo-lote', 'com --servidor: envia a pasta num lote novo em vez de retomar o da mesma pasta')
    .addOption(dado())
    .action(async (pasta: string, opts: LoteCommandOptions) => {
      if (opts.novoLote && opts.servidor === undefined) throw new BadUsage('--novo-lote só se usa com --servidor.');
      const dados = dadosOf(opts.dado);
      const { format, output } = listOutput(opts.format, opts.output, FORMATS);
      let concurrency = opts.concurrency;
      if (concurrency !== undefined && concurrency > maxConcurrency()) {
        process.stderr.write(`censo: --concurrency ${concurrency} reduzido para ${maxConcurrency()} (o dobro das CPUs desta máquina).\n`);
        concurrency = maxConcurrency();
      }
      const common = { folder: pasta, format, output, concurrency, quiet: quiet(), ...(dados ? { dados } : {}) };
      const summary =
        opts.servidor !== undefined || opts.chave !== undefined
          ? await loteServidor({ ...common, servidor: opts.servidor, chave: opts.chave, novoLote: Boolean(opts.novoLote) })
          : await lote({ ...common, vocabulary: await vocabulary() });
      if (!quiet()) process.stderr.write(summaryText(summary));
      if (incomplete(summary)) status = 1;
      else if (summary.read === 0) {
        // Every file turned out to be an earlier result: nothing was read.
        status = fail(`Nenhum retorno (.json ou .xlsx) em ${quote(pasta)}.`, 1);
      }
    });

  program
    .command('lotes')
    .description('lista os seus lotes num censo-api (o mais novo primeiro), ou apaga um com --apagar')
    .usage('--servidor <url> [opções]')
    .requiredOption('--servidor <url>', 'endereço do censo-api (chave em CENSO_API_KEY ou --chave)')
    .option('--chave <chave>', 'chave da API (padrão: CENSO_API_KEY)')
    .option('--apagar <id>', 'apaga o lote: cancela as tarefas que faltam e remove todos os seus dados')
    .addOption(new Option('-f, --format <formato>', 'formato da lista: texto ou json (padrão: texto)').choices(['texto', 'json']))
    .action(async (opts: { servidor: string; chave?: string; apagar?: string; format?: 'texto' | 'json' }) => {
      const server = { servidor: opts.servidor, chave: opts.chave };
      if (opts.apagar !== undefined) {
        await apagarLote(server, opts.apagar);
        if (!quiet()) process.stderr.write(`Lote ${opts.apagar} apagado.\n`);
        return;
      }
      const lotes = await listLotes(server);
      if (opts.format === 'json') process.stdout.write(`${JSON.stringify({ lotes })}\n`);
      else if (lotes.length > 0) process.stdout.write(lotesTable(lotes));
      else if (!quiet()) process.stderr.write('Nenhum lote.\n');
    });

  program
    .command('comparar')
    .description('compara duas rodadas: cada divergência resolvida, persistente ou nova, por escola (de dois resultados do censo lote)')
    .usage('[opções] <antes> <depois>')
    .argument('<antes>', 'resultado do censo lote da rodada anterior (.json, .csv ou .xlsx)')
    .argument('<depois>', 'resultado do censo lote da rodada atual (.json, .csv ou .xlsx)')
    .addOption(format(FORMATS))
    .addOption(output())
    .addOption(dado())
    .action(async (antes: string, depois: string, opts: { format?: OutputFormat; output?: string; dado?: string }) => {
      const dados = dadosOf(opts.dado);
      const { format, output } = listOutput(opts.format, opts.output, FORMATS);
      const comparacao = await comparar({ antes, depois, format, output, ...(dados ? { dados } : {}) });
      if (!quiet()) process.stderr.write(comparacaoSummaryText(comparacao));
    });

  program
    .command('resumo')
    .description('as contagens por escola e por dado de um resultado do censo lote (arquivos, falhas, divergências)')
    .usage('[opções] <resultado>')
    .argument('<resultado>', 'resultado do censo lote (.json, .csv ou .xlsx)')
    .addOption(format(FORMATS))
    .addOption(output())
    .action(async (resultado: string, opts: { format?: OutputFormat; output?: string }) => {
      const { format, output } = listOutput(opts.format, opts.output, FORMATS);
      await resumir({ resultado, format, output });
    });

  program
    .command('cartas')
    .description('uma carta por escola: o que cada escola deve corrigir e onde, e um aviso para a família quando é na Receita Federal')
    .usage('<resultado> -o <cartas.xlsx|cartas.html>')
    .argument('<resultado>', 'resultado do censo lote (.json, .csv ou .xlsx)')
    .requiredOption('-o, --output <arquivo>', 'arquivo das cartas: .xlsx (planilhas escolas e pessoas) ou .html (página para imprimir)')
    .action(async (resultado: string, opts: { output: string }) => {
      const cartas = await escreverCartas({ resultado, output: opts.output });
      if (!quiet()) process.stderr.write(`Cartas: ${cartas.escolas.length} ${cartas.escolas.length === 1 ? 'escola' : 'escolas'}.\n`);
    });

  try {
    const dashed = singleDashOption(program, argv);
    if (dashed !== null) throw new BadUsage(dashed);
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
