// What a batch is asked and what it answers: its options, the events it emits, what it needs of the outside
// world, and the result of a run or a dry run.
import type { Readable, Writable } from 'node:stream';
import type { ComplianceFlags } from '../compliance/settings.js';
import type { TextEncoding } from '../tables/encoding.js';
import type { GlobalFlags, ServiceConfig } from '../config.js';
import type { Interrupts } from '../io.js';
import type { ClockSkewEvent } from '../service/clocks.js';
import { DncError } from '../errors.js';
import type { Say } from '../evidence/batch-evidence.js';
import type { ClientRequest, ServiceClient } from '../service/client.js';
import type { Stores } from '../stores/owner.js';
import type { LockDeps, StoppedReason, SummaryCounts } from '../journal/journal.js';
import type { RenderSummary } from '../results/render.js';
import type { Reusable } from './reusable.js';
import type { SchedulerProgress } from './scheduler.js';
import type { PaidAgain } from './recent-answers.js';
import type { BudgetStop } from './budget.js';

/** What the batch says while it runs; the command decides how each is shown. */
export type BatchEvent =
  | { type: 'info' | 'warning' | 'debug'; text: string }
  | ClockSkewEvent
  /** Lookups begin (after the input is read and the credit guard has spoken). */
  | { type: 'lookups-started' }
  | { type: 'progress'; progress: SchedulerProgress }
  /** The first interrupt: no new lookups; those in flight are awaited. */
  | { type: 'stopping' }
  | { type: 'lookups-ended' };

/** What was found and what a run would send, as the question on a terminal shows it. */
export interface ReuseQuestion {
  numbers: number;
  of: number;
  credits: number;
  oldestMs: number;
}

/** What the batch may use: nothing of the process but what is injected here. */
export interface BatchRunDeps {
  cwd: string;
  env: Record<string, string | undefined>;
  homedir: string;
  now(): Date;
  /** The time-zone database's version (the context's): named in the calling rules' version of the outputs. */
  tzdataVersion: string;
  flags: GlobalFlags;
  interrupts: Interrupts;
  serviceConfig(): Promise<ServiceConfig>;
  createClient(options?: ClientRequest): Promise<ServiceClient>;
  /** The stores the `store` setting names (results cache, internal list, history, claims). */
  stores(): Promise<Stores>;
  stdin: Readable;
  stdinIsTTY: boolean;
  /** Where `-o -` writes. */
  stdout: Writable;
  /** This process as the journal's lock sees it. */
  lockDeps: LockDeps;
  /** Whether a path names this process's standard output (/dev/stdout). */
  isStandardOutput(file: string): boolean;
  /** Whether a path names this process's standard input (/dev/stdin): never written to. */
  isStandardInput(file: string): boolean;
  /** Whether a path names this process's standard error (/dev/stderr), where progress and the summary go. */
  isStandardError?(file: string): boolean;
  onEvent(event: BatchEvent): void;
  /**
   * Asks which columns hold the phone numbers when dnc is not sure (a terminal on both ends): the answer as --column
   * takes it, or null to stop. Absent off a terminal: the batch exits 2 naming the candidates.
   */
  askColumns?(question: { input: string; candidates: readonly string[] }): Promise<string | null>;
  /**
   * Asks what to do with the numbers this service answered within the last day (a terminal on both ends): reuse
   * them, pay again, or stop. Absent off a terminal: --reuse-within / --no-reuse decide, else they are paid again
   * and the summary says so.
   */
  askReuse?(question: ReuseQuestion): Promise<'reuse' | 'pay_again' | 'stop'>;
  /**
   * The module of the thread the outputs are rendered in while the lookups run (early-render-worker.ts). By
   * default the bundled one, if there; null: on the batch's own thread only.
   */
  renderThreadFile?: string | null;
}

/**
 * The parts of the run that speak: the dependencies plus info/warn/debug as events (the evidence and compliance hooks
 * take these).
 */
export type RunContext = BatchRunDeps &
  Say & { io: { stdin: Readable; stdinIsTTY: boolean; stdout: Writable }; emit(event: BatchEvent): void };

