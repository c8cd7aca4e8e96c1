// `dnc status`: lists results files and when their scrub expires, for people and for cron (exit 3 when any is expired
// or expiring).
import path from 'node:path';
import type { Command } from 'commander';
import { dateTimeOption, durationOption, unanchoredOption } from '../cli-options.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import { shownPath } from '../paths.js';
import type { CommandHost } from './host.js';
import { formatInteger } from '../text/numbers.js';
import { formatDuration } from '../time.js';
import type { Context } from '../context.js';
import type { ScrubRecord } from '../stores/interfaces.js';

const HELP = `
Reads the manifests \`dnc batch\` writes beside its outputs (PATH: a results CSV, its
.manifest.json, or a folder holding them; default: the current folder). A scrub is valid
until its oldest callable verdict is older than its country's window (US 31 days, CA 31,
GB 28, AU 30, others 30; "validity_days" in the config file changes them), or an exemption
that made a row callable ends, whichever comes first. Sends nothing.

Examples:
  dnc status
  dnc status exports/ --expiring 7d          (in cron: mail me before a list goes stale)
  dnc status leads.results.csv --json`;

export function registerStatus(program: Command, host: CommandHost): void {
  const command = program
    .command('status')
    .description(
      'list results files and when their scrub expires (exit 3 when any is expired, expiring or not fit to dial)',
    )
    .argument('[path...]', 'results CSVs, manifests or folders (default: the current folder)')
    .addOption(durationOption('--expiring <duration>', 'also fail for scrubs that expire within DURATION, e.g. 7d'))
    .addOption(dateTimeOption('--as-of <time>', 'judge as of this ISO 8601 time instead of now'))
    .addOption(unanchoredOption('files'))
    .option(
      '--scrubs',
      "the latest scrubs recorded in the history (the team's, with a team store): who, for whom, when",
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts<{ expiring?: number; asOf?: Date; scrubs?: boolean; unanchored?: boolean }>();
    const withinMs = o.expiring ?? 0;
    const asOf = o.asOf ?? ctx.now();
    const paths = (cmd.args.length ? cmd.args : ['.']).map((p) => path.resolve(ctx.cwd, p));
    const { runStatus } = await import('../status/run.js');
    const result = await runStatus(
      o.scrubs ? { scrubs: true } : { paths, asOf, withinMs, unanchored: o.unanchored === true },
      ctx.deps({ onEvent: (e: { text: string }) => ctx.warn(e.text) }),
    );
    if (result.kind === 'scrubs') return showScrubs(ctx, result.scrubs, result.where);
    const { files, failing } = result;
    if (ctx.json) {
      writeLine(
        ctx.io.stdout,
        JSON.stringify({
          as_of: asOf.toISOString(),
          expiring_within: o.expiring === undefined ? null : formatDuration(withinMs),
          files,
        }),
      );
    } else if (files.length === 0) {
      ctx.info('no results files with a manifest found');
    } else {
      const word = {
        expired: 'EXPIRED',
        expiring: 'EXPIRING',
        valid: 'valid',
        nothing_callable: 'nothing callable',
        not_fit: 'NOT FIT',
      } as const;
      const { renderTable } = await import('../render/table.js');
      ctx.io.stdout.write(
        renderTable(
          {
            head: ['output', 'state', 'valid until', 'days left', 'rows', 'callable', 'finished', 'seller', 'campaign'],
            rows: files.map((f) => [
              shownPath(ctx.cwd, f.output),
              word[f.state],
              f.valid_until ?? '-',
              f.days_left ?? '-',
              f.rows,
              f.callable,
              f.finished_at ?? '-',
              f.seller ?? '',
              f.campaign ?? '',
            ]),
          },
          { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
        ),
      );
    }
    // Each file not fit says why and what makes it fit, in the words verify, window and report use.
    for (const f of files) {
      if (f.state !== 'not_fit') continue;
      ctx.warn(
        `dnc: ${shownPath(ctx.cwd, f.output)} is not fit to dial: ${f.not_fit_because} ` +
          '(`dnc verify` says why, row by row)',
      );
      for (const line of f.way_out) ctx.warn(`  ${line}`);
    }
    const stale = failing.filter((f) => f.state !== 'not_fit').length;
    if (failing.length)
      ctx.warn(
        `dnc: ${formatInteger(failing.length)} scrub(s) expired, expiring or not fit to ` +
          `dial${withinMs ? ` within ${formatDuration(withinMs)}` : ''}` +
          (stale > 0
            ? `: scrub the input of the ${formatInteger(stale)} expired or expiring one(s) again with \`dnc batch\` ` +
              'before dialling (--reuse-within reuses the verdicts still fresh)'
            : ''),
      );
    return failing.length ? ExitCode.INPUT : ExitCode.OK;
  });
}

/** `dnc status --scrubs`: who scrubbed what, for which seller and campaign, when (newest first). */
async function showScrubs(ctx: Context, scrubs: ScrubRecord[], where: string): Promise<number> {
  if (ctx.json) {
    for (const s of scrubs) writeLine(ctx.io.stdout, JSON.stringify(s));
    return ExitCode.OK;
  }
  if (scrubs.length === 0) {
    ctx.info(`no scrub recorded in the history (${where})`);
    return ExitCode.OK;
  }
  const { renderTable } = await import('../render/table.js');
  ctx.io.stdout.write(
    renderTable(
      {
        head: ['finished', 'operator', 'seller', 'campaign', 'output', 'host', 'rows', 'callable', 'credits'],
        rows: scrubs.map((s) => [
          s.finishedAt,
          s.operator,
          s.seller ?? '',
          s.campaign ?? '',
          shownPath(ctx.cwd, s.output),
          s.host,
          s.rows,
          s.callable,
          s.credits,
        ]),
      },
      { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
    ),
  );
  return ExitCode.OK;
}
