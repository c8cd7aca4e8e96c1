// `dnc trace`: everything this machine knows about one lookup (by correlation id) or one number (every lookup of it),
// as a support agent needs it quoted.
import path from 'node:path';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ExitCode } from '../errors.js';
import type { TracedLookup } from '../trace/trace.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import { terminalSafe } from '../text/terminal-safe.js';

const HELP = `
Searches, offline: the history of \`dnc check\` (the last 1,000 checks within 90 days, in
$XDG_STATE_HOME/dnc/checks.sqlite or ~/.local/state/dnc/checks.sqlite), every batch journal
\`dnc batch\` registered there (journals.json), and any --journal given.

Given a phone number instead (E.164, or national with --country), it lists every lookup of that
number found there, and the batches it was in (sent or not).

Examples:
  dnc trace 0b7c1d2e-5f60-4a8b-9c3d-2e1f0a9b8c7d
  dnc trace +12025550123
  dnc trace "020 7946 0123" --country GB
  dnc trace 0b7c1d2e-5f60-4a8b-9c3d-2e1f0a9b8c7d --journal leads.results.csv.journal.sqlite --json`;

export function registerTrace(program: Command, host: CommandHost): void {
  const command = program
    .command('trace')
    .description(
      'find a lookup by correlation id, or every lookup of a phone number, in local journals and check history: ' +
        'number, times, receipt, pushes, result, credits',
    )
    .argument(
      '<correlation-id|number>',
      'the correlation id (dnc_correlation_id, or the one `dnc check` printed), or a phone number',
    )
    .option('--country <cc>', 'region of a phone number in national format, e.g. US or GB')
    .option(
      '--journal <path...>',
      'also search these batch journals (OUTPUT.csv.journal.sqlite), or the journal of these outputs',
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) =>
    showTrace(
      ctx,
      cmd.args[0]!.trim(),
      ((cmd.opts() as { journal?: string[] }).journal ?? []).map((j) => path.resolve(ctx.cwd, j)),
      (cmd.opts() as { country?: string }).country,
    ),
  );
}

async function showTrace(ctx: Context, given: string, journals: string[], country?: string): Promise<number> {
  const { runTrace } = await import('../trace/run.js');
  const { query, found } = await runTrace({ given, journals, country }, ctx);
  if (ctx.json) {
    const key = 'e164' in query ? { phone_number: query.e164 } : { correlation_id: query.correlationId };
    writeLine(ctx.io.stdout, JSON.stringify({ ...key, found: found.map(traceJson) }));
    return ExitCode.OK;
  }
  found.forEach((t, i) => {
    if (i > 0) writeLine(ctx.io.stdout, '');
    // Pushes and answers came from outside: their control characters are escaped.
    for (const line of traceLines(t)) writeLine(ctx.io.stdout, terminalSafe(line));
  });
  return ExitCode.OK;
}

function traceJson(t: TracedLookup) {
  return {
    source: t.source,
    where: t.where,
    correlation_id: t.correlationId,
    phone_number: t.phoneNumber,
    country: t.country,
    service: t.service,
    requested_at: t.requestedAt,
    reused_at: t.reusedAt ?? null,
    reused_note: t.reusedNote ?? null,
    answered_at: t.answeredAt,
    mode: t.mode,
    result: t.result,
    error_code: t.errorCode,
    checked_at: t.checkedAt,
    dnc_list_source: t.listSource,
    http_status: t.httpStatus,
    credits: t.credits,
    answer: t.answer,
    rows: t.rows === undefined ? undefined : t.rows === null ? null : t.rows.rows,
    more_rows: t.rows?.more,
    pushes: t.pushes.map((p) => ({
      received_at: p.receivedAt,
      outcome: p.outcome,
      reason: p.reason,
      peer: p.peer,
      duplicates: p.duplicates,
      body: p.body,
    })),
    batch: t.batch,
  };
}

