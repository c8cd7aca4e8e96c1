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
