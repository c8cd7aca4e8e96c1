// Renderers of `dnc batch`: the end-of-run summary and the --dry-run report (tables on a terminal, tab lines piped).
import { terminalSafe } from '../text/terminal-safe.js';
import type { DncResult } from '../results/columns.js';
import type { RenderSummary } from '../results/render.js';
import type { DryRunReport as DryRunFindings } from '../batch/job.js';
import { describeRecordAt } from '../tables/record-location.js';
import { formatInteger, paint, renderTable, type Terminal } from './table.js';
import { UNKNOWN_COST_FLOOR } from '../batch/credit-guard.js';
import type { PaidAgain } from '../batch/recent-answers.js';
import { paidAgainLine } from './reuse-question.js';

export interface BatchSummaryExtras {
  uniqueNumbers: number;
  creditsTotal: number;
  creditsThisRun: number;
  sent: number;
  elapsedMs: number;
  stopped: string | null;
  pending: number;
  journalPath: string;
  /** Sends of the batch that got no answer (a killed run's): maybe charged, not in creditsTotal. */
  unansweredSends?: number;
  /** Numbers answered within the last day that this run paid for again (src/batch/repay.ts). */
  paidAgain?: PaidAgain | null;
}

const RESULT_ORDER: DncResult[] = [
  'callable',
  'do_not_call',
  'invalid',
  'unsupported_country',
  'pending',
  'not_checked',
  'failed',
];

function percent(n: number, total: number): string {
  return total === 0 ? '0%' : `${((100 * n) / total).toFixed(1)}%`;
}

export function renderBatchSummary(summary: RenderSummary, extras: BatchSummaryExtras, term: Terminal): string {
  const byResult = renderTable(
    {
      head: ['result', 'rows', 'share'],
      rows: RESULT_ORDER.filter((r) => summary.byResult[r] > 0 || r === 'callable' || r === 'do_not_call').map((r) => [
        r,
        summary.byResult[r],
        percent(summary.byResult[r], summary.rows),
      ]),
      align: ['left', 'right', 'right'],
    },
    term,
  );
  const countries = [...summary.byCountry.entries()].sort((a, b) => {
    const ta = Object.values(a[1]).reduce((x, y) => x + y, 0);
    const tb = Object.values(b[1]).reduce((x, y) => x + y, 0);
    return tb - ta || a[0].localeCompare(b[0]);
  });
  const byCountry = renderTable(
    {
      head: ['country', summary.phoneColumns > 1 ? 'numbers' : 'rows', 'callable', 'do_not_call', 'other'],
      rows: countries.map(([country, c]) => {
        const total = Object.values(c).reduce((x, y) => x + y, 0);
        return [country || '(unreadable)', total, c.callable, c.do_not_call, total - c.callable - c.do_not_call];
      }),
      align: ['left', 'right', 'right', 'right', 'right'],
    },
    term,
  );
  // Lines for people carry separators piped too (as `dnc check` and `dnc usage` write them); the tables, for scripts
  // when piped, do not.
  const num = formatInteger;
  const lines: string[] = [];
  const unfinished = summary.byResult.not_checked + summary.byResult.failed;
  const title = extras.stopped
    ? `Batch stopped (${extras.stopped})`
    : extras.pending > 0
      ? 'Batch sent; webhook results pending'
      : unfinished > 0
        ? `Batch finished; ${formatInteger(unfinished)} row(s) have no verdict`
        : 'Batch complete';
  lines.push(paint(term.color, 'bold', title));
  lines.push(
    `rows: ${num(summary.rows)}   distinct numbers: ${num(extras.uniqueNumbers)}   lookups sent this run: ` +
      `${num(extras.sent)}`,
  );
  const rate =
    extras.elapsedMs > 0 && extras.sent > 0
      ? ` in ${(extras.elapsedMs / 1000).toFixed(1)}s (${Math.round((extras.sent * 1000) / extras.elapsedMs)}/s)`
      : '';
  lines.push(
    `credits used: ${num(extras.creditsTotal)} for this batch, ${num(extras.creditsThisRun)} in this run${rate}`,
  );
  // Not added to the credits (the service's answer, with its cost, never came): said beside them, as `dnc usage
  // --reconcile` does.
  if (extras.unansweredSends) {
    lines.push(
      `${num(extras.unansweredSends)} send(s) of an interrupted run got no answer and may have been charged ` +
        `(not in the credits above; \`dnc usage --reconcile\` compares with the service)`,
    );
  }
  if (extras.paidAgain) lines.push(paidAgainLine(extras.paidAgain));
  const out = [`${lines.join('\n')}\n`, byResult, byCountry];
  const notes: string[] = [];
  if (summary.emptyRows > 0) {
    notes.push(
      `${num(summary.emptyRows)} row(s) with no number${summary.phoneColumns > 1 ? ' in any phone column' : ''} ` +
        `(invalid, missing_number)`,
    );
  }
  const unknown = summary.unknownCountries;
  if (unknown.rows > 0) {
    const examples = unknown.examples.map((c) => `'${terminalSafe(c)}'`).join(', ');
    notes.push(
      `${num(unknown.rows)} row(s) name a country dnc does not understand (${examples}${unknown.more ? ', …' : ''}): ` +
        'their national-format numbers were not checked (invalid, unknown_country); write the country as an ISO ' +
        'code (IE, DE) or a calling code (+353), and run again',
    );
  }
  // The numbered columns say whose number they hold: the header's names, in --column order.
  if (summary.phoneColumns > 1) {
    notes.push('a row is callable only when none of its numbers is do_not_call, failed, pending or not_checked');
    notes.push(
      `phone columns: ${summary.phoneLabels.map((label, k) => `dnc_${k + 1}_* = ${terminalSafe(label)}`).join(', ')}`,
    );
  }
  if (notes.length > 0) out.push(`${notes.join('\n')}\n`);
  // Files' names are text from outside: each escaped whole, as every name dnc shows.
  const files = [
    ['output', summary.output],
    ['rows with a callable number (only callable numbers kept)', summary.callableOut],
    ['do-not-call rows', summary.suppressedOut],
    ['rows to review', summary.reviewOut],
    ['dial list', summary.dialOut],
    ['manifest', summary.manifest],
    ['journal', extras.journalPath],
  ].flatMap(([what, file]) => (file ? [`${what}: ${terminalSafe(file)}`] : []));
  out.push(`${files.join('\n')}\n`);
  return out.join('\n');
}

