// What the `suppress` and `exempt` use cases share: the list opened for a change or a read, and a private CSV file.
import path from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import {
  anchorListHead,
  checkListAnchor,
  complianceSettings,
  listAlteredError,
  openListForChange,
  openListToRead,
  type ComplianceContext,
} from '../compliance/settings.js';
import { parseCountryOption } from '../config.js';
import { numbersFromArgs, type ParsedNumber } from '../compliance/list-files.js';
import type { SuppressionList } from '../stores/interfaces.js';
import type { Actor, ChangeResult } from '../stores/suppression-types.js';

/** What the list's use cases need of a command's context: where the list is, the stores, the clock. */
export type ListContext = ComplianceContext & { now(): Date };

/** The flags that name the list and say why a change is made (kept in the audit log). */
export interface ChangeFlags {
  suppressionList?: string | undefined;
  reason?: string | undefined;
  source?: string | undefined;
}

/** The flags of a change given numbers, which may be in national format (--country). */
export interface NumberFlags extends ChangeFlags {
  country?: string | undefined;
}

/** What a change did, and to which list. */
export interface ListChange {
  list: string;
  path: string;
  changed: number;
  unchanged: number;
}

/** Opens the list for a change (creating it), applies it as user@host, anchors the new head, says what changed. */
export async function changeList(
  ctx: ListContext,
  o: ChangeFlags,
  apply: (store: SuppressionList, actor: Actor) => Promise<ChangeResult>,
): Promise<ListChange> {
  const { store, operator } = await openListForChange(ctx, o);
  try {
    const r = await apply(store, { who: operator, reason: o.reason ?? null, source: o.source ?? null });
    // The new head, anchored in the state folder: a later cut of these entries is found by every command.
    await anchorListHead(ctx, store);
    return { list: store.name, path: store.path, changed: r.changed, unchanged: r.unchanged };
  } finally {
    await store.close();
  }
}

/** The numbers given as arguments (all refused when any is bad), then a change made to them. */
export async function changeNumbers(
  ctx: ListContext,
  o: NumberFlags,
  args: readonly string[],
  apply: (store: SuppressionList, numbers: ParsedNumber[], actor: Actor) => Promise<ChangeResult>,
): Promise<ListChange> {
  const numbers = await numbersFromArgs(args, await parseCountryOption(o.country));
  return changeList(ctx, o, (store, actor) => apply(store, numbers, actor));
}

/**
 * Reads the list (an empty one when it was never written: nothing is created by reading). A list altered outside
 * dnc is refused (E_LIST_ALTERED): its entries would be shown or exported as if the audit log vouched for them;
 * `log` reads it all the same (`checked: false`), since it is where the alteration is reported.
 */
export async function readList<T>(
  ctx: ComplianceContext,
  o: { suppressionList?: string | undefined },
  read: (store: SuppressionList) => Promise<T>,
  options: { checked?: boolean } = {},
): Promise<T> {
  const s = await complianceSettings(ctx, o);
  const { list: store, opened } = await openListToRead(ctx, s);
  try {
    const problem = options.checked === false ? null : await store.integrityProblem();
    if (problem) throw listAlteredError(s.listPath, problem, 'its entries are not shown or exported');
    if (options.checked !== false)
      await checkListAnchor(ctx, opened, s.listPath, 'its entries are not shown or exported');
    return await read(store);
  } finally {
    await store.close();
  }
}

/** An export: its CSV text, and the file it was written to (null: the command writes it to standard output). */
export interface ListExport {
  csv: string;
  writtenTo: string | null;
}

/** Writes an export to a private file (atomically) when `output` names one. */
export async function exportTo(cwd: string, output: string | undefined, csv: string): Promise<ListExport> {
  if (!output) return { csv, writtenTo: null };
  const target = path.resolve(cwd, output);
  await writeFileAtomic(target, csv, 0o600, { what: 'the export' });
  return { csv, writtenTo: target };
}
