// The options a batch journal remembers, and the flags that make up its compliance settings: apart from the
// run so that the command can name them without loading the use case (and all it imports) at start-up.
import type { BatchOptions } from './run.js';

/** Options a journal remembers: a rerun without them resumes with what the batch was started with. */
export const REMEMBERED_OPTIONS = [
  'column',
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
