// The user's own lists in a batch: applied to the journal before any lookup, rendered into dnc_exemption, recorded in
// the manifest.
import type { AppliedExemption, BatchJournal, FinalAnswer, NumberVerdict } from '../journal/journal.js';
import type { ScrubParties } from './settings.js';
import type { SuppressionList } from '../stores/interfaces.js';
import { exemptionHolds, exemptionLabel, type ListIdentity } from '../stores/suppression-types.js';
import {
  rowValidUntilMs,
  validityRules,
  ValidityBuilder,
  type ValidityRules,
  type ValiditySummary,
} from './validity.js';
import { formatInteger } from '../text/numbers.js';
import { parseServiceTime } from '../time.js';
import { complianceSettings, openList, openListForScrub } from './settings.js';

/** What a scrub records about compliance (journal meta, then the manifest and the report). */
export interface ScrubCompliance {
  /** The internal list as it was when the scrub ran; null when the user has none. */
  list: ListIdentity | null;
  applied_at: string;
  parties: ScrubParties;
  /** Distinct numbers of this batch on the internal list (never sent). */
  suppressed_numbers: number;
  /** Distinct numbers with an exemption that held at scrub time. */
  exempt_numbers: number;
  /** Distinct numbers whose exemption had expired (ignored). */
  expired_exemption_numbers: number;
  /** Suppressed numbers that also had an exemption (the internal list won). */
  overridden_exemption_numbers: number;
  validity: { window_days: Record<string, number>; default_window_days: number };
}

export interface ApplyResult {
  record: ScrubCompliance;
  /** Numbers newly marked do_not_call from the internal list. */
  newlySuppressed: number;
  /** Numbers answered from the internal list on an earlier run but taken off it since: queued for a lookup. */
  requeued: number;
}

/**
 * Applies the internal list and the exemptions to every number of the batch, before any lookup:
 * a suppressed number gets its final verdict now (do_not_call, `internal:<name>`, no request, no credit);
 * an exemption is stored beside the number and turns a register's do_not_call into callable when rendered.
 * A number that is pending (sent in webhook mode on an earlier run) is left to its push.
 */
export async function applyToJournal(
  journal: BatchJournal,
  store: SuppressionList | null,
  now: Date,
  parties: ScrubParties,
  rules: ValidityRules,
): Promise<ApplyResult> {
  // Walked from the list's side: a list is usually far smaller than a batch, and a batch without one costs one query.
  const source = store ? `internal:${store.name}` : null;
  const finals: Array<[number, FinalAnswer]> = [];
  const applied: AppliedExemption[] = [];
  const onList = new Set<string>();
  let suppressed = 0;
  let expired = 0;
  let overridden = 0;
  const snap = (await store?.snapshot()) ?? null;
  for (const s of snap?.suppressions ?? []) {
    const v = journal.verdict(s.e164);
    if (!v) continue;
    onList.add(s.e164);
    suppressed++;
    if (v.state === 'pending' || (v.state === 'done' && v.list_source === source)) continue;
    finals.push([
      v.id,
      {
        result: 'do_not_call',
        doNotCall: true,
        listSource: source,
        checkedAt: now.toISOString(),
        correlationId: null,
        errorCode: null,
        error: `on the internal do-not-call list since ${s.addedAt}; not sent`,
        credits: 0,
        httpStatus: null,
        answer: null,
      },
    ]);
  }
  for (const x of snap?.exemptions ?? []) {
    if (!journal.verdict(x.e164)) continue;
    if (onList.has(x.e164)) overridden++;
    else if (exemptionHolds(x, now))
      applied.push({ e164: x.e164, basis: x.basis, until: x.until, evidence: x.evidence });
    else expired++;
  }
  const requeue = journal
    .internalVerdicts()
    .filter((v) => !onList.has(v.e164))
    .map((v) => v.id);
  if (finals.length) journal.recordFinals(finals);
  if (requeue.length) journal.requeue(requeue);
  journal.setExemptions(applied);
  const record: ScrubCompliance = {
    list: snap?.identity ?? null,
    applied_at: now.toISOString(),
    parties,
    suppressed_numbers: suppressed,
    exempt_numbers: applied.length,
    expired_exemption_numbers: expired,
    overridden_exemption_numbers: overridden,
    validity: { window_days: rules.byCountry, default_window_days: rules.otherDays },
  };
  journal.setComplianceRecord(JSON.stringify(record));
  return { record, newlySuppressed: finals.length, requeued: requeue.length };
}