/** What the dry-run table shows: the use case's findings, flattened. */
export type DryRunReport = DryRunFindings['result'] & Pick<DryRunFindings, 'costs' | 'invalidSamples' | 'maxCredits'>;

export function renderDryRun(r: DryRunReport, term: Terminal): string {
  // As in the summary: separators in the lines, plain integers in the table when piped.
  const num = formatInteger;
  const cell = (n: number) => (term.tty ? formatInteger(n) : String(n));
  const lines: string[] = [];
  lines.push(paint(term.color, 'bold', 'Dry run: nothing was sent'));
  lines.push(
    `rows: ${num(r.rows)}   distinct numbers: ${num(r.unique_numbers)}   rows with an invalid number: ` +
      `${num(r.invalid_rows)}${r.empty_rows > 0 ? `   rows with no number: ${num(r.empty_rows)}` : ''}`,
  );
  // The message quotes the CSV cell: its control characters are escaped.
  for (const s of r.invalidSamples)
    lines.push(`  ${s.where ?? describeRecordAt(s.line, s.record)}: ${terminalSafe(s.message)}`);
  if (r.invalid_rows > r.invalidSamples.length)
    lines.push(`  … and ${num(r.invalid_rows - r.invalidSamples.length)} more`);
  const resume = r.resuming;
  if (resume) {
    const lowerBound = r.unknown_cost_countries.length > 0;
    const notes = [
      ...(resume.pending > 0
        ? [`${num(resume.pending)} webhook lookup(s) pending (\`dnc listen\` receives them)`]
        : []),
      ...(resume.unanswered > 0
        ? [
            resume.resend_unanswered
              ? `${num(resume.unanswered)} number(s) an interrupted run sent without an answer are sent again ` +
                `(--resend-unanswered: each may be charged twice)`
              : `${num(resume.unanswered)} number(s) an interrupted run sent without an answer may have been ` +
                `charged and are not sent again (--resend-unanswered sends them)`,
          ]
        : []),
      ...(resume.not_sent > 0 ? [`${num(resume.not_sent)} without a verdict would still not be sent (see below)`] : []),
    ];
    lines.push(
      `resuming ${terminalSafe(resume.journal)}: ${num(resume.with_verdict)} of ${num(resume.numbers)} numbers ` +
        `already have a verdict; ${num(resume.to_look_up)} to look up, ` +
        `${lowerBound ? 'at least' : 'at most'} ${num(r.estimated_credits)} ` +
        `credits${notes.length > 0 ? `; ${notes.join('; ')}` : ''}`,
    );
    lines.push(
      `this batch has used ${num(resume.credits_spent)} credits so ` +
        `far${
          resume.unanswered_sends > 0
            ? `, and ${num(resume.unanswered_sends)} send(s) of an interrupted ` +
              `run got no answer and may have been charged`
            : ''
        }`,
    );
  }
  const table = renderTable(
    {
      head: ['country', resume ? 'to look up' : 'numbers', 'credits each', 'estimated credits'],
      rows: Object.entries(r.by_country).map(([country, n]) => {
        if (r.webhook_required_countries.includes(country))
          return [country || '(none)', n, '-', 'not sent: needs --webhook-url'];
        if (r.unsupported_countries.includes(country))
          return [country || '(none)', n, '-', 'not sent: the service does not cover it'];
        const cost = r.costs.get(country);
        return [
          country || '(none)',
          n,
          cost ?? 'unknown',
          cost === undefined ? `≥ ${cell(n * UNKNOWN_COST_FLOOR)}` : cost * n,
        ];
      }),
      align: ['left', 'right', 'right', 'right'],
    },
    term,
  );
  const tail: string[] = [];
  const estimate =
    r.unknown_cost_countries.length === 0
      ? `estimated cost: ${num(r.estimated_credits)} credits`
      : `estimated cost: at least ${num(r.estimated_credits)} credits (${r.unknown_cost_countries.join(', ')} ` +
        `counted at ${UNKNOWN_COST_FLOOR} credit a number: a country's cost is learned from X-Credit-Cost on a ` +
        `real run)`;
  tail.push(estimate);
  if (r.balance) tail.push(`balance: ${num(r.balance.credits_remaining)} / ${num(r.balance.credit_limit)}`);
  else tail.push('balance: not available');
  if (r.maxCredits !== null)
    tail.push(
      `--max-credits: ${num(r.maxCredits)}${resume ? ' (counting the credits this batch has used so far)' : ''}`,
    );
  return `${lines.join('\n')}\n${table}${tail.join('\n')}\n`;
}
