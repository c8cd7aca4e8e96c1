// What `dnc suppress` and `dnc exempt` show: a change made, an export, the tables (cli-table3 loaded when drawn).
import type { Context } from '../context.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import type { ListChange, ListExport } from '../lists/common.js';
import type { ListedExemption } from '../lists/exempt.js';
import { formatInteger } from '../text/numbers.js';
import type { Suppression } from '../stores/suppression-types.js';
import type { Terminal } from './table.js';

/** What a change did: one JSON object, or a line on stderr. */
export function changed(ctx: Context, r: ListChange, verb: string): number {
  if (ctx.json)
    writeLine(
      ctx.io.stdout,
      JSON.stringify({ list: r.list, path: r.path, changed: r.changed, unchanged: r.unchanged }),
    );
  else
    ctx.info(
      `${formatInteger(r.changed)} number(s) ` +
        `${verb}${r.unchanged ? `, ${formatInteger(r.unchanged)} already so` : ''} (list ${r.list}: ` +
        `${r.path})`,
    );
  return ExitCode.OK;
}

/** An export: its CSV on standard output, or the file it was written to named. */
export function exported(ctx: Context, r: ListExport): void {
  if (r.writtenTo === null) ctx.io.stdout.write(r.csv);
  else ctx.info(`wrote ${r.writtenTo}`);
}

const SUPPRESSION_HEADER = ['phone', 'country', 'added_at', 'who', 'reason', 'source'];

export async function suppressionTable(entries: readonly Suppression[], terminal: Terminal): Promise<string> {
  const { renderTable } = await import('./table.js');
  return renderTable(
    {
      head: SUPPRESSION_HEADER,
      rows: entries.map((x) => [x.e164, x.country, x.addedAt, x.who, x.reason, x.source]),
    },
    terminal,
  );
}

export async function exemptionTable(entries: readonly ListedExemption[], terminal: Terminal): Promise<string> {
  const { renderTable } = await import('./table.js');
  const state = (x: ListedExemption) =>
    x.suppressed ? 'overridden (on the internal list)' : x.valid ? 'valid' : 'EXPIRED';
  return renderTable(
    {
      head: ['phone', 'basis', 'until', 'state', 'evidence', 'who'],
      rows: entries.map((x) => [x.e164, x.basis, x.until, state(x), x.evidence, x.who]),
    },
    terminal,
  );
}
