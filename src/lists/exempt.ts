// `dnc exempt`'s use cases: exemptions added, withdrawn, imported, exported and listed; they never print.
import path from 'node:path';
import { parseCountryOption } from '../config.js';
import { usageError } from '../errors.js';
import { csvText, numbersFromArgs, parseBasis, parseUntil, readImportFile } from '../compliance/list-files.js';
import { exemptionHolds, type Exemption } from '../stores/suppression-types.js';
import {
  changeList,
  changeNumbers,
  exportTo,
  readList,
  type ListChange,
  type ListContext,
  type NumberFlags,
} from './common.js';

/** What an exemption command tells as it goes, before its result. */
export type ExemptEvent =
  /** The number is on the internal list, which wins over any exemption: recorded, but it changes nothing now. */
  | { type: 'on-internal-list'; e164: string }
  /** Imported exemptions that have already expired: recorded, never applied. */
  | { type: 'expired-imported'; count: number };

export type ExemptFlags = NumberFlags;

export async function addExemption(
  ctx: ListContext,
  o: ExemptFlags & { basis: string; until: string; evidence?: string | undefined },
  args: readonly string[],
  onEvent: (e: ExemptEvent) => void,
): Promise<ListChange> {
  const basis = parseBasis(o.basis);
  const until = parseUntil(o.until);
  if (Date.parse(until) < ctx.now().getTime())
    throw usageError('E_USAGE', `--until ${o.until} is in the past: the exemption would never hold`, {
      hint: 'give the date the consent or relationship ends',
    });
  const [n] = await numbersFromArgs(args, await parseCountryOption(o.country));
  return changeList(ctx, o, async (store, actor) => {
    // Recorded all the same (consent may be given again later), but the user should know it changes nothing now.
    if (await store.suppression(n!.e164)) onEvent({ type: 'on-internal-list', e164: n!.e164 });
    return store.exempt([{ ...n!, basis, until, evidence: o.evidence ?? null }], actor, ctx.now());
  });
}

export async function removeExemptions(ctx: ListContext, o: ExemptFlags, args: readonly string[]) {
  return changeNumbers(ctx, o, args, (store, numbers, actor) =>
    store.unexempt(
      numbers.map((x) => x.e164),
      actor,
      ctx.now(),
    ),
  );
}

/** Exemptions from a CSV file (phone, basis, until[, evidence]): every row checked before any is recorded. */
export async function importExemptions(
  ctx: ListContext,
  o: ExemptFlags & { column?: string | undefined },
  file: string,
  onEvent: (e: ExemptEvent) => void,
): Promise<ListChange> {
  const resolved = path.resolve(ctx.cwd, file);
  const rows = await readImportFile(resolved, {
    column: o.column,
    country: await parseCountryOption(o.country),
    required: ['basis', 'until'],
    check: (cells, where) => {
      parseBasis(cells.basis ?? '', `${where}basis `);
      parseUntil(cells.until ?? '', `${where}until `);
    },
  });
  const items = rows.map((r) => ({
    ...r.number,
    basis: parseBasis(r.cells.basis!),
    until: parseUntil(r.cells.until!),
    evidence: r.cells.evidence || null,
  }));
  const expired = items.filter((x) => Date.parse(x.until) < ctx.now().getTime()).length;
  if (expired) onEvent({ type: 'expired-imported', count: expired });
  return changeList(ctx, { ...o, source: o.source ?? `import ${path.basename(resolved)}` }, (store, actor) =>
    store.exempt(items, actor, ctx.now()),
  );
}

const HEADER = ['phone', 'country', 'basis', 'until', 'evidence', 'added_at', 'who'];

/** The exemptions as CSV, written to a private file when `output` names one. */
export async function exportExemptions(
  ctx: ListContext,
  o: { suppressionList?: string | undefined; output?: string | undefined },
) {
  const rows = await readList(ctx, o, async (s) =>
    (await s.exemptions()).map((x) => [x.e164, x.country, x.basis, x.until, x.evidence, x.addedAt, x.who]),
  );
  return exportTo(ctx.cwd, o.output, await csvText(HEADER, rows));
}

/** An exemption as listed: whether it holds now, and whether the internal list overrides it. */
export interface ListedExemption extends Exemption {
  valid: boolean;
  suppressed: boolean;
}

export async function listExemptions(
  ctx: ListContext,
  o: { suppressionList?: string | undefined },
): Promise<ListedExemption[]> {
  const now = ctx.now();
  return readList(ctx, o, async (s) => {
    const onList = new Set((await s.suppressions()).map((x) => x.e164));
    return (await s.exemptions()).map((x) => ({
      ...x,
      valid: exemptionHolds(x, now),
      suppressed: onList.has(x.e164),
    }));
  });
}
