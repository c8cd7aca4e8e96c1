// The dnc(1) man page, generated from the command tree (src/cli-tree.ts) and the exit-status table at build time.
import type { CommandSpec, OptionSpec, ProgramSpec } from '../cli-tree.js';

export interface ManPageData {
  program: ProgramSpec;
  exitStatuses: ReadonlyArray<readonly [number, string]>;
  environment: ReadonlyArray<{ name: string; meaning: string }>;
  topics: readonly string[];
  /** The date printed in the footer (YYYY-MM-DD): the build's, passed in so the output is reproducible. */
  date: string;
}

/** Escapes text for roff: backslashes, and a leading dot or quote that would read as a request. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1');
}

function optionEntry(o: OptionSpec): string[] {
  const flags = o.flags.replace(/</g, '').replace(/>/g, '');
  const text = o.defaultText === undefined ? o.description : `${o.description} (default: ${o.defaultText})`;
  return ['.TP', `.B ${roff(flags)}`, roff(text)];
}

function commandSection(c: CommandSpec): string[] {
  const lines = ['.SS', `.B dnc ${roff(c.name)} ${roff(c.usage)}`.trimEnd(), roff(c.description)];
  if (c.arguments.length > 0) {
    lines.push('.RS');
    for (const a of c.arguments) lines.push('.TP', `.I ${roff(a.name)}${a.variadic ? '...' : ''}`, roff(a.description));
    lines.push('.RE');
  }
  if (c.options.length > 0) {
    lines.push('.RS');
    for (const o of c.options) lines.push(...optionEntry(o));
    lines.push('.RE');
  }
  return lines;
}

export function manPage(data: ManPageData): string {
  const { program } = data;
  const lines = [
    `.TH DNC 1 "${data.date}" "dnc ${program.version ?? ''}" "User Commands"`,
    '.SH NAME',
    `dnc \\- ${roff(program.description.replace(/\.$/, ''))}`,
    '.SH SYNOPSIS',
    '.B dnc',
    '[\\fIglobal options\\fR] \\fIcommand\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]',
    '.SH DESCRIPTION',
    roff(program.description),
    'Results go to stdout; progress, notes, warnings and errors go to stderr. Every error is printed as',
    '.B dnc: error [CODE]: message',
    'followed by a hint line.',
    '.SH GLOBAL OPTIONS',
    ...program.options.flatMap(optionEntry),
    '.SH COMMANDS',
    ...program.commands.flatMap(commandSection),
    '.SH EXIT STATUS',
    ...data.exitStatuses.flatMap(([code, meaning]) => ['.TP', `.B ${code}`, roff(meaning)]),
    '.SH ENVIRONMENT',
    ...data.environment.flatMap((v) => ['.TP', `.B ${roff(v.name)}`, roff(v.meaning)]),
    '.SH FILES',
    '.TP',
    '.I $XDG_CONFIG_HOME/dnc/config.json',
    'the config file (else ~/.config/dnc/config.json)',
    '.TP',
    '.I OUTPUT.journal.sqlite, OUTPUT.manifest.json',
    "a batch's journal and evidence manifest, beside its output",
    '.SH SEE ALSO',
    `\\fBdnc help\\fR \\fItopic\\fR, topics: ${roff(data.topics.join(', '))}; the docs/ folder of the source.`,
  ];
  return `${lines.join('\n')}\n`;
}
