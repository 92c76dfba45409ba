#!/usr/bin/env node
// `censo`: the service's work from a terminal or a cron job, on the same core and the same job
// boundary (`runJob`, the worker-thread pool), with no server and no Redis (SPEC §6). Data goes to
// stdout (or -o), messages and progress to stderr. Exit 0 ok, 1 bad input, 2 wrong usage.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadColumnsFile, type OutputFormat } from '@censo/shared';
import { corrigir, listOne } from './single.js';
import { lote } from './lote.js';
import { BadUsage, fail, InputError } from './failures.js';

const FORMATS = ['json', 'csv', 'xlsx'] as const;

/** Commander writes its section titles in English; the help is Portuguese. */
const HELP_TITLES: Readonly<Record<string, string>> = {
  'Usage:': 'Uso:',
  'Options:': 'Opções:',
  'Commands:': 'Comandos:',
  'Arguments:': 'Argumentos:',
};

function positiveInteger(value: string): number {
  if (!/^[1-9]\d*$/.test(value)) throw new InvalidArgumentError('deve ser um número inteiro positivo.');
  return Number(value);
}

async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('censo')
    .description('Divergências do retorno do Censo Escolar com a Receita Federal, sem servidor.')
    .option('-q, --quiet', 'não mostra barra de progresso')
    .helpOption('-h, --help', 'mostra esta ajuda')
    .helpCommand('help [comando]', 'mostra a ajuda de um comando')
    .showHelpAfterError('(use --help para ver as opções)')
    .exitOverride()
    .configureHelp({ styleTitle: (title) => HELP_TITLES[title] ?? title })
    .configureOutput({ writeErr: (text) => process.stderr.write(text), writeOut: (text) => process.stdout.write(text) });

  const vocabulary = () => loadColumnsFile(process.env.COLUMNS_FILE?.trim() || null);
  const quiet = () => Boolean(program.opts<{ quiet?: boolean }>().quiet);
  const format = (formats: readonly string[]) =>
    new Option('-f, --format <formato>', `formato da saída: ${formats.join(', ')}`).choices(formats).default('json');
  let status = 0;

  program
    .command('divergencias')
    .description('lista as divergências com a Receita Federal de um retorno (.json ou .xlsx)')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .addOption(format(FORMATS))
    .option('-o, --output <arquivo>', 'grava no arquivo em vez da saída padrão')
    .action(async (retorno: string, opts: { format: OutputFormat; output?: string }) => {
      await listOne({ kind: 'divergencias', retorno, format: opts.format, output: opts.output, vocabulary: await vocabulary() });
    });

  program
    .command('retorno-rf')
    .description('as pessoas do arquivo de migração corrigidas pelas divergências do retorno')
    .argument('<retorno>', 'arquivo de retorno do Censo (.json ou .xlsx)')
    .argument('<txt>', 'arquivo de migração enviado ao Censo (.txt)')
    .addOption(format(FORMATS))
    .option('-o, --output <arquivo>', 'grava no arquivo em vez da saída padrão')
    .action(async (retorno: string, txt: string, opts: { format: OutputFormat; output?: string }) => {
      await listOne({ kind: 'retorno-rf', retorno, txt, format: opts.format, output: opts.output, vocabulary: await vocabulary() });
    });

  program
    .command('corrigir')
    .description('grava o arquivo de migração corrigido, pronto para reenviar ao Educacenso (ISO-8859-1)')
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
    .argument('<pasta>', 'pasta com os retornos')
    .addOption(format(['csv', 'json']))
    .option('-o, --output <arquivo>', 'grava no arquivo em vez da saída padrão')
    .option('-c, --concurrency <n>', 'arquivos processados ao mesmo tempo (padrão: número de CPUs)', positiveInteger)
    .action(async (pasta: string, opts: { format: 'csv' | 'json'; output?: string; concurrency?: number }) => {
      const failed = await lote({
        folder: pasta,
        format: opts.format,
        output: opts.output,
        concurrency: opts.concurrency,
        quiet: quiet(),
        vocabulary: await vocabulary(),
      });
      if (failed > 0) status = 1;
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
    // The file system refused (an -o in a missing folder, no permission): one line, not a stack.
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code))
      return fail(`não foi possível ler ou gravar ${(err as NodeJS.ErrnoException).path ?? ''} (${code}).`, 1);
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