/** Where the number stood in the list: line and phone column of each row of the results holding it. */
function rowsText(rows: TracedLookup['rows']): string {
  if (!rows) return 'not found (the results file is not where the journal says, or cannot be read)';
  if (rows.rows.length === 0) return 'none of the results holds it now';
  const named = rows.rows.map((r) => `line ${r.line} (${r.column})`).join(', ');
  return rows.more ? `${named}, and more` : named;
}

/** Why a lookup has no request time: never sent at all, or a journal from before dnc recorded it. */
function notRequested(t: TracedLookup): string {
  if (t.source === 'batch' && !t.correlationId && t.credits === 0)
    return t.result === 'queued'
      ? 'never sent (still to look up: not_checked in the results; a rerun sends it)'
      : `never sent (${t.result}${t.errorCode ? `, ${t.errorCode}` : ''})`;
  return 'not recorded (journal made by an older dnc)';
}

function traceLines(t: TracedLookup): string[] {
  const f = (label: string, value: string) => `  ${label.padEnd(15)} ${value}`;
  const lines = [t.correlationId ? `correlation id ${t.correlationId}` : `${t.phoneNumber}: no lookup sent`];
  lines.push(f('found in', `${t.source === 'check' ? 'check history' : 'batch journal'} ${t.where}`));
  if (t.batch) lines.push(f('batch', `${t.batch.input} → ${t.batch.output}`));
  if (t.rows !== undefined) lines.push(f('rows', rowsText(t.rows)));
  lines.push(f('number', `${t.phoneNumber}${t.country ? ` (${t.country})` : ''}`));
  lines.push(f('service', t.service ?? 'not recorded'));
  lines.push(f('mode', t.mode === 'webhook' ? 'webhook (202 receipt, result pushed)' : 'synchronous'));
  if (t.reusedAt) {
    // The verdict of an earlier lookup (listed with it when its check or batch is on this machine).
    // The row's own note says whose lookup it was when a team colleague's (its machine, and the role the store
    // stamped); a verdict of this machine's cache says the same without a name.
    lines.push(
      f(
        'reused',
        t.reusedNote
          ? `${t.reusedAt}: the verdict of the earlier lookup ${t.correlationId}; ` +
              t.reusedNote.slice('reused: '.length)
          : `${t.reusedAt}: the verdict of the earlier lookup ${t.correlationId} (checked ` +
              `${t.checkedAt ?? 'at an unrecorded time'}), taken from the results cache (--reuse-within); no ` +
              `request sent, no credits`,
      ),
    );
  } else lines.push(f('requested at', t.requestedAt ?? notRequested(t)));
  lines.push(f(t.source === 'check' ? 'answered at' : 'recorded at', t.answeredAt ?? 'not recorded'));
  lines.push(
    f(
      'result',
      `${t.result}${t.errorCode ? ` (${t.errorCode})` : ''}${t.httpStatus !== null ? `, HTTP ${t.httpStatus}` : ''}`,
    ),
  );
  if (t.checkedAt) lines.push(f('checked at', `${t.checkedAt} (the service's timestamp)`));
  if (t.listSource) lines.push(f('register', t.listSource));
  lines.push(f('credits', `${t.credits}${t.result === 'pending' || t.result === 'started' ? ' held' : ''}`));
  if (t.mode === 'webhook') {
    if (t.pushes.length === 0) lines.push(f('pushes', 'none received'));
    for (const p of t.pushes) {
      const b = p.body as { status?: string; error_code?: string | null; do_not_call?: unknown } | null;
      const verdict =
        b?.status === 'succeeded' ? ` do_not_call=${String(b.do_not_call)}` : b?.error_code ? ` (${b.error_code})` : '';
      const from = p.peer ? ` from ${p.peer}` : '';
      lines.push(
        f(
          'push',
          `${p.receivedAt} ${b?.status ?? '?'}${verdict}${from}, ` +
            `${p.outcome}${p.reason ? `: ${p.reason}` : ''}${
              p.duplicates > 0 ? `, ${p.duplicates} duplicate ` + `deliveries ignored` : ''
            }`,
        ),
      );
    }
  }
  lines.push(f('answer', JSON.stringify(t.answer)));
  return lines;
}
