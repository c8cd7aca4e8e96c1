// What a batch journal holds and takes: its numbers and their states, final answers, pushes, the batch's metadata.
import type { Judgement } from '../service/answers.js';
import type { PushBody } from '../service/push-answers.js';
import type { RecordDelimiter } from '../tables/csv-output.js';
import type { TextEncoding } from '../tables/encoding.js';
import type { WorkbookLayout } from '../tables/layout.js';

export const JOURNAL_SCHEMA_VERSION = 1;

/** Final results of a number (the dnc_result values a lookup can come to). */
export type NumberResult = 'callable' | 'do_not_call' | 'invalid' | 'unsupported_country' | 'not_checked' | 'failed';

export type NumberState = 'queued' | 'in_flight' | 'done' | 'pending';

// The run ended on an error, the output still written: auth_failed (401/403, a reseller header refused),
// configuration (the service refused the request itself: a 400 about a parameter or the webhook URL),
// service_failure (the service unreachable, failing or answering what it cannot have meant).
export type StoppedReason =
  'credit_limit' | 'budget_reached' | 'interrupted' | 'auth_failed' | 'configuration' | 'service_failure';

/** Options that change results: a journal made with other values is refused. */
export interface ResultOptions {
  country: string | null;
  delimiter: string;
  header: boolean;
  /** The first phone column (0-based): the one column of journals from before several were read. */
  phoneIndex: number;
  /** Every phone column, in --column order; absent in journals of one column. */
  phoneIndexes?: number[];
  /** The column of each row's country (--country-column), or null; absent in older journals. */
  countryIndex?: number | null;
  webhookUrl: string | null;
  webhookAll: boolean;
}

/** The phone columns a batch reads (its journal's, older journals' one column too). */
export function phoneColumnsOf(options: Pick<ResultOptions, 'phoneIndex' | 'phoneIndexes'>): number[] {
  return options.phoneIndexes ?? [options.phoneIndex];
}

export interface BatchMeta {
  schema: number;
  inputPath: string;
  inputSha256: string;
  inputSize: number;
  outputPath: string;
  callableOut: string | null;
  suppressedOut: string | null;
  options: ResultOptions;
  /** How the input is read and written back. */
  layout: {
    recordDelimiter: RecordDelimiter;
    header: string[] | null;
    columnCount: number;
    /** The first phone column's label (the one of journals from before several were read). */
    phoneLabel: string;
    /** Every phone column's label; absent in journals of one column. */
    phoneLabels?: string[];
    countryLabel?: string | undefined;
    bom: boolean;
    workbook?: WorkbookLayout | undefined;
    encoding?: TextEncoding | undefined;
  };
  createdAt: string;
  /** The base URL lookups went to (never the key). */
  serviceOrigin: string | null;
  /** --escape-formulas: formula-leading input cells get a leading ' in the outputs (changes no answer). */
  escapeFormulas?: boolean;
  /** Where the manifest goes when it cannot stand beside the output (`-o -`, a FIFO or a device). */
  manifestPath?: string;
  /** --review-out: rows that need a person, with their reasons. */
  reviewOut?: string | null;
  /** --dial-out: the distinct callable numbers, one per line. */
  dialOut?: string | null;
  /** --output-encoding of the CSV outputs; the input's when absent. */
  outputEncoding?: TextEncoding | undefined;
  /** --format of the results (csv or xlsx); by the output's extension when absent. */
  outputFormat?: 'csv' | 'xlsx';
  /** The options the batch was last run with, resolved (what the plan settled included), for a rerun without flags. */
  run?: RememberedRun;
  /**
   * The answer given on a terminal to "reuse, pay again or stop?" for the numbers answered within the last day (a
   * resume follows it, through `run`, and does not ask again): what was answered, when, and what was at stake.
   */
  reuseAnswer?: { answer: 'reuse' | 'pay_again'; at: string; numbers: number; credits: number };
  /**
   * The account its verdicts are cached under, by the store's place (a salted HMAC of the key, never the key):
   * `dnc listen`, which needs no key, fills the same results cache.
   */
  accounts?: Record<string, string>;
  /**
   * The team's calling settings the batch was started with (--calling-settings, DNC_CALLING_SETTINGS or the config's
   * "calling"): every render computes the calling columns under them, a resumed batch keeps them. `settings` absent:
   * none (the law's rules); so too in journals from before they were recorded (no `calling`).
   */
  calling?: BatchCalling;
}