export function runContext(deps: BatchRunDeps): RunContext {
  // Copied with their getters, not their values: standard input is set up only when a list is read from it.
  const copied = Object.defineProperties({}, Object.getOwnPropertyDescriptors(deps)) as BatchRunDeps;
  return Object.assign(copied, {
    io: {
      get stdin() {
        return deps.stdin;
      },
      get stdinIsTTY() {
        return deps.stdinIsTTY;
      },
      stdout: deps.stdout,
    },
    emit: (event: BatchEvent) => deps.onEvent(event),
    info: (text: string) => deps.onEvent({ type: 'info', text }),
    warn: (text: string) => deps.onEvent({ type: 'warning', text }),
    debug: (text: string) => deps.onEvent({ type: 'debug', text }),
  });
}

/** A dry run's findings: counts, balance, estimate and the credit guard's lines. */
export interface DryRunReport {
  result: {
    input: string;
    rows: number;
    unique_numbers: number;
    invalid_rows: number;
    /** Rows with no number in any phone column (not among invalid_rows). */
    empty_rows: number;
    by_country: Record<string, number>;
    balance: { credits_remaining: number; credit_limit: number } | null;
    estimated_credits: number;
    estimate_complete: boolean;
    unknown_cost_countries: string[];
    webhook_required_countries: string[];
    /** Countries a 422 of an earlier run said the service does not cover: refused locally, never sent. */
    unsupported_countries: string[];
    /**
     * The batch's journal, when a rerun would resume it: by_country and estimated_credits then count only what the
     * rerun sends.
     */
    resuming: DryRunResume | null;
    /** Numbers to look up whose verdict of this service, in the results cache, is still valid (no --reuse-within). */
    reusable: Reusable | null;
  };
  guard: { lines: string[]; json: unknown };
  costs: Map<string, number>;
  invalidSamples: Array<{ line: number; record: number; value: string; message: string; where?: string }>;
  maxCredits: number | null;
}

/** What a rerun of a stopped batch would do, as its journal says (read only). */
export interface DryRunResume {
  journal: string;
  /** Distinct numbers of the list. */
  numbers: number;
  /** Numbers with a final verdict (charged outcomes included): never sent again. */
  with_verdict: number;
  /** Webhook lookups waiting for their push (`dnc listen`): not sent again. */
  pending: number;
  /** Numbers the rerun would send (the estimate's): queued, not_checked of any reason, uncharged failures. */
  to_look_up: number;
  /**
   * Numbers without a verdict the rerun would still not send (webhook-only countries without --webhook-url, countries
   * the service does not cover).
   */
  not_sent: number;
  /**
   * Numbers an earlier run sent without getting the answer: not sent again unless --resend-unanswered (then in
   * to_look_up).
   */
  unanswered: number;
  /**
   * Sends of the batch that got no answer (may have been charged), as the summary, manifest and `usage --reconcile`
   * count them.
   */
  unanswered_sends: number;
  /** Credits the batch has recorded so far (what --max-credits counts, with the unanswered sends). */
  credits_spent: number;
  resend_unanswered: boolean;
}

/** How a batch run ended (a fatal service error is thrown, after the output is written). */
export type BatchRunResult =
  | { kind: 'dry-run'; report: DryRunReport }
  /** A second interrupt: stopped at once, not rendered; the journal keeps every answer. */
  | { kind: 'abandoned' }
  | {
      kind: 'finished';
      summary: RenderSummary;
      counts: SummaryCounts;
      stopped: StoppedReason | null;
      creditsThisRun: number;
      sent: number;
      elapsedMs: number;
      journalPath: string;
      outputPath: string;
      maxCredits: number | null;
      /** Why --max-credits stopped the run, when it did. */
      budgetStop?: BudgetStop | null;
      /** The command that resumes or finishes this batch. */
      resume: string;
      /** Sends of this batch that got no answer (each may have been charged; not in counts.credits). */
      unansweredSends: number;
      /** Numbers answered within the last day that this run paid for again, or null (none, or reused). */
      paidAgain?: PaidAgain | null;
      /** The credit guard's estimate of this run's lookups, over the numbers it was to send; null: none weighed. */
      estimate?: { numbers: number; credits: number } | null;
      /** The --review-out list this batch writes (given now or remembered), or null. */
      reviewOut: string | null;
      /** --resend-failed was given: failed numbers still failed were sent again (a hint never names it again). */
      resentFailed: boolean;
      /** The failed numbers a bare rerun leaves (what --resend-failed sends), and what sending them costs again. */
      failedToResend: { numbers: number; credits: number };
      /**
       * The error that stopped the run after the output was written (the command reports it and exits with its status).
       */
      fatal?: DncError;
    };

