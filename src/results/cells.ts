// The dnc_* cells of a row: what the journal says of its number, or why it was not checked; and the counts.
import type { OutputTally } from './tally.js';
import { serviceTextCell } from '../tables/csv-output.js';
import type { OutputFileFormat } from '../tables/table-format.js';
import type { BatchJournal, BatchMeta, NumberVerdict, StoppedReason } from '../journal/journal.js';
import type { ScrubRows } from '../compliance/batch-compliance.js';
import { DNC_RESULTS, type DncResult } from './columns.js';
import { unsupportedCountryText } from '../service/refusals.js';

/** Failures a rerun looks up again when nothing was charged for them (as journal.requeueUnfinished decides). */
export const UNCHARGED_FAILURES: ReadonlySet<string> = new Set([
  'upstream_timeout',
  'upstream_error',
  'lookup_expired',
  'billing_error',
]);

export interface RenderSummary {
  input: string;
  output: string;
  callableOut: string | null;
  suppressedOut: string | null;
  reviewOut: string | null;
  dialOut: string | null;
  /** Where the batch's manifest goes (null when the output is a stream without one). */
  manifest: string | null;
  rows: number;
  /** Rows with no number in any phone column (counted among the invalid rows, and said apart). */
  emptyRows: number;
  /** Rows by dnc_result. */
  byResult: Record<DncResult, number>;
  /** The list's phone columns: with several, byCountry counts numbers (each phone cell holding one), not rows. */
  phoneColumns: number;
  /** Their names (the header's, else `column N`), in --column order: dnc_N_* describe the Nth. */
  phoneLabels: readonly string[];
  /** Rows (numbers, with several phone columns) by country ('' when the number could not be read), then by result. */
  byCountry: Map<string, Record<DncResult, number>>;
  /**
   * Rows whose country cell names no country dnc knows (their national numbers unread: unknown_country), and up to
   * three of those cells as written, for the summary to say which.
   */
  unknownCountries: { rows: number; examples: string[]; more: boolean };
  /** Rows whose register source is not an https URL (the interface promises one): shown, but flagged. */
  notHttpsSources: number;
  /** not_checked rows of webhook-only countries: a rerun finishes them only with --webhook-url. */
  webhookRequired: number;
  /** not_checked rows whose phone cell is a formula never calculated: a rerun does not finish them, a save does. */
  notCalculated: number;
  /** Rows without a verdict that a bare rerun looks up again (nothing was charged for them). */
  retryable: number;
  /**
   * Rows whose number was sent by a run that stopped before the answer came (unanswered_send): maybe charged, sent
   * again only with --resend-unanswered.
   */
  unanswered: number;
  /** What was written to each output, in the order output, callable list, suppressed list. */
  written: Array<{ path: string; sha256: string; bytes: number }>;
  /** The output's rows added up as the manifest states them (taken from this pass: the output is not read again). */
  tally: OutputTally | null;
  /** The manifest's compliance fields (the scrub's record, each country's valid-until), from the same pass. */
  compliance: ReturnType<ScrubRows['manifestFields']> | null;
  /** The calling rules' version (src/calling) the calling columns were computed under: the manifest records it. */
  callingRulesVersion: string;
}

export function emptyResultCounts(): Record<DncResult, number> {
  return Object.fromEntries(DNC_RESULTS.map((r) => [r, 0])) as Record<DncResult, number>;
}

const NOT_CHECKED_TEXT: Record<StoppedReason, string> = {
  credit_limit:
    'not checked: the credit limit was reached (429); run the same command again after a top-up or in the next ' +
    'billing period',
  budget_reached: 'not checked: the --max-credits budget was reached; run the same command again with a larger budget',
  interrupted: 'not checked: the batch was interrupted; run the same command again to resume',
  auth_failed:
    'not checked: the batch stopped when the service refused the key or the request (401/403); fix the cause ' +
    'and run the same command again to resume',
  configuration:
    'not checked: the batch stopped when the service refused the request itself (not the number); fix the cause ' +
    'and run the same command again to resume',
  service_failure:
    'not checked: the batch stopped when the service failed; fix the cause and run the same command again to resume',
};

/** What decides the reason of a number never sent: a country no lookup would be sent for says so after any stop. */
interface NotSentReasons {
  /** Webhook-only countries, when the batch has no webhook URL. */
  webhookRequired: ReadonlySet<string>;
  /** The countries a 422 named, and the supported countries it listed. */
  unsupported: ReadonlySet<string>;
  supportedList: readonly string[];
}

/** The dnc_do_not_call cell of a final verdict (verify compares a row's with it). */
export function doNotCallCell(v: Pick<NumberVerdict, 'do_not_call'>): string {
  return v.do_not_call === null ? '' : v.do_not_call ? 'true' : 'false';
}

/** The dnc_* cells of a number the journal knows, the service's text written as an output of `format` writes it. */
export function cellsFor(
  e164: string,
  country: string,
  row: NumberVerdict | undefined,
  stopped: StoppedReason | null,
  firstRow: boolean,
  notSent: NotSentReasons,
  format: OutputFileFormat,
): string[] {
  // A lookup's credits stand on the first row with its number only, so the column sums to what was spent.
  const credits = firstRow && row ? String(row.credits) : '0';
  if (!row) {
    return [e164, country, 'not_checked', '', '', '', '', 'interrupted', NOT_CHECKED_TEXT.interrupted, '0'];
  }
  if (row.state === 'done') {
    return [
      e164,
      country,
      row.result ?? 'failed',
      doNotCallCell(row),
      serviceTextCell(row.list_source, format),
      serviceTextCell(row.checked_at, format),
      serviceTextCell(row.correlation_id, format),
      serviceTextCell(row.error_code, format),
      serviceTextCell(row.error, format),
      credits,
    ];
  }
  if (row.state === 'pending') {
    return [
      e164,
      country,
      'pending',
      '',
      '',
      '',
      serviceTextCell(row.correlation_id, format),
      '',
      'webhook result not received yet; run `dnc listen`',
      credits,
    ];
  }
  // Queued when the run stopped: say why it would not have been sent anyway, where that is so.
  if (notSent.webhookRequired.has(country)) {
    return [
      e164,
      country,
      'not_checked',
      '',
      '',
      '',
      '',
      'webhook_required',
      `${country} lookups are webhook-only: pass --webhook-url and run \`dnc listen\``,
      '0',
    ];
  }
  if (notSent.unsupported.has(country)) {
    return [
      e164,
      country,
      'unsupported_country',
      '',
      '',
      '',
      '',
      'unsupported_country',
      unsupportedCountryText(country, notSent.supportedList),
      '0',
    ];
  }
  const reason = stopped ?? 'interrupted';
  return [e164, country, 'not_checked', '', '', '', '', reason, NOT_CHECKED_TEXT[reason], '0'];
}

export function notSentReasonsOf(
  journal: BatchJournal,
  meta: BatchMeta,
  webhookOnly: readonly string[],
): NotSentReasons {
  return {
    webhookRequired: new Set(meta.options.webhookUrl ? [] : webhookOnly),
    unsupported: new Set(journal.unsupportedCountries()),
    supportedList: journal.supportedCountries() ?? [],
  };
}
