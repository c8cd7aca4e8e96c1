// The command tree as plain data, read from the commander program itself: the man page and the shell
// completion scripts are generated from it, so neither can list a flag the parser does not know.
import type { Command, Option } from 'commander';

/** What a value is, for completion: a file name, a country code, one of fixed choices, or free text. */
export type ValueKind = 'file' | 'country' | 'choices' | 'shell' | 'none' | 'text';

export interface OptionSpec {
  long: string | undefined;
  short: string | undefined;
  /** The flags as written in help, e.g. `-o, --output <file>`. */
  flags: string;
  description: string;
  valueName: string | undefined;
  kind: ValueKind;
  choices: readonly string[];
  /** The default as help shows it, if any. */
  defaultText: string | undefined;
}

export interface ArgumentSpec {
  name: string;
  required: boolean;
  variadic: boolean;
  description: string;
  kind: ValueKind;
  choices: readonly string[];
}

export interface CommandSpec {
  name: string;
  description: string;
  usage: string;
  arguments: ArgumentSpec[];
  options: OptionSpec[];
  /** Its own commands (`dnc suppress add`), each with its arguments and options; empty for most. */
  subcommands: CommandSpec[];
}

export interface ProgramSpec extends CommandSpec {
  version: string | undefined;
  commands: CommandSpec[];
}

const FILE_VALUE = /^(file|path|input|output|results)$/;

function valueKind(valueName: string | undefined, longName: string | undefined, choices: readonly string[]): ValueKind {
  if (choices.length > 0) return 'choices';
  if (valueName === undefined) return 'none';
  // listen's --path is the URL path pushes arrive on: no file name completes it.
  if (longName === '--path') return 'text';
  if (FILE_VALUE.test(valueName) || longName === '--results') return 'file';
  if (valueName === 'cc') return 'country';
  if (valueName === 'shell') return 'shell';
  return 'text';
}

/** How a default is shown in help: as the user would type it (`8`, not `"8"`). */
export function defaultText(option: Option): string | undefined {
  if (option.defaultValue === undefined) return undefined;
  if (option.defaultValueDescription) return option.defaultValueDescription;
  // A boolean flag's implicit default (false, or true for --no-x) says nothing worth printing.
  if (typeof option.defaultValue === 'boolean') return undefined;
  return Array.isArray(option.defaultValue) ? option.defaultValue.join(' ') : String(option.defaultValue);
}

function optionSpec(option: Option): OptionSpec {
  const valueName = /<([^>.]+)(\.\.\.)?>|\[([^\].]+)(\.\.\.)?\]/.exec(option.flags);
  const name = valueName ? (valueName[1] ?? valueName[3]) : undefined;
  const choices = option.argChoices ?? [];
  return {
    long: option.long,
    short: option.short,
    flags: option.flags,
    description: option.description,
    valueName: name,
    kind: valueKind(name, option.long, choices),
    choices,
    defaultText: defaultText(option),
  };
}

function commandSpec(command: Command, argChoices: Readonly<Record<string, readonly string[]>>): CommandSpec {
  return {
    name: command.name(),
    description: command.description(),
    usage: command.usage(),
    arguments: command.registeredArguments.map((a) => {
      const choices = a.argChoices ?? argChoices[`${command.name()} ${a.name()}`] ?? [];
      return {
        name: a.name(),
        required: a.required,
        variadic: a.variadic,
        description: a.description,
        kind: choices.length > 0 ? 'choices' : valueKind(a.name(), undefined, []),
        choices,
      };
    }),
    options: command.options.filter((o) => !o.hidden).map(optionSpec),
    subcommands: visibleCommands(command).map((c) => commandSpec(c, argChoices)),
  };
}

function visibleCommands(command: Command): Command[] {
  return command.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
}

/**
 * Reads the program's tree. `argChoices` adds completions for arguments that are validated by the
 * command rather than by commander (`help`'s topics), keyed by "command argument".
 */
export function describeProgram(
  program: Command,
  argChoices: Readonly<Record<string, readonly string[]>> = {},
): ProgramSpec {
  const spec = commandSpec(program, argChoices);
  return { ...spec, version: program.version(), commands: spec.subcommands };
}
