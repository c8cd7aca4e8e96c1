// `dnc trace`'s core: finds one lookup by correlation id, or every lookup of one number, in the check history and in
// batch journals.
import { existsSync } from 'node:fs';
import type { LookupQuery } from '../journal/views.js';
import type { History } from '../stores/interfaces.js';
import { journalLookup } from '../journal/views.js';
import { rowsHolding, type TracedRows } from './rows.js';

export type { LookupQuery } from '../journal/views.js';

export interface TracedPush {
  receivedAt: string;
  /** applied, duplicate, orphan, conflict (a second, different verdict) or refused (as the journal recorded it). */
  outcome: string;
  /** Why it was refused. */
  reason: string | null;
  /** The address it came from (the proxy's, behind one). */
  peer: string | null;
  /** Further deliveries of the same push, counted and ignored. */
  duplicates: number;
  body: unknown;
}

export interface TracedLookup {
  /** Where it was found: a single check, or a batch journal. */
  source: 'check' | 'batch';
  where: string;
  /** The lookup's correlation id; '' for a batch's number that was never sent (invalid, not checked). */
  correlationId: string;
  phoneNumber: string;
  country: string | null;
  service: string | null;
  /** When dnc sent the request (null for lookups of journals made before dnc recorded it, and for reused verdicts). */
  requestedAt: string | null;
  /**
   * When a batch took this verdict from the results cache (--reuse-within) instead of sending a lookup; null otherwise.
   */
  reusedAt?: string | null;
  /** For a verdict reused from a colleague, the row's note: whose lookup it was (its machine and role), and how. */
  reusedNote?: string | null;
  answeredAt: string | null;
  mode: 'sync' | 'webhook';
  /** The final result (callable, do_not_call, failed …), pending, or started (a check in webhook mode). */
  result: string;
  errorCode: string | null;
  checkedAt: string | null;
  listSource: string | null;
  httpStatus: number | null;
  credits: number;
  /** The service's last answer as received (receipt, synchronous answer or push). */
  answer: unknown;
  pushes: TracedPush[];
  batch: { input: string; output: string } | null;
  /** A batch's rows (of its results, which keep the input's) and phone columns that held the number; null: unread. */
  rows?: TracedRows | null;
}

const parse = (text: string | null): unknown => {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

async function fromHistory(history: History, query: LookupQuery, historyFile: string): Promise<TracedLookup[]> {
  const records = 'e164' in query ? await history.findNumber(query.e164) : await history.find(query.correlationId);
  return records.map((r) => {
    const body = parse(r.body) as {
      do_not_call?: boolean;
      error_code?: string | null;
      timestamp?: string;
      dnc_list_source?: string;
    } | null;
    const result = r.kind === 'succeeded' ? (body?.do_not_call ? 'do_not_call' : 'callable') : r.kind;
    return {
      source: 'check',
      where: historyFile,
      correlationId: r.correlationId,
      phoneNumber: r.phoneNumber,
      country: r.country,
      service: r.service,
      requestedAt: r.requestedAt,
      answeredAt: r.answeredAt,
      mode: r.kind === 'started' ? 'webhook' : 'sync',
      result,
      errorCode: body?.error_code ?? null,
      checkedAt: body?.timestamp ?? null,
      listSource: body?.dnc_list_source ?? null,
      httpStatus: r.httpStatus,
      credits: r.credits,
      answer: body,
      pushes: [],
      batch: null,
    };
  });
}

/** Looks the id up in one journal (read only; numbers and the pushes table, through the journal module). */
export async function traceInJournal(journalPath: string, query: LookupQuery): Promise<TracedLookup[]> {
  if (!existsSync(journalPath)) return [];
  let read;
  try {
    read = await journalLookup(journalPath, query);
  } catch {
    // Not a batch journal (or a damaged one): nothing to find there.
    return [];
  }
  {
    const numbers = read.numbers;
    const pushesOf = (id: string | null) =>
      read.pushes
        .filter((p) => p.correlation_id === id)
        .map((p) => ({
          receivedAt: p.received_at,
          outcome: p.outcome,
          duplicates: p.duplicates,
          reason: p.reason,
          peer: p.peer,
          body: parse(p.body),
        }));
    const meta = read.meta
      ? (parse(read.meta) as {
          inputPath?: string;
          outputPath?: string;
          serviceOrigin?: string | null;
          layout?: { phoneLabel?: string; phoneLabels?: string[] };
        })
      : null;
    const phoneLabels = meta?.layout?.phoneLabels ?? [meta?.layout?.phoneLabel ?? 'phone'];
    const rowsOf = (e164: string) =>
      meta?.outputPath ? rowsHolding({ outputPath: meta.outputPath, phoneLabels }, e164) : Promise.resolve(null);
    const batch = meta ? { input: meta.inputPath ?? '', output: meta.outputPath ?? '' } : null;
    const found: TracedLookup[] = numbers.map((n) => ({
      source: 'batch',
      where: journalPath,
      correlationId: n.correlation_id ?? '',
      phoneNumber: n.e164,
      country: n.country,
      service: meta?.serviceOrigin ?? null,
      requestedAt: n.requested_at,
      reusedAt: n.reused_at,
      reusedNote: n.reused_at && teamNote(n.error) ? n.error : null,
      answeredAt: n.updated_at,
      mode: n.state === 'pending' || pushesOf(n.correlation_id).length > 0 ? 'webhook' : 'sync',
      result: n.state === 'done' ? (n.result ?? 'failed') : n.state,
      errorCode: n.error_code,
      checkedAt: n.checked_at,
      listSource: n.list_source,
      httpStatus: n.http_status,
      credits: n.credits,
      answer: parse(n.answer),
      pushes: pushesOf(n.correlation_id),
      batch,
    }));
    for (const f of found) f.rows = await rowsOf(f.phoneNumber);
    const pushes = 'correlationId' in query ? pushesOf(query.correlationId) : [];
    // A push whose number the journal does not know (an orphan) is still evidence of the lookup.
    if (found.length === 0 && pushes.length > 0) {
      const b = pushes[0]!.body as { phone_number?: string; country?: string } | null;
      found.push({
        source: 'batch',
        where: journalPath,
        correlationId: 'correlationId' in query ? query.correlationId : '',
        phoneNumber: b?.phone_number ?? '',
        country: b?.country ?? null,
        service: meta?.serviceOrigin ?? null,
        requestedAt: null,
        answeredAt: null,
        mode: 'webhook',
        result: 'orphan push',
        errorCode: null,
        checkedAt: null,
        listSource: null,
        httpStatus: null,
        credits: 0,
        answer: null,
        pushes,
        batch,
      });
    }
    return found;
  }
}

/** Every record of the lookup: the check history first, then each journal in order. */
export async function traceLookup(
  query: LookupQuery,
  where: { history: History | null; historyFile: string; journals: string[] },
): Promise<TracedLookup[]> {
  const out = where.history ? await fromHistory(where.history, query, where.historyFile) : [];
  for (const j of where.journals) out.push(...(await traceInJournal(j, query)));
  return out;
}

/** A reused row's note that names whose lookup it was: a team colleague's (its machine and role), or a role's. */
function teamNote(error: string | null): boolean {
  return error !== null && error.startsWith('reused:') && /another dnc of the team|\(written by role /.test(error);
}
