// `dnc verify`: offline proof that a batch output is what dnc wrote and fit to dial (fresh, evidenced callable rows,
// nothing pending).
import { describeRecordAt } from '../tables/record-location.js';
import path from 'node:path';
import type { Command } from 'commander';
import { dateTimeOption, durationOption, integerOption, unanchoredOption } from '../cli-options.js';
import { ExitCode } from '../errors.js';
import type { JudgedReport } from '../verify/fit-to-dial.js';
import { recheckWords, settledNote } from '../verify/fitness.js';
import { writeLine } from '../io.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { shownPath } from '../paths.js';
import type { CommandHost } from './host.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
Reads OUTPUT.csv and its manifest (OUTPUT.manifest.json, written by \`dnc batch\` and
rewritten by \`dnc listen\`); needs no service configuration and sends nothing. Checks:
  - the file's SHA-256 and its counts (rows, results, distinct numbers, credits, register
    sources, oldest/newest checked_at) against the manifest;
  - every row against the batch journal and the input, when they are still where the
    manifest says (an edited verdict, or a deleted, inserted or edited row, is found by line);
    a file whose journal is gone cannot be proven and is not fit, unless --without-journal
    asks for the weaker check (the rest of it), which then says what it did not check;
  - the file and its manifest against their anchors: what this machine's state folder records
    dnc last wrote, and, with a team store, what any member's dnc anchored there for the run
    the manifest names (a file, manifest and journal rewritten together are found); a file
    anchored nowhere this machine can see is unproven and not fit, unless --unanchored asks
    for the weaker check, which then says what it did not check;
  - every callable row has a correlation id, a register source and a checked_at no older than
    --max-age (default: the validity window of the row's country: US 31d, CA 31d, GB 28d,
    AU 30d, others 30d, or those the scrub's config set); a row callable by an exemption
    also needs the exemption to hold;
  - no row is pending, not_checked or failed.

Examples:
  dnc verify leads.results.csv
  dnc verify leads.results.csv --max-age 7d --json
  dnc verify leads.results.csv --as-of 2026-12-20T09:00:00Z   (will it still be fit on that day?)`;

export function registerVerify(program: Command, host: CommandHost): void {
  const command = program
    .command('verify')
    .description(
      'offline: is a batch output exactly what dnc wrote, and fresh enough to dial? (rows to re-check by line)',
    )
    .argument('<output>', 'the output CSV of `dnc batch`')
    .addOption(
      durationOption(
        '--max-age <duration>',
        'oldest acceptable checked_at for callable rows, e.g. 31d, 12h (default: per country, US/CA 31d, GB ' +
          '28d, AU 30d, others 30d)',
      ),
    )
    .addOption(dateTimeOption('--as-of <time>', 'judge ages as of this ISO 8601 time instead of now'))
    .addOption(integerOption('--list <n>', 'rows to re-check listed at most (all are counted)', 0).default(1000))
    .option(
      '--without-journal',
      'judge a file whose batch journal is gone (the weaker check: its rows cannot be compared with what was answered)',
    )
    .addOption(unanchoredOption())
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts<{
      maxAge?: number;
      asOf?: Date;
      list: number;
      withoutJournal?: boolean;
      unanchored?: boolean;
    }>();
    const maxAgeMs = o.maxAge ?? null;
    const asOf = o.asOf ?? ctx.now();
    const listLimit = o.list;
    const output = path.resolve(ctx.cwd, cmd.args[0]!);
    const { fitToDial } = await import('../verify/fit-to-dial.js');
    const report = await fitToDial(ctx, output, {
      maxAgeMs,
      asOf,
      listLimit,
      withoutJournal: o.withoutJournal === true,
      unanchored: o.unanchored === true,
      warn: (line) => ctx.warn(line),
    });
    if (ctx.json) writeLine(ctx.io.stdout, JSON.stringify(verifyJson(report)));
    // Lines that quote the file (its name, its cells): escaped whole, as trace's are.
    else for (const line of verifyLines(report, ctx.cwd)) writeLine(ctx.io.stdout, terminalSafe(line));
    return report.fitness.state === 'fit' ? ExitCode.OK : ExitCode.INPUT;
  });
}

export function verifyJson(r: JudgedReport) {
  return {
    output: r.output,
    manifest: r.manifest,
    fit: r.fit,
    fitness: r.fitness.state,
    not_fit_because: r.fitness.because,
    way_out: r.fitness.wayOut,
    tampered: r.tampered,
    sha256_matches: r.sha256.matches,
    differences: r.differences,
    compared_with_journal: r.comparedWithJournal,
    compared_with_input: r.comparedWithInput,
    unproven: r.unproven,
    journal_chain: r.journalChain,
    journal_chain_why: r.journalChainWhy,
    anchored: r.anchored,
    anchored_by: r.anchoredBy,
    anchors_looked_in: r.anchorsLookedIn,
    unanchored: r.unanchored,
    anchor_unchecked: r.anchorUnchecked,
    rows: r.tally.rows.total,
    distinct_numbers: r.tally.numbers.distinct,
    rows_by_result: r.tally.rows.by_result,
    oldest_checked_at: r.tally.checked_at.oldest,
    max_age_days: r.maxAge.days,
    default_max_age_days: { ...r.maxAge.byCountry, other: r.maxAge.otherDays },
    as_of: r.asOf,
    recheck_count: r.recheckCount,
    recheck_rows: r.recheckRows,
    settled_unfinished: {
      rows: r.settledUnfinished.rows,
      numbers: r.settledUnfinished.numbers,
      by_reason: r.settledUnfinished.byReason,
    },
    recheck_by_reason: r.recheckByReason,
    recheck: r.recheck,
    manifest_info: r.manifestInfo,
    calling_rules_version: r.callingRulesVersion,
    calling_unchecked: r.callingUnchecked,
  };
}

