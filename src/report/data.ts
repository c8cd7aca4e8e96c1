// What an auditor's report of one scrub shows, as `dnc report`'s use case gathers it and a renderer
// (src/render/report-html.ts) draws it.
import type { ListCheck } from '../compliance/batch-compliance.js';
import type { Manifest } from '../evidence/manifest.js';

export interface ReportRow {
  line: number;
  number: string;
  country: string;
  result: string;
  source: string;
  checkedAt: string;
  exemption: string;
  /** The audit entry that put the number on the list or exempted it (with --include-numbers). */
  why: string;
}

/** What the command gathers besides the manifest (by walking the output once). */
export interface ReportData {
  manifest: Manifest;
  manifestPath: string;
  manifestSha256: string;
  /** The output still hashes as the manifest says. */
  outputMatches: boolean;
  generatedAt: Date;
  /** Rows decided by the internal list, by list source. */
  internalRows: Record<string, number>;
  /** Rows made callable by an exemption, by basis. */
  exemptRows: Record<string, number>;
  /** Present only with --include-numbers. */
  rows: ReportRow[] | null;
  /** Rows left out of `rows` (a cap keeps the page printable). */
  rowsOmitted: number;
  /** The recorded list checked against the list as it is now (null: the scrub used none). */
  listCheck: ListCheck | null;
  /** What `dnc verify` says of the file now (src/verify/fit-to-dial.ts): the badge says the same. */
  fit: { fit: boolean; why: string | null };
}
