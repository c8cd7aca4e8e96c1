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

/**
 * Escapes text for roff: backslashes, a leading dot or quote that would read as a request, and any
 * character outside ASCII as a named glyph (`…` → `\[u2026]`): groff reads its input as Latin-1 unless
 * preconv runs first, as man-db's does and `groff -man` alone does not.
 */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1')
    .replace(/[^\x00-\x7f]/gu, (ch) => `\\[u${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
}

function optionEntry(o: OptionSpec): string[] {
  const flags = o.flags.replace(/</g, '').replace(/>/g, '');
  const text = o.defaultText === undefined ? o.description : `${o.description} (default: ${o.defaultText})`;
  return ['.TP', `.B ${roff(flags)}`, roff(text)];
}

/** A command's section, then one for each of its own commands (`dnc suppress add`), named in full. */
function commandSection(c: CommandSpec, parents = ''): string[] {
  const name = `${parents}${c.name}`;
  const lines = ['.SS', `.B dnc ${roff(name)} ${roff(c.usage)}`.trimEnd(), roff(c.description)];
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
  for (const sub of c.subcommands) lines.push(...commandSection(sub, `${name} `));
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
    ...program.commands.flatMap((c) => commandSection(c)),
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
    `\\fBdnc help\\fR \\fItopic\\fR, topics: ${roff(data.topics.join(', '))}; the docs/ folder of the package ` +
      `(or of the source), one page per command.`,
  ];
  return `${lines.join('\n')}\n`;
}
