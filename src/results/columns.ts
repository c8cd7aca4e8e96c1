// The dnc_* columns and results of a batch's outputs: a module of its own, so that checking an input's header
// (a results file given as input) does not load the renderer before the first lookup.

/** The columns appended to every row, in order (cli.md). */
export const DNC_COLUMNS = [
  'dnc_phone_e164',
  'dnc_country',
  'dnc_result',
  'dnc_do_not_call',
  'dnc_list_source',
  'dnc_checked_at',
  'dnc_correlation_id',
  'dnc_error_code',
  'dnc_error',
  'dnc_credits',
  'dnc_exemption',
  'dnc_valid_until',
] as const;

/** How many dnc_* columns the batch appends, after the input's columns. */
export const DNC_COLUMN_COUNT = DNC_COLUMNS.length;
/** Positions within the dnc_* cells. */
export const C = {
  e164: 0,
  country: 1,
  result: 2,
  doNotCall: 3,
  source: 4,
  checkedAt: 5,
  correlationId: 6,
  errorCode: 7,
  error: 8,
  credits: 9,
  exemption: 10,
  validUntil: 11,
} as const satisfies Record<string, number>;

/**
 * The calling columns after the contract's: the number's IANA time zones (space-separated) and its weekly local
 * calling window. They depend only on the number and the calling rules' version (src/calling), never on the clock.
 */
export const CALLING_COLUMNS = ['dnc_time_zones', 'dnc_calling_window'] as const;
/** Positions of the calling cells, after the contract's cells. */
export const CALLING = { timeZones: DNC_COLUMN_COUNT, window: DNC_COLUMN_COUNT + 1 } as const;
export const CALLING_CELLS = CALLING_COLUMNS.length;

/** The columns --review-out adds to the input's: enough to act on a row without the full results. */
export const REVIEW_COLUMNS = ['dnc_phone_e164', 'dnc_result', 'dnc_error_code', 'dnc_error'] as const;

export const DNC_RESULTS = [
  'callable',
  'do_not_call',
  'invalid',
  'unsupported_country',
  'pending',
  'not_checked',
  'failed',
] as const;
export type DncResult = (typeof DNC_RESULTS)[number];