export function complianceRecordOf(journal: BatchJournal): ScrubCompliance | null {
  const text = journal.complianceRecord();
  return text ? (JSON.parse(text) as ScrubCompliance) : null;
}

/**
 * Whether the exemption recorded for a number held when its register verdict was made: a webhook verdict can
 * come (through dnc listen) after the exemption applied at scrub time has ended, and is then not exempted.
 */
function exemptionHeldAtVerdict(v: Pick<NumberVerdict, 'exemption_basis' | 'exemption_until' | 'checked_at'>): boolean {
  if (!v.exemption_basis || !v.exemption_until) return false;
  const at = parseServiceTime(v.checked_at);
  return Number.isFinite(at) && at <= Date.parse(v.exemption_until);
}

/**
 * The render hook: appends the dnc_exemption cell, and turns a register's do_not_call into callable when
 * an exemption held at scrub time and still held when the verdict was made. The internal list's verdicts
 * are never exempted (an opt-out revokes consent).
 */
export function withExemption(cells: string[], v: NumberVerdict | undefined): string[] {
  const label = v ? exemptionCellOf(v) : '';
  if (label !== '') cells[2] = 'callable';
  cells.push(label);
  return cells;
}

/** The dnc_exemption cell of a number's verdict: its label when it turns the verdict callable (verify compares it). */
export function exemptionCellOf(v: NumberVerdict): string {
  return v.state === 'done' && effectiveResult(v) !== v.result
    ? exemptionLabel({ basis: v.exemption_basis as never, until: v.exemption_until! })
    : '';
}

/**
 * The render hook after withExemption: appends the dnc_valid_until cell (ISO 8601, UTC), the last instant the
 * row's register verdict may be relied on under the scrub's windows; empty for a row without one.
 */
export function withValidUntil(cells: string[], rules: ValidityRules): string[] {
  cells.push(validUntilCell(rules, cells));
  return cells;
}

/** What a row's dnc_valid_until holds, from its other dnc_* cells (render writes it, verify checks it). */
export function validUntilCell(rules: ValidityRules, cells: readonly string[]): string {
  const until = rowValidUntilMs(
    rules,
    cells[1] ?? '',
    cells[2] ?? '',
    cells[4] ?? '',
    cells[5] ?? '',
    exemptionUntilOf(cells[10]),
  );
  return Number.isFinite(until) ? new Date(until).toISOString() : '';
}

/** The end of the exemption named in a dnc_exemption cell ("consent until 2027-01-31T23:59:59.999Z"), or null. */
export function exemptionUntilOf(cell: string | undefined): string | null {
  const m = / until (\S+)$/.exec(cell ?? '');
  return m ? m[1]! : null;
}

/** What the verify and render sides take the journal's verdict to be once the exemption is applied. */
export function effectiveResult(
  v: Pick<NumberVerdict, 'result' | 'list_source' | 'exemption_basis' | 'exemption_until' | 'checked_at'>,
): string | null {
  return v.result === 'do_not_call' && exemptionHeldAtVerdict(v) && !v.list_source?.startsWith('internal:')
    ? 'callable'
    : v.result;
}

/** The validity rules a scrub used (its record), else today's built-in ones. */
export function rulesOf(record: ScrubCompliance | null | undefined): ValidityRules {
  if (!record) return validityRules(undefined);
  return { byCountry: { ...record.validity.window_days }, otherDays: record.validity.default_window_days };
}

