// `dnc report`: a self-contained HTML report of one scrub for an auditor (printable to PDF), from its results file and
// manifest.
import { unanchoredOption } from '../cli-options.js';
import path from 'node:path';
import type { Command } from 'commander';
import { ExitCode } from '../errors.js';
import type { CommandHost } from './host.js';
import { writeLine } from '../io.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { formatInteger } from '../text/numbers.js';
import type { ReportData } from '../report/data.js';

const HELP = `
Writes one HTML file with everything inline (styles and SVG charts; no script, nothing
loaded from the network): what was scrubbed, when, by whom and for whom, the registers and
internal lists used, counts by result and country, credits, validity and expiry, the
suppressions and exemptions applied, the files' SHA-256 and how to check them with
\`dnc verify\`. Open it in a browser and print it to PDF. Phone numbers are left out unless
--include-numbers is given. The file is written with mode 0600.
The report is written whether or not the file is fit to dial; the exit status says which.

Examples:
  dnc report leads.results.csv
  dnc report leads.results.csv -o audit/2026-11.html --include-numbers`;

/** Rows listed at most with --include-numbers (the results file holds them all). */
export const REPORT_MAX_ROWS = 10_000;

export function registerReport(program: Command, host: CommandHost): void {
  const command = program
    .command('report')
    .description('write a self-contained HTML report of a scrub for an auditor (printable to PDF)')
    .argument('<results>', 'the output CSV of `dnc batch`')
    .option('-o, --output <file>', 'where to write it (default: RESULTS.report.html beside the results)')
    .option('--include-numbers', `list the phone numbers (at most ${formatInteger(REPORT_MAX_ROWS)} rows)`)
    .addOption(unanchoredOption())
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as { output?: string; includeNumbers?: boolean; unanchored?: boolean };
    const results = path.resolve(ctx.cwd, cmd.args[0]!);
    const { writeReport } = await import('../report/run.js');
    const report = await writeReport(
      {
        results,
        output: o.output,
        includeNumbers: o.includeNumbers === true,
        maxRows: REPORT_MAX_ROWS,
        unanchored: o.unanchored === true,
      },
      ctx.deps({
        onEvent: (e: { text: string }) => ctx.warn(e.text),
        // The renderer is the heavy part of a report: loaded when one is written.
        renderHtml: async (data: ReportData) => (await import('../render/report-html.js')).renderReportHtml(data),
      }),
    );
    const { output, fit } = report;
    const shown = terminalSafe(results);
    if (!report.outputMatchesManifest)
      ctx.warn(
        `dnc: warning: ${shown} changed after dnc wrote it (its SHA-256 differs from the manifest); the ` +
          `report says so`,
      );
    // The report is written either way (an auditor should see a file that is not fit); the exit status says which.
    if (!fit.fit) {
      ctx.warn(`dnc: ${shown} is not fit to dial: ${fit.why}; the report says so (\`dnc verify\` lists the rows)`);
      for (const line of fit.fitness.wayOut) ctx.warn(`  ${line}`);
    }
    if (fit.unchecked) ctx.warn(`dnc: ${fit.unchecked}`);
    if (ctx.json)
      writeLine(
        ctx.io.stdout,
        JSON.stringify({
          report: output,
          output_matches_manifest: report.outputMatchesManifest,
          fit_to_dial: fit.fit,
          fitness: fit.fitness.state,
          not_fit_because: fit.why,
          way_out: fit.fitness.wayOut,
          anchor_unchecked: fit.unchecked,
          calling_rules_version: report.callingRulesVersion,
          numbers_included: o.includeNumbers === true,
        }),
      );
    else ctx.info(`wrote ${terminalSafe(output)}`);
    return fit.fit ? ExitCode.OK : ExitCode.INPUT;
  });
}