function verifyLines(r: JudgedReport, cwd: string): string[] {
  const rel = (p: string) => shownPath(cwd, p);
  const { state, because, wayOut } = r.fitness;
  const judged = state === 'fit' ? 'fit to dial' : `NOT FIT TO DIAL${state === 'unproven' ? ' (unproven)' : ''}`;
  const lines = [`${rel(r.output)}: ${judged}${because ? `: ${because}` : ''}`];
  const m = r.manifestInfo;
  lines.push(
    `  manifest   ${rel(r.manifest)} (dnc ${m.dnc_version}, interface ${m.interface_version}, ` +
      `${m.service_base_url ?? 'service not recorded'}, written ${m.updated_at})`,
  );
  lines.push(`  calling    rules ${r.callingRulesVersion ?? 'not recorded'}`);
  if (r.callingUnchecked) lines.push(`             ${r.callingUnchecked}`);
  if (r.sha256.matches) lines.push(`  integrity  SHA-256 matches the manifest (${r.sha256.actual.slice(0, 16)}…)`);
  else lines.push(`  integrity  SHA-256 differs from the manifest: the file changed after dnc wrote it`);
  for (const d of r.differences) lines.push(`             ${d}`);
  const against = [r.comparedWithJournal ? 'the journal' : null, r.comparedWithInput ? 'the input' : null].filter(
    Boolean,
  );
  lines.push(
    `             rows compared with ` +
      (against.length ? against.join(' and ') : 'nothing else (journal and input not found where the manifest says)'),
  );
  const by = r.anchoredBy;
  if (by?.where === 'state folder')
    lines.push(
      '             the state folder records this file and manifest as what dnc last wrote' +
        (by.output === r.output ? '' : ` (at ${rel(by.output)})`),
    );
  else if (by)
    lines.push(
      `             the team store records this file and manifest as written by ${by.who} (as ${by.operator} on ` +
        `${by.host}) at ${by.at}`,
    );
  if (r.anchorUnchecked) lines.push(`  unanchored ${r.anchorUnchecked}`);
  else if (r.unanchored) lines.push(`  unanchored ${r.unanchored}`);
  if (r.unproven)
    lines.push(
      `  unproven   ${r.unproven}`,
      '             `dnc verify --without-journal` judges the rest: the SHA-256 against the manifest, the rows ' +
        'against the input, freshness',
    );
  else if (!r.comparedWithJournal)
    lines.push('  without the journal: no row was compared with what the service answered (--without-journal)');
  if (r.journalChain === 'altered')
    lines.push(`  journal    altered after dnc wrote it: ${r.journalChainWhy}; a rerun refuses it (E_JOURNAL_ALTERED)`);
  else if (r.journalChain === 'unchained' || r.journalChain === 'unanchored')
    lines.push(`  journal    its answers cannot prove themselves: ${r.journalChainWhy}`);
  const byResult = Object.entries(r.tally.rows.by_result)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${formatInteger(n)} ${k}`)
    .join(', ');
  lines.push(
    `  rows       ${formatInteger(r.tally.rows.total)} (${byResult}); ` +
      `${formatInteger(r.tally.numbers.distinct)} distinct number(s)`,
  );
  const age =
    r.maxAge.days !== null
      ? `${r.maxAge.days}d`
      : `${Object.entries(r.maxAge.byCountry)
          .map(([c, d]) => `${d}d ${c}`)
          .join(', ')}, ${r.maxAge.otherDays}d others`;
  lines.push(
    `  freshness  checked_at ${r.tally.checked_at.oldest ?? '-'} … ${r.tally.checked_at.newest ?? '-'}; max age ` +
      `${age}, as of ${r.asOf}`,
  );
  const settled = settledNote(r);
  if (settled) lines.push(`  ${settled}`);
  if (r.recheckCount === 0) {
    if (r.fit)
      lines.push(
        '  every callable row has a correlation id, a register source and a fresh checked_at; nothing is pending',
      );
    else if (r.journalChain === 'altered') lines.push(...wayOut.map((line) => `  ${line}`));
    else if (r.tampered) lines.push(`  the file is not what dnc wrote: ${wayOut.join('; ')}`);
    return lines;
  }
  lines.push(
    `  ${recheckWords(r)}${r.recheck.length < r.recheckCount ? `; the first ${r.recheck.length} listed` : ''}`,
  );
  for (const x of r.recheck) {
    lines.push(
      `    ${(x.sheet ? `row ${x.record}` : describeRecordAt(x.line, x.record)).padEnd(11)} ` +
        `${(x.number || '-').padEnd(16)} ${(x.country || '-').padEnd(3)} ${x.result.padEnd(12)} ${x.reason}: ` +
        `${x.detail}`,
    );
  }
  // What makes it fit (the one judgement's, as window, report and status say it); unproven is said above.
  if (r.tampered && r.journalChain !== 'altered') lines.push(`  the file is not what dnc wrote: ${wayOut.join('; ')}`);
  else if (!r.unproven) lines.push(...wayOut.map((line) => `  ${line}`));
  return lines;
}