/**
 * Manifest fields: the compliance record as the scrub made it, and each country's valid-until (computed while the
 * output is walked).
 */
export function manifestCompliance(record: ScrubCompliance | null | undefined) {
  const builder = new ValidityBuilder(rulesOf(record));
  // Positions within the dnc_* cells (manifest.ts's C): country 1, result 2, checked_at 5, exemption 10.
  return {
    onRow: (_index: number, _fields: string[], cells: string[]) =>
      builder.add(cells[1] ?? '', cells[2] ?? '', cells[5] ?? '', exemptionUntilOf(cells[10])),
    fields: (): { compliance: ScrubCompliance | null; validity: ValiditySummary } => ({
      compliance: record ?? null,
      validity: builder.done(),
    }),
  };
}

/**
 * What the scrub recorded in a batch's journal does to each rendered row (src/results asks it through this, given by
 * the use case that renders): the exemption applied and dnc_valid_until appended, the rows counted for the manifest.
 */
export interface ScrubRows {
  /** The validity windows the scrub recorded (each row's dnc_valid_until, the dialler list's ages). */
  readonly rules: ValidityRules;
  /** A row's register cells with its exemption (dnc_exemption) and dnc_valid_until appended. */
  complete(cells: string[], verdict: NumberVerdict | undefined): string[];
  /** Counts a rendered row's dnc_* cells. */
  count(cells: string[]): void;
  /** The manifest's compliance fields, once every row is counted. */
  manifestFields(): { compliance: ScrubCompliance | null; validity: ValiditySummary };
}

/** The ScrubRows of a batch, from the compliance record in its journal. */
export function scrubRowsOf(journal: Pick<BatchJournal, 'complianceRecord'>): ScrubRows {
  const text = journal.complianceRecord();
  const record = text ? (JSON.parse(text) as ScrubCompliance) : null;
  const rules = rulesOf(record);
  const manifest = manifestCompliance(record);
  return {
    rules,
    complete: (cells, verdict) => withValidUntil(withExemption(cells, verdict), rules),
    count: (cells) => manifest.onRow(0, [], cells),
    manifestFields: () => manifest.fields(),
  };
}

/** `dnc batch`'s one call, before any lookup: applies the user's lists to the journal and says what they did. */
export async function applyListsBeforeLookups(
  ctx: import('./settings.js').ComplianceContext & { info(line: string): void; warn(line: string): void; now(): Date },
  journal: BatchJournal,
  flags: import('./settings.js').ComplianceFlags,
): Promise<ScrubCompliance> {
  const settings = await complianceSettings(ctx, flags);
  const store = await openListForScrub(ctx, settings);
  try {
    const before = complianceRecordOf(journal)?.list ?? null;
    if (before && before.id !== (store?.id ?? null)) {
      ctx.warn(
        `dnc: warning: this batch was scrubbed against the internal list ${before.name} (${before.path}) ` +
          `before, and now ${store ? `against ${store.name} (${store.path})` : 'against none'}: ` +
          'numbers only the earlier list suppressed are looked up now (give --suppression-list to use the same list)',
      );
    }
    const r = await applyToJournal(journal, store, ctx.now(), settings.parties, settings.validity);
    const c = r.record;
    if (c.suppressed_numbers)
      ctx.info(
        `${formatInteger(c.suppressed_numbers)} number(s) on the internal do-not-call list (${c.list!.name}): ` +
          `do_not_call, not sent`,
      );
    if (r.requeued)
      ctx.info(
        `${formatInteger(r.requeued)} number(s) taken off the internal list since the last run: they are looked up now`,
      );
    if (c.exempt_numbers)
      ctx.info(
        `${formatInteger(c.exempt_numbers)} number(s) with a valid exemption: looked up, then callable if on a ` +
          `register (dnc_exemption)`,
      );
    if (c.expired_exemption_numbers)
      ctx.warn(
        `dnc: ${formatInteger(c.expired_exemption_numbers)} number(s) have an exemption that has expired: ` +
          `ignored (\`dnc exempt list\` shows them)`,
      );
    if (c.overridden_exemption_numbers)
      ctx.info(
        `${formatInteger(c.overridden_exemption_numbers)} exempt number(s) are also on the internal list: the ` +
          `internal list wins`,
      );
    return c;
  } finally {
    await store?.close();
  }
}

