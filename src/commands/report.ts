// `dnc report`: a self-contained HTML report of one scrub for an auditor (printable to PDF), from its results file and
// manifest.
import path from 'node:path';
import type { Command } from 'commander';
import { ExitCode, inputError, usageError } from '../errors.js';
import type { CommandHost } from './host.js';
import { writeLine } from '../io.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
Writes one HTML file with everything inline (styles and SVG charts; no script, nothing
loaded from the network): what was scrubbed, when, by whom and for whom, the registers and
internal lists used, counts by result and country, credits, validity and expiry, the
suppressions and exemptions applied, the files' SHA-256 and how to check them with
\`dnc verify\`. Open it in a browser and print it to PDF. Phone numbers are left out unless
--include-numbers is given. The file is written with mode 0600.

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
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as { output?: string; includeNumbers?: boolean };
    const results = path.resolve(ctx.cwd, cmd.args[0]!);
    const { existsSync } = await import('node:fs');
    const { manifestPathFor, readManifest, sideFilePath, walkOutput } = await import('../evidence/manifest.js');
    const { C } = await import('../results/columns.js');
    if (!existsSync(results))
      throw inputError('E_INPUT_MISSING', `${results} does not exist`, {
        hint: 'give the output of `dnc batch` (INPUT.results.csv by default)',
      });
    const manifestPath = manifestPathFor(results);
    const manifest = await readManifest(manifestPath);
    if (!manifest) {
      throw inputError(
        'E_NO_MANIFEST',
        `${results} has no manifest (${manifestPath} is missing): there is nothing to report on`,
        {
          hint: 'rerun `dnc batch` on its input with -o pointing to this file to write the manifest',
        },
      );
    }
    // Named as the manifest is: calls.results.xlsx.report.html when calls.results.csv's report takes the short name.
    const output = path.resolve(ctx.cwd, o.output ?? sideFilePath(results, '.report.html'));
    for (const taken of [results, manifestPath, manifest.input.path, manifest.journal]) {
      if (path.resolve(taken) === output)
        throw usageError('E_USAGE', `-o ${output} would overwrite ${taken}`, {
          hint: 'write the report to another file',
        });
    }
    const { dataRecordLines } = await import('../tables/input.js');
    const { outputLayout } = await import('../evidence/manifest.js');
    const internalRows: Record<string, number> = {};
    const exemptRows: Record<string, number> = {};
    const rows: Array<{
      index: number;
      number: string;
      country: string;
      result: string;
      source: string;
      checkedAt: string;
      exemption: string;
    }> = [];
    let omitted = 0;
    const walk = await walkOutput(results, manifest.format, (index, _fields, cells) => {
      const source = cells[C.source] ?? '';
      if (source.startsWith('internal:') && cells[C.result] === 'do_not_call')
        internalRows[source] = (internalRows[source] ?? 0) + 1;
      const exemption = cells[C.exemption] ?? '';
      if (exemption) {
        const basis = exemption.split(' ')[0]!;
        exemptRows[basis] = (exemptRows[basis] ?? 0) + 1;
      }
      if (!o.includeNumbers) return;
      if (rows.length >= REPORT_MAX_ROWS) {
        omitted++;
        return;
      }
      rows.push({
        index,
        number: cells[C.e164] ?? '',
        country: cells[C.country] ?? '',
        result: cells[C.result] ?? '',
        source,
        checkedAt: cells[C.checkedAt] ?? '',
        exemption,
      });
    });
    // The list the scrub used: still there, same id, intact history holding the state recorded then?
    const recorded = manifest.compliance?.list ?? null;
    const { openRecordedList } = await import('../compliance/settings.js');
    const { checkRecordedList } = await import('../compliance/batch-compliance.js');
    let store: import('../stores/interfaces.js').SuppressionList | null = null;
    let listCheck: import('../compliance/batch-compliance.js').ListCheck | null = null;
    if (recorded) {
      try {
        // A team's list is read from the team store it was recorded in (this machine's, when it is the same).
        store = await openRecordedList(ctx, recorded.path);
        listCheck = await checkRecordedList(store, recorded);
      } catch (err) {
        listCheck = { state: 'missing', detail: (err as Error).message };
      }
    }
    // Why each suppressed or exempt row was so: the audit entries that stood for its number when the
    // scrub ran (through the head it recorded), quoted only from a list whose history checked out.
    const appliedAt = Date.parse(manifest.compliance?.applied_at ?? '');
    const standing =
      o.includeNumbers && store && listCheck?.state === 'verified'
        ? await store.standingAt(new Set(rows.map((r) => r.number).filter(Boolean)), listCheck.entry)
        : null;
    const stamp = (iso: string) => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
    const untilText = (until: string | null) =>
      until?.endsWith('T23:59:59.999Z') ? until.slice(0, 10) : stamp(until ?? '');
    const entryText = (verb: string, e: import('../stores/suppression-types.js').AuditEntry) =>
      `${verb} ${stamp(e.at)} by ${e.who}${e.reason ? `: ${e.reason}` : ''}${e.source ? ` (${e.source})` : ''}` +
      `${e.evidence ? ` [evidence: ${e.evidence}]` : ''}`;
    const heldAtScrub = (e: { until: string | null }) => Date.parse(e.until ?? '') >= appliedAt;
    const why = (r: { number: string; result: string; source: string; exemption: string }): string => {
      const st = standing?.get(r.number);
      if (!st) return '';
      if (r.source.startsWith('internal:')) {
        if (!st.suppression) return '';
        const x = st.exemption;
        const overridden =
          x && heldAtScrub(x)
            ? `; its exemption (${x.basis} until ${untilText(x.until)}) is overridden: an opt-out revokes consent`
            : '';
        return entryText('added', st.suppression) + overridden;
      }
      if (r.exemption) return st.exemption ? entryText('exempted', st.exemption) : '';
      // A register verdict that an exemption would have turned, had it not ended: reported, not applied.
      const x = st.exemption;
      if (r.result === 'do_not_call' && x && !heldAtScrub(x))
        return `exemption ${x.basis} until ${untilText(x.until)} had expired: ignored (${entryText('exempted', x)})`;
      return '';
    };
    const lines = o.includeNumbers
      ? await dataRecordLines(
          outputLayout(results, manifest.format),
          rows.map((r) => r.index),
        )
      : new Map<number, { line: number }>();
    // The badge says what `dnc verify` says: one judgement of "fit to dial" for verify, status and the report.
    const { fitToDial, notFitBecause } = await import('../evidence/fit-to-dial.js');
    const { DncError } = await import('../errors.js');
    const fit = await fitToDial(ctx, results, {
      maxAgeMs: null,
      asOf: ctx.now(),
      listLimit: 0,
      warn: (line) => ctx.warn(line),
    }).then(
      (r) => ({ fit: r.fit, why: notFitBecause(r) }),
      (err: unknown) => {
        if (err instanceof DncError && (err.code === 'E_LIST_ALTERED' || err.code === 'E_LIST_BUSY'))
          return { fit: false, why: err.message };
        throw err;
      },
    );
    const { hashFile } = await import('../file-hash.js');
    const { renderReportHtml } = await import('../evidence/report-html.js');
    const html = renderReportHtml({
      manifest,
      manifestPath,
      manifestSha256: await hashFile(manifestPath),
      outputMatches: walk.sha256 === manifest.output.sha256,
      generatedAt: ctx.now(),
      internalRows,
      exemptRows,
      rows: o.includeNumbers
        ? rows.map(({ index, ...r }) => ({ line: lines.get(index)?.line ?? 0, ...r, why: why(r) }))
        : null,
      rowsOmitted: omitted,
      listCheck,
      fit,
    });
    await store?.close();
    const { writeFile, rename, rm } = await import('node:fs/promises');
    const { tempPathFor } = await import('../atomic-file.js');
    const tmp = tempPathFor(output);
    try {
      await writeFile(tmp, html, { flag: 'wx', mode: 0o600 });
      await rename(tmp, output);
    } catch (err) {
      await rm(tmp, { force: true });
      throw inputError(
        'E_OUTPUT_UNWRITABLE',
        `cannot write ${output}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { hint: 'check that the folder exists and is writable', cause: err },
      );
    }
    if (walk.sha256 !== manifest.output.sha256)
      ctx.warn(
        `dnc: warning: ${results} changed after dnc wrote it (its SHA-256 differs from the manifest); the ` +
          `report says so`,
      );
    if (!fit.fit)
      ctx.warn(
        `dnc: warning: ${results} is not fit to dial (${fit.why}); the report says so (\`dnc verify\` lists the rows)`,
      );
    if (ctx.json)
      writeLine(
        ctx.io.stdout,
        JSON.stringify({
          report: output,
          output_matches_manifest: walk.sha256 === manifest.output.sha256,
          fit_to_dial: fit.fit,
          calling_rules_version: manifest.calling_rules_version ?? null,
          numbers_included: o.includeNumbers === true,
        }),
      );
    else ctx.info(`wrote ${output}`);
    return ExitCode.OK;
  });
}
