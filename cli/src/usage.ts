// Commander in Portuguese. Its help is reworded through configureHelp (PORTUGUESE_HELP); its error messages
// are English templates built inside the parser, so every subcommand is this class and `error()`
// rewrites each template (known by its `code`) before commander prints it. A value the user typed
// is quoted like a file name: it may hold a line break. Commander is pinned (14.0.3); a template
// this does not know is still printed (in English), never swallowed.
import { createRequire } from 'node:module';
import type * as Commander from 'commander';
import type { Command as CommandType, HelpConfiguration } from 'commander';
import { quote } from './failures.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const { Command } = createRequire(import.meta.url)('commander') as typeof Commander;

/** Commander writes its section titles in English; the help is Portuguese. */
const HELP_TITLES: Readonly<Record<string, string>> = {
  'Usage:': 'Uso:',
  'Options:': 'Opções:',
  'Commands:': 'Comandos:',
  'Arguments:': 'Argumentos:',
  'Global Options:': 'Opções globais:',
};

const CHOICES = /^Allowed choices are (.*)\.$/s;

/** `(Did you mean --format?)` / `(Did you mean one of a, b?)`, which commander puts on its own line. */
function suggestion(text: string | undefined): string {
  if (text === undefined) return '';
  const many = /^one of (.*)$/s.exec(text);
  return many ? ` (quis dizer um destes: ${many[1]}?)` : ` (quis dizer ${text}?)`;
}

/** The Portuguese of one of commander's messages; `null` for a template this does not know. */
export function portuguese(message: string, code: string | undefined): string | null {
  let m: RegExpExecArray | null;
  switch (code) {
    case 'commander.unknownOption':
      m = /^error: unknown option '(.*)'(?:\n\(Did you mean (.*)\?\))?$/s.exec(message);
      return m && `opção desconhecida: ${quote(m[1]!)}${suggestion(m[2])}.`;
    case 'commander.unknownCommand':
      m = /^error: unknown command '(.*)'(?:\n\(Did you mean (.*)\?\))?$/s.exec(message);
      return m && `comando desconhecido: ${quote(m[1]!)}${suggestion(m[2])}.`;
    case 'commander.missingArgument':
      m = /^error: missing required argument '(.*)'$/s.exec(message);
      return m && `falta o argumento <${m[1]}>.`;
    case 'commander.optionMissingArgument':
      m = /^error: option '(.*)' argument missing$/s.exec(message);
      return m && `falta o valor da opção ${m[1]}.`;
    case 'commander.missingMandatoryOptionValue':
      m = /^error: required option '(.*)' not specified$/s.exec(message);
      return m && `a opção ${m[1]} é obrigatória.`;
    case 'commander.excessArguments':
      m = /^error: too many arguments(?: for '(.*)')?\. Expected (\d+) arguments? but got (\d+)\.$/s.exec(message);
      return m && `argumentos demais${m[1] ? ` para ${m[1]}` : ''}: espera ${m[2]}, recebeu ${m[3]}.`;
    case 'commander.invalidArgument': {
      m = /^error: option '(.*?)' argument '(.*)' is invalid\. (.*)$/s.exec(message);
      if (!m) return null;
      const choices = CHOICES.exec(m[3]!);
      return `valor inválido para a opção ${m[1]}: ${quote(m[2]!)}; ${choices ? `use um destes: ${choices[1]}.` : m[3]}`;
    }
    default:
      return null;
  }
}

/** Every long option name of `program` and its subcommands (`format`, `output`, `novo-lote`…). */
function longNames(program: CommandType): Set<string> {
  const names = new Set<string>();
  for (const command of [program, ...program.commands]) {
    for (const option of command.options) if (option.long) names.add(option.long.slice(2));
  }
  return names;
}

/**
 * `-format csv`: a long option typed with one dash, which commander would read as `-f ormat`
 * (and `-output x` as `-o utput`, writing a file named "utput"). The message for it, or null.
 * Only before `--`, and only names that are this program's long options.
 */
export function singleDashOption(program: CommandType, argv: readonly string[]): string | null {
  const names = longNames(program);
  for (const arg of argv) {
    if (arg === '--') break;
    const m = /^-([a-z][a-z-]+)(=.*)?$/s.exec(arg);
    if (m && names.has(m[1]!)) return `${quote(arg)} tem um hífen só: use --${m[1]}${m[2] ?? ''}.`;
  }
  return null;
}

/**
 * `censo -o x.csv divergencias r.json`: an option of a command written before the command's name,
 * where the program itself does not know it. The message saying where it goes, or null.
 */
function optionBeforeCommand(program: CommandType, flag: string): string | null {
  const argv = (program as unknown as { rawArgs?: string[] }).rawArgs ?? [];
  const named = (option: Commander.Option) => option.short === flag || option.long === flag;
  const owners = program.commands.filter((command) => command.options.some(named));
  const owner = owners.find((command) => argv.includes(command.name())) ?? owners[0];
  if (owner === undefined) return null;
  const option = owner.options.find(named)!;
  const value = /<[^>]*>|\[[^\]]*\]/.exec(option.flags)?.[0];
  return `a opção ${quote(flag)} é do comando ${owner.name()} e vem depois dele: censo ${owner.name()} … ${flag}${value ? ` ${value}` : ''}.`;
}

/** `censo` and its subcommands, with Portuguese help titles and error messages. */
export class CensoCommand extends Command {
  override createCommand(name?: string): CensoCommand {
    return new CensoCommand(name);
  }

  override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
    const flag = /^error: unknown option '(.*)'/s.exec(message)?.[1];
    const misplaced =
      this.parent === null && errorOptions?.code === 'commander.unknownOption' && flag !== undefined
        ? optionBeforeCommand(this, flag.replace(/=.*$/s, ''))
        : null;
    const translated = misplaced ?? portuguese(message, errorOptions?.code);
    return super.error(translated === null ? message : `censo: ${translated}`, errorOptions);
  }
}

/**
 * For configureHelp: Portuguese titles; a subcommand listed with its own (Portuguese) usage rather
 * than commander's `[options]`; an option's description as written (the choices are in it, not
 * appended as `(choices: …)`).
 */
export const PORTUGUESE_HELP: HelpConfiguration = {
  styleTitle: (title) => HELP_TITLES[title] ?? title,
  subcommandTerm: (command) => `${command.name()} ${command.usage()}`,
  optionDescription: (option) => option.description,
};