/**
 * The options a batch was last run with, as its journal keeps them: resolved once (paths absolute, what the plan
 * settled of --reuse-within and --no-reuse written back), read by the run's stages and by a rerun that does not give
 * them again, through rememberedOf. Every field is optional: journals from before an option was remembered lack it (a
 * rerun then takes the option's default). The options that say where and how the outputs are written, and the
 * webhook, are kept once, in the meta's own fields (callableOut, outputFormat, options.webhookUrl …): journals
 * written before that (2026-11-28, schema version 5 and below) repeat them here too.
 */
export interface RememberedRun {
  /** --column; a string in journals from before several phone columns were read. */
  column?: string[] | string | null;
  countryColumn?: string | null;
  country?: string | null;
  delimiter?: string | null;
  header?: boolean;
  concurrency?: number;
  webhookUrl?: string | null;
  webhookAll?: boolean;
  allowInsecureWebhookUrl?: boolean;
  maxCredits?: number | null;
  callableOut?: string | null;
  suppressedOut?: string | null;
  reviewOut?: string | null;
  dialOut?: string | null;
  reuseWithinMs?: number | null;
  noReuse?: boolean;
  escapeFormulas?: boolean;
  format?: 'csv' | 'xlsx' | null;
  sheet?: string | null;
  skipRows?: number | null;
  encoding?: TextEncoding | null;
  outputEncoding?: TextEncoding | null;
  /** --suppression-list, --seller, --san, --campaign. */
  compliance?: {
    suppressionList?: string | undefined;
    seller?: string | undefined;
    san?: string | undefined;
    campaign?: string | undefined;
  };
}

/** The options a journal's batch was last run with (see RememberedRun); undefined when it remembers none. */
export function rememberedOf(meta: BatchMeta): RememberedRun | undefined {
  if (!meta.run) return undefined;
  return {
    ...meta.run,
    callableOut: meta.callableOut,
    suppressedOut: meta.suppressedOut,
    reviewOut: meta.reviewOut ?? null,
    dialOut: meta.dialOut ?? null,
    escapeFormulas: meta.escapeFormulas === true,
    format: meta.outputFormat ?? null,
    outputEncoding: meta.outputEncoding ?? null,
    webhookUrl: meta.options.webhookUrl,
    webhookAll: meta.options.webhookAll,
  };
}

/** What a journal's `run` holds that its meta does not hold elsewhere (what a batch writes there). */
export type StoredRun = Omit<
  Required<RememberedRun>,
  | 'callableOut'
  | 'suppressedOut'
  | 'reviewOut'
  | 'dialOut'
  | 'escapeFormulas'
  | 'format'
  | 'outputEncoding'
  | 'webhookUrl'
  | 'webhookAll'
>;

/** Calling settings as a batch recorded them. */
export interface BatchCalling {
  /** The settings as written (src/calling checks them). */
  settings?: unknown;
  /** Where they came from, as error messages name them ('--calling-settings FILE: calling'). */
  name: string;
}

/**
 * The dnc_error_code of a number whose send got no answer (a kill -9, a second Ctrl-C, a full disk): it may
 * have been charged, so a rerun does not send it again unless asked (--resend-unanswered). Its send is one
 * of the UNANSWERED_SENDS above (the row holds no answer of it).
 */
export const UNANSWERED_SEND = 'unanswered_send';

export const UNANSWERED_SEND_TEXT =
  'sent by an earlier run that stopped before the answer came: it may have been charged; a rerun sends it again ' +
  'only with --resend-unanswered';