/**
 * `dnc batch`'s one call once its lookups are over, before its outputs are written: numbers put on the internal list
 * while the lookups ran, whose lookup had answered callable (or do_not_call turned callable by an exemption: an
 * opt-out revokes consent), are made do_not_call from the list; the lookup's answer, correlation id and credits are
 * kept (it was paid for). One read of the list, whatever the batch's size; nothing when its head has not moved since
 * the lists were applied. The compliance record then names the list as read now. Returns how many numbers changed.
 */
export async function applyLateOptOuts(
  ctx: import('./settings.js').ComplianceContext & { info(line: string): void },
  journal: BatchJournal,
  flags: import('./settings.js').ComplianceFlags,
): Promise<number> {
  const record = complianceRecordOf(journal);
  if (!record) return 0; // (a list made while the lookups ran counts: record.list is null then)
  const store = await openList(ctx, await complianceSettings(ctx, flags), false);
  if (!store) return 0;
  try {
    const snap = await store.snapshot();
    if (snap.identity.audit_head === (record.list?.audit_head ?? null)) return 0;
    // (Not verified again: a list altered since could only add do_not_call rows here, never a callable one.)
    const late = new Map<number, string>();
    for (const s of snap.suppressions) {
      const v = journal.verdict(s.e164);
      if (v?.state !== 'done' || v.list_source?.startsWith('internal:') || effectiveResult(v) !== 'callable') continue;
      const said = v.result === 'callable' ? 'said callable' : 'was made callable by an exemption';
      late.set(
        v.id,
        `put on the internal do-not-call list at ${s.addedAt} (by ${s.who}), while this batch ran, after its ` +
          `lookup ${said}`,
      );
    }
    if (late.size === 0) return 0;
    const source = `internal:${store.name}`;
    journal.markOnInternalList([...late.keys()], source, (id) => late.get(id)!);
    journal.setComplianceRecord(
      JSON.stringify({ ...record, list: snap.identity, suppressed_numbers: record.suppressed_numbers + late.size }),
    );
    ctx.info(
      `${formatInteger(late.size)} number(s) put on the internal do-not-call list (${store.name}) while the lookups ` +
        'ran: written do_not_call, whatever their lookup said',
    );
    return late.size;
  } finally {
    await store.close();
  }
}

export type ListCheck =
  | { state: 'verified'; entry: number; entries: number }
  | { state: 'missing' | 'other_list' | 'broken' | 'head_not_found'; detail: string };

/**
 * Whether the list a scrub recorded is still there and its history still holds the state the scrub
 * used: the same list id, an intact hash chain, and the recorded head among its entries.
 */
export async function checkRecordedList(store: SuppressionList | null, list: ListIdentity): Promise<ListCheck> {
  if (!store) return { state: 'missing', detail: `${list.path} is not there any more` };
  if (store.id !== list.id) return { state: 'other_list', detail: `${list.path} is now another list (id ${store.id})` };
  const broken = await store.brokenAuditEntry();
  if (broken !== null) return { state: 'broken', detail: `audit entry ${broken} was altered outside dnc` };
  const mismatch = await store.stateMismatch();
  if (mismatch !== null) return { state: 'broken', detail: `its entries were altered outside dnc: ${mismatch}` };
  const entries = (await store.counts()).audit;
  if (list.audit_head === null) return { state: 'verified', entry: 0, entries };
  const entry = await store.auditEntryWithHash(list.audit_head);
  if (entry === null)
    return { state: 'head_not_found', detail: 'the audit entry recorded at scrub time is not in the log' };
  return { state: 'verified', entry, entries };
}
