// `dnc suppress`'s use cases: the internal do-not-call list changed, read, counted, restored and its audit log read.
// They never print.
import path from 'node:path';
import { parseCountryOption } from '../config.js';
import { csvText, numberFrom, readImportFile, type ParsedNumber } from '../compliance/list-files.js';
import { checkListAnchor, complianceSettings, openList } from '../compliance/settings.js';
import type { AuditEntry, Suppression } from '../stores/suppression-types.js';
import { changeList, changeNumbers, exportTo, readList, type ListContext, type NumberFlags } from './common.js';

export { restoreList } from '../compliance/list-restore.js';

export type SuppressFlags = NumberFlags;

type ListFlag = { suppressionList?: string | undefined };

export async function addSuppressions(ctx: ListContext, o: SuppressFlags, args: readonly string[]) {
  return changeNumbers(ctx, o, args, (store, numbers, actor) => store.suppress(numbers, actor, ctx.now()));
}

export async function removeSuppressions(ctx: ListContext, o: SuppressFlags, args: readonly string[]) {
  const e164 = (numbers: readonly ParsedNumber[]) => numbers.map((n) => n.e164);
  return changeNumbers(ctx, o, args, (store, numbers, actor) => store.unsuppress(e164(numbers), actor, ctx.now()));
}

/** Every number of a CSV file (or workbook) put on the list: every row checked before any is added. */
export async function importSuppressions(
  ctx: ListContext,
  o: SuppressFlags & { column?: string | undefined },
  file: string,
) {
  const resolved = path.resolve(ctx.cwd, file);
  const rows = await readImportFile(resolved, { column: o.column, country: await parseCountryOption(o.country) });
  return changeList(ctx, { ...o, source: o.source ?? `import ${path.basename(resolved)}` }, (store, actor) =>
    store.suppress(
      rows.map((r) => r.number),
      actor,
      ctx.now(),
    ),
  );
}

const HEADER = ['phone', 'country', 'added_at', 'who', 'reason', 'source'];

/** The list as CSV, written to a private file when `output` names one. */
export async function exportSuppressions(ctx: ListContext, o: ListFlag & { output?: string | undefined }) {
  const rows = await readList(ctx, o, async (s) =>
    (await s.suppressions()).map((x) => [x.e164, x.country, x.addedAt, x.who, x.reason, x.source]),
  );
  return exportTo(ctx.cwd, o.output, await csvText(HEADER, rows));
}

export async function listSuppressions(ctx: ListContext, o: ListFlag): Promise<Suppression[]> {
  return readList(ctx, o, (s) => s.suppressions());
}

export interface ListCounts {
  name: string;
  path: string;
  suppressions: number;
  exemptions: number;
  audit: number;
}

export async function countList(ctx: ListContext, o: ListFlag): Promise<ListCounts> {
  return readList(ctx, o, async (s) => ({ ...(await s.counts()), name: s.name, path: s.path }));
}

/** The audit log, and what is wrong with it: an entry off the hash chain, entries that disagree, entries cut. */
export interface AuditLog {
  entries: AuditEntry[];
  /** The log as CSV, when asked for. */
  csv: string | null;
  /** The first entry that does not match the hash chain. */
  broken: number | null;
  /** How the list's entries differ from what the log says they are. */
  mismatch: string | null;
  /** Why the log is not the one this machine (or the team store) last saw whole. */
  cut: string | null;
}

const LOG_HEADER = ['id', 'at', 'action', 'phone', 'who', 'reason', 'source', 'basis', 'until', 'evidence'];

export async function auditLog(
  ctx: ListContext,
  o: ListFlag & { country?: string | undefined },
  number: string | undefined,
  format: 'csv' | 'json',
): Promise<AuditLog> {
  const only = number ? (await numberFrom(number, '', await parseCountryOption(o.country))).e164 : undefined;
  const r = await readList(
    ctx,
    o,
    async (s) => ({
      entries: await s.audit(only),
      broken: await s.brokenAuditEntry(),
      mismatch: await s.stateMismatch(),
    }),
    { checked: false },
  );
  // A log whose last entries were cut still chains: only the anchor in the state folder shows it.
  const settings = await complianceSettings(ctx, o);
  const cut = await openList(ctx, settings, false).then(async (store) => {
    try {
      // A team list's head is anchored in the store too: its log must still hold it.
      const inStore = store?.shared ? await store.integrityProblem([]) : null;
      if (inStore) return inStore;
      await checkListAnchor(ctx, store, settings.listPath);
      return null;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await store?.close();
    }
  });
  const csv =
    format === 'json'
      ? null
      : await csvText(
          LOG_HEADER,
          r.entries.map((e) => [
            String(e.id),
            e.at,
            e.action,
            e.e164,
            e.who,
            e.reason,
            e.source,
            e.basis,
            e.until,
            e.evidence,
          ]),
        );
  return { ...r, csv, cut };
}