/** One distinct number as the journal holds it. */
export interface NumberRow {
  id: number;
  e164: string;
  country: string;
  state: NumberState;
  result: NumberResult | null;
  attempts: number;
  correlation_id: string | null;
  answer: string | null;
  http_status: number | null;
  credits: number;
  do_not_call: number | null;
  list_source: string | null;
  error_code: string | null;
  error: string | null;
  checked_at: string | null;
  /** When the number's last request was sent (committed with its claim). */
  requested_at: string | null;
}

export type NumberVerdict = Pick<
  NumberRow,
  | 'id'
  | 'state'
  | 'result'
  | 'do_not_call'
  | 'list_source'
  | 'checked_at'
  | 'correlation_id'
  | 'error_code'
  | 'error'
  | 'credits'
  | 'country'
> & {
  /** The user's exemption applied to this number at scrub time (src/compliance), if any. */
  exemption_basis?: string | null;
  exemption_until?: string | null;
};

/** An exemption of the user's list that held when the batch ran (kept in the journal so listen renders it too). */
export interface AppliedExemption {
  e164: string;
  basis: string;
  until: string;
  evidence: string | null;
}

/** A final answer about a number, ready to store: a judged answer's verdict, or a local decision. */
export interface FinalAnswer extends Omit<Judgement, 'result' | 'charged' | 'credits'> {
  result: NumberResult;
  credits: number;
  httpStatus: number | null;
  /** The service's full answer (JSON text), or null for a local decision. */
  answer: string | null;
}

/**
 * applied: the number's answer; adopted: a do_not_call verdict for a number whose send got no answer (see
 * adoptByNumber); duplicate: the same verdict again (counted); orphan: an unknown correlation id (kept); conflict: a
 * different verdict for a correlation id already pushed (kept; the number becomes failed/conflicting_pushes); refused:
 * it contradicts what was sent (kept as evidence, not applied); over_capacity: an orphan beyond the cap (not stored).
 */
export type PushOutcome = 'applied' | 'adopted' | 'duplicate' | 'orphan' | 'conflict' | 'refused' | 'over_capacity';

/** What storing one push did, and why when it was refused. */
export interface PushVerdict {
  outcome: PushOutcome;
  reason?: string;
}

/** The dnc_error_code of a number that received two different verdicts: never callable, never reused. */
export const CONFLICTING_PUSHES = 'conflicting_pushes';

export interface StorePushOptions {
  /** Clock skew allowed between the service and us (default 5 minutes). */
  skewMs?: number;
  /** Whether one more orphan of `bytes` may be kept; false: it is not stored (the caller answers 503). */
  admitOrphan?(bytes: number): boolean;
  /** Whether the evidence of one more refused push may be kept; false: it is refused without a trace in the journal. */
  admitRefused?(bytes: number): boolean;
}

/** A push as `dnc listen` hands it to the journal. */
export interface IncomingPushRecord {
  /** The body exactly as received. */
  raw: string;
  /**
   * The body as read where it arrived (readPush), so the journal never parses it again; null when it is not a JSON
   * object (kept as an orphan, or as the evidence of a refused push).
   */
  result: PushBody | null;
  /** ISO 8601. */
  receivedAt: string;
  /** X-Service-Correlation-Id, used when the body does not carry one. */
  correlationId?: string | null;
  /** X-Service-Status, kept as the answer's http_status. */
  serviceStatus?: number | null;
  /** The request's headers (JSON text), kept with the push as evidence. */
  headers?: string | null;
  /** The peer's address. */
  peer?: string | null;
  /**
   * Set when the receiver already refused the push (its body or headers break the service's rules): kept as evidence
   * only.
   */
  refusedReason?: string;
}

export interface SummaryCounts {
  /** Distinct numbers by state. */
  queued: number;
  in_flight: number;
  done: number;
  pending: number;
  /** Credits recorded across every run of the batch (charged, plus held for pending lookups). */
  credits: number;
}