export interface BatchOptions {
  output?: string | undefined;
  /** --column, as given (each a name, an index, or a list of them): the phone columns. */
  column?: string[] | undefined;
  /** --country-column NAME|INDEX: the column of each row's country. */
  countryColumn?: string | undefined;
  country?: string | undefined;
  concurrency: number;
  webhookUrl?: string | undefined;
  webhookAll: boolean;
  allowInsecureWebhookUrl: boolean;
  maxCredits: number | null;
  dryRun: boolean;
  restart: boolean;
  callableOut?: string | undefined;
  suppressedOut?: string | undefined;
  delimiter?: string | undefined;
  header: boolean;
  /** --encoding: the CSV input's text encoding (default UTF-8, or UTF-16 by its byte-order mark). */
  encoding?: TextEncoding | undefined;
  /** --output-encoding: the CSV outputs' text encoding (default: the input's). */
  outputEncoding?: TextEncoding | undefined;
  /** --format csv|xlsx: how the results are written (default: by the output's extension). */
  format?: 'csv' | 'xlsx' | undefined;
  /** --sheet NAME|INDEX: the sheet of an .xlsx input (by default the one Excel opens on). */
  sheet?: string | undefined;
  /** --skip-rows N: the rows above an .xlsx input's list (titles) are not read. */
  skipRows?: number | undefined;
  /** --reuse-within: verdicts of the same service checked within this window are reused (src/evidence). */
  reuseWithinMs?: number | null;
  /** --no-reuse: numbers answered within the last day are paid for again, without asking (src/batch/repay.ts). */
  noReuse?: boolean;
  /**
   * --escape-formulas: formula-leading input cells get a leading ' in the outputs (for files bound for a spreadsheet).
   */
  escapeFormulas?: boolean;
  /**
   * --journal: where the journal goes (default: beside the output, or the state folder when the output is not a file).
   */
  journal?: string | undefined;
  /**
   * --review-out: the rows that need a person (invalid, unsupported_country, not_checked, failed) with their reasons.
   */
  reviewOut?: string | undefined;
  /** --dial-out: the distinct callable numbers in E.164, one per line, for a dialler. */
  dialOut?: string | undefined;
  /**
   * --calling-settings: the team's calling policy and overrides for the calling columns (else DNC_CALLING_SETTINGS,
   * the config's "calling"); recorded when a batch starts, a resumed batch keeps what it recorded.
   */
  callingSettings?: string | undefined;
  /** The options given on the command line; the others are taken from the journal when it remembers them. */
  given?: ReadonlySet<RememberedOption>;
  /** --suppression-list, --seller, --san, --campaign (src/compliance). */
  compliance?: ComplianceFlags;
  /**
   * --resend-unanswered: numbers an earlier run sent without getting the answer (kill -9, a second Ctrl-C) are
   * sent again, although each may already have been charged. Never remembered: it is consent for this run only.
   */
  resendUnanswered?: boolean;
  /**
   * --resend-failed: the failed numbers a bare rerun does not send again (the failure was charged, or the send may
   * have been: the unanswered ones too) are sent again; each may be charged again.
   */
  resendFailed?: boolean;
  /**
   * --accept-unproven-journal: a journal that cannot prove its answers (kept by a dnc before journals were chained,
   * or its chain anchored nowhere in this state folder) is accepted as it stands, on the user's word. Never
   * remembered. An altered journal is refused whatever this says.
   */
  acceptUnprovenJournal?: boolean;
}

/** Options a journal remembers: a rerun without them resumes with what the batch was started with. */
export const REMEMBERED_OPTIONS = [
  'column',
  'countryColumn',
  'country',
  'delimiter',
  'header',
  'sheet',
  'skipRows',
  'encoding',
  'outputEncoding',
  'concurrency',
  'webhookUrl',
  'webhookAll',
  'allowInsecureWebhookUrl',
  'maxCredits',
  'callableOut',
  'suppressedOut',
  'reviewOut',
  'dialOut',
  'reuseWithinMs',
  'noReuse',
  'escapeFormulas',
  'format',
  'compliance',
] as const satisfies ReadonlyArray<keyof BatchOptions>;
export type RememberedOption = (typeof REMEMBERED_OPTIONS)[number];

/** The flags that make up `compliance`: given when any of them is. */
export const COMPLIANCE_FLAGS = {
  suppressionList: '--suppression-list',
  seller: '--seller',
  san: '--san',
  campaign: '--campaign',
} as const;
