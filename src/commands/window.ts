// `dnc window`: the numbers of a results file to dial in a slot: callable, fit to dial, inside their calling window.
import type { Command } from 'commander';
import { dateTimeOption, durationOption, unanchoredOption } from '../cli-options.js';
import { showSaid, type Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import { shownPath } from '../paths.js';
import { formatInteger } from '../text/numbers.js';
import type { WindowEvent, WindowOptions, WindowResult } from '../window/run.js';
import type { CommandHost } from './host.js';

const HELP = `
Two questions, neither of which looks anything up or spends a credit:

dnc window RESULTS --from TIME --until TIME --dial-out FILE
Reads RESULTS (the output of \`dnc batch\`) and writes to --dial-out, one E.164 a line, each
number once, in the order of the file, the numbers that are:
  - callable (with several phone columns: by the number's own dnc_N_result);
  - fit to dial, by \`dnc verify\`'s rules judged as of the end of the slot (or now, if later):
    a file that changed after dnc wrote it, whose journal is gone, or whose callable verdicts
    are too old or lack their evidence is refused whole (exit 3) and nothing is written; rows
    pending, not checked, failed or on the internal list now are left out, and counted;
  - inside their calling window for the whole slot [--from, --until), in every one of their
    time zones, under the rules shipped with dnc and the team's calling settings
    (--calling-settings FILE, DNC_CALLING_SETTINGS or "calling" in the config file).
The list is written atomically and is private (0600); "-" writes it to standard output (then
the summary goes to stderr).

dnc window --number N [--number N...] [--country CC] [--at TIME]
Each number's time zones, local time, whether the calling rules allow a call at TIME (default
now) and its window in progress or next, under the same rules and settings. It is NOT a
do-not-call verdict: "may call now" stays no (reason not_checked) for a number not looked up,
and for one on the internal do-not-call list (read locally, for free). \`dnc check N\` looks a
number up: that costs a credit (its calling answer weighs the verdict). --json: one object a
number, with "calling" as \`dnc check --json\` gives it. Exit 3 when a number cannot be valid.

Examples:
  dnc window leads.results.csv --from 2026-12-01T14:00:00Z --until 2026-12-01T16:00:00Z --dial-out slot.txt
  dnc window leads.results.csv --from 2026-12-01T09:00:00-05:00 --until 2026-12-01T12:00:00-05:00 --dial-out - > am.txt
  dnc window leads.results.csv --from 2026-12-01T14:00:00Z --until 2026-12-01T16:00:00Z --dial-out slot.txt --json
  dnc window --number +16055550100 --at 2026-12-01T14:00:00Z
  dnc window --number "020 7946 0123" --number +12025550100 --country GB --json`;

export function registerWindow(program: Command, host: CommandHost): void {
  const command = program
    .command('window')
    .description(
      "offline, no credit: the numbers of a results file to dial in a slot, or numbers' calling windows (--number)",
    )
    .argument('[results]', 'the output CSV (or workbook) of `dnc batch`')
    .addOption(dateTimeOption('--from <time>', 'the start of the slot, ISO 8601 with Z or an offset (with RESULTS)'))
    .addOption(dateTimeOption('--until <time>', 'the end of the slot, not included (with RESULTS)'))
    .option('--dial-out <file>', 'where the numbers go, one E.164 a line ("-": standard output) (with RESULTS)')
    .addOption(
      durationOption(
        '--max-age <duration>',
        'oldest acceptable checked_at for callable rows, as `dnc verify --max-age` (default: per country)',
      ),
    )
    .option('--without-journal', "judge a file whose batch journal is gone (verify's weaker check)")
    .addOption(unanchoredOption())
    .option(
      '--calling-settings <file>',
      "a JSON file of the team's calling policy and overrides (env DNC_CALLING_SETTINGS; else the config's calling)",
    )
    .option(
      '--number <number>',
      'instead of RESULTS: a number (E.164, or national with --country) whose window to tell; repeat for several',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--country <cc>', 'with --number: the region for numbers in national format, e.g. US or GB')
    .addOption(dateTimeOption('--at <time>', 'with --number: the instant asked about, ISO 8601 with Z or an offset'))
    .option(
      '--suppression-list <path>',
      'with --number: the internal do-not-call list (env DNC_SUPPRESSION_LIST; default: the state folder)',
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts<{
      from?: Date;
      until?: Date;
      dialOut?: string;
      maxAge?: number;
      withoutJournal?: boolean;
      unanchored?: boolean;
      callingSettings?: string;
      number?: string[];
      country?: string;
      at?: Date;
      suppressionList?: string;
    }>();
    const results = cmd.args[0];
    if (o.number !== undefined) {
      refuseMixed(results, o);
      const { runNumberWindowCommand } = await import('./window-numbers.js');
      return runNumberWindowCommand(ctx, {
        numbers: o.number,
        country: o.country,
        at: o.at,
        callingSettings: o.callingSettings,
        suppressionList: o.suppressionList,
      });
    }
    const missing = [
      ...(results === undefined ? ['RESULTS'] : []),
      ...(o.from === undefined ? ['--from'] : []),
      ...(o.until === undefined ? ['--until'] : []),
      ...(o.dialOut === undefined ? ['--dial-out'] : []),
    ];
    if (results === undefined || o.from === undefined || o.until === undefined || o.dialOut === undefined) {
      throw usageError('E_USAGE', `dnc window needs ${missing.join(', ')} (or --number N, for numbers' windows)`, {
        hint:
          'dnc window RESULTS --from TIME --until TIME --dial-out FILE makes a list; dnc window --number N --at TIME ' +
          "tells a number's window (see 'dnc window --help')",
      });
    }
    const onlyWithNumber = (['country', 'at', 'suppressionList'] as const).filter((k) => o[k] !== undefined);
    if (onlyWithNumber.length > 0) {
      throw usageError('E_USAGE', `${flagsOf(onlyWithNumber).join(', ')} go with --number, not with RESULTS`, {
        hint: 'the slot of a results file is --from and --until',
      });
    }
    if (o.dialOut.trim() === '') throw usageError('E_USAGE', '--dial-out must not be empty');
    if (o.dialOut === '-' && ctx.json) {
      throw usageError('E_USAGE', '--json and --dial-out - would both write to standard output', {
        hint: 'give --dial-out a file, or leave out --json (the summary then goes to stderr)',
      });
    }
    return runWindowCommand(ctx, {
      results,
      from: o.from,
      until: o.until,
      dialOut: o.dialOut,
      maxAgeMs: o.maxAge ?? null,
      withoutJournal: o.withoutJournal === true,
      unanchored: o.unanchored === true,
      callingSettings: o.callingSettings,
    });
  });
}

/** The long flag of an option's key ('dialOut' → '--dial-out'). */
function flagsOf(keys: readonly string[]): string[] {
  return keys.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
}

/** --number asks about numbers, not a results file: the options of a list are refused beside it. */
function refuseMixed(results: string | undefined, o: Record<string, unknown>): void {
  const listOnly = (['from', 'until', 'dialOut', 'maxAge', 'withoutJournal', 'unanchored'] as const).filter(
    (k) => o[k] !== undefined,
  );
  if (results !== undefined || listOnly.length > 0) {
    const given = [...(results !== undefined ? [`RESULTS (${results})`] : []), ...flagsOf(listOnly)];
    throw usageError('E_USAGE', `--number tells numbers' windows: ${given.join(', ')} go with a results file`, {
      hint: "give either --number N (with --at TIME) or RESULTS --from --until --dial-out (see 'dnc window --help')",
    });
  }
}

async function runWindowCommand(ctx: Context, options: WindowOptions): Promise<number> {
  const { runWindow } = await import('../window/run.js');
  const result = await runWindow(ctx.deps({ onEvent: (e: WindowEvent) => showSaid(ctx, e) }), options);
  for (const { reason, numbers } of result.overrides) {
    ctx.warn(`dnc: a calling override set the law's hours aside for ${formatInteger(numbers)} number(s): ${reason}`);
  }
  if (ctx.json) writeLine(ctx.io.stdout, JSON.stringify(windowJson(result)));
  else {
    const lines = windowLines(result, ctx.cwd);
    // With the list on standard output, the summary is not data: it goes where progress goes.
    for (const line of lines) (result.dialOut === '-' ? ctx.info : (l: string) => writeLine(ctx.io.stdout, l))(line);
  }
  return ExitCode.OK;
}

export function windowJson(r: WindowResult) {
  return {
    results: r.results,
    dial_out: r.dialOut,
    from: r.from,
    until: r.until,
    as_of: r.asOf,
    rows: r.rows,
    phone_columns: r.phoneColumns,
    fit_numbers: r.fit,
    written: r.written,
    outside_window: r.outsideWindow,
    never_callable: r.neverCallable,
    left_out: r.leftOut,
    fit: r.fitness.state === 'fit',
    fitness: r.fitness.state,
    not_fit_because: r.fitness.because,
    way_out: r.fitness.wayOut,
    overrides: r.overrides,
    rules_version: r.rulesVersion,
    file_rules_version: r.fileRulesVersion,
  };
}

function windowLines(r: WindowResult, cwd: string): string[] {
  const rel = (p: string) => (p === '-' ? 'standard output' : shownPath(cwd, p));
  const field = (label: string, value: string) => `  ${label.padEnd(15)} ${value}`;
  const n = formatInteger;
  const leftOut = Object.entries(r.leftOut).map(([reason, count]) => `${n(count)} ${reason}`);
  const leftRows = Object.values(r.leftOut).reduce((a, b) => a + b, 0);
  return [
    `${rel(r.dialOut)}: ${n(r.written)} number(s) callable throughout ${r.from} to ${r.until}`,
    field(
      'results',
      `${rel(r.results)}: ${n(r.rows)} rows` +
        `${r.phoneColumns > 1 ? ` with ${r.phoneColumns} phone columns` : ''}, ` +
        (r.fitness.state === 'fit'
          ? `fit to dial as of ${r.asOf}`
          : `NOT FIT TO DIAL as of ${r.asOf}: ${r.fitness.because} (only numbers fit on their own are listed)`),
    ),
    field('callable', `${n(r.fit)} distinct number(s) fit to dial`),
    field('in window', `${n(r.written)} for the whole slot (written)`),
    field('not in window', `${n(r.outsideWindow)} (outside their window for part or all of the slot)`),
    field('never', `${n(r.neverCallable)} (no moment inside the window in every one of their zones)`),
    ...(leftRows > 0
      ? [field('left out', `${n(leftRows)} row(s): ${leftOut.join(', ')} (\`dnc verify\` lists them)`)]
      : []),
    ...r.fitness.wayOut.map((line) => field('to make it fit', line)),
    ...r.overrides.map((o) => field('override', `${n(o.numbers)} number(s): ${o.reason}`)),
    field('rules', r.rulesVersion),
  ];
}
