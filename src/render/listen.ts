// What `dnc listen` shows: the status line while it receives, each refusal, failure, conflict and lost lookup, and
// the summary (text, or the --json document) when it ends.
import type { Context } from '../context.js';
import type { createProgress } from '../io.js';
import type { ListenEvent, ListenOptions, ListenRunResult, LostLookup } from '../listen/run.js';
import type { ListenStatus } from '../listen/session.js';
import { withoutCredentials } from '../redact.js';
import { formatInteger } from '../text/numbers.js';
import { terminalSafe } from '../text/terminal-safe.js';

type Progress = Awaited<ReturnType<typeof createProgress>>;

/** Refusal lines shown per minute; beyond, they are counted (a flood must not drown the terminal). */
export const REFUSALS_SHOWN_PER_MINUTE = 20;

const clock = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/** The counts part of a status line (what changes when pushes arrive). */
export function statusCounts(s: ListenStatus): string {
  const n = formatInteger;
  const parts = [
    `received ${n(s.stored)}`,
    `duplicates ${n(s.duplicates)}`,
    `orphans ${n(s.orphans)}`,
    `pending ${n(s.pending)}`,
  ];
  if (s.unsent > 0) parts.push(`not sent yet ${n(s.unsent)}`);
  if (s.lost > 0) parts.push(`lost ${n(s.lost)}`);
  if (s.conflicts > 0) parts.push(`CONFLICTS ${n(s.conflicts)}`);
  if (s.rejected > 0) parts.push(`refused ${n(s.rejected)}`);
  if (s.storeFailures > 0) parts.push(`store failures ${n(s.storeFailures)}`);
  return parts.join(' · ');
}

export function statusLine(s: ListenStatus, now: Date): string {
  let line = statusCounts(s);
  if (s.oldest) {
    const left = s.oldest.deadline.getTime() - now.getTime();
    const due = left > 0 ? `in ${duration(left)}` : `${duration(-left)} ago`;
    line +=
      ` · oldest pending ${s.oldest.phoneNumber} since ${clock(s.oldest.receivedAt)}, 24 h deadline ` +
      `${clock(s.oldest.deadline)} (${due})`;
  }
  return line;
}

function lostLine(l: LostLookup): string {
  return (
    `lost: ${l.phoneNumber} (${l.country}) correlation id ${l.correlationId}: receipt at ${clock(l.receivedAt)}, ` +
    `no push by its 24 h deadline ${clock(l.deadline)}; quote the correlation id to the service's support`
  );
}

/**
 * A flood of refusals must not drown the terminal: the first ones of each minute are shown, the rest counted.
 * Refusals on the secret push path have their own allowance: a flood of cheap 404s elsewhere must not hide them
 * (someone who knows the path is what an operator most needs to see).
 */
function refusalThrottle(ctx: Context, alert: (line: string) => void, what: string) {
  const state = { windowStart: -Infinity, shown: 0, hidden: 0 };
  const flush = () => {
    if (state.hidden > 0) {
      const kept =
        what === 'on the push path'
          ? ' (those refused with a 4xx are kept in the journal: dnc trace ID; those answered 503 are retried ' +
            'by the service)'
          : '';
      alert(`… and ${formatInteger(state.hidden)} more refused request(s) ${what} not shown${kept}`);
    }
    state.hidden = 0;
  };
  const show = (line: string) => {
    const t = ctx.now().getTime();
    if (t - state.windowStart >= 60_000) {
      flush();
      state.windowStart = t;
      state.shown = 0;
    }
    if (state.shown < REFUSALS_SHOWN_PER_MINUTE) {
      state.shown++;
      alert(line);
    } else state.hidden++;
  };
  // Called with each status (every second): a count held back is shown once its minute is over.
  const tick = () => {
    if (state.hidden > 0 && ctx.now().getTime() - state.windowStart >= 60_000) {
      flush();
      state.windowStart = -Infinity;
    }
  };
  return { show, flush, tick };
}

/** Where the listener listens and how that agrees with the batch's webhook URL, said when it starts. */
function listeningLines(
  e: Extract<ListenEvent, { type: 'listening' }>,
  o: ListenOptions,
  note: (line: string) => void,
) {
  note(`dnc listen: receiving webhook results for ${o.results}`);
  // Printed once: the path is the secret (pushes are unsigned), so it is not repeated in status lines.
  const from =
    e.from === 'batch'
      ? "; it is the batch's webhook path"
      : e.from === 'random'
        ? '; generated: use it in the webhook URL'
        : '';
  note(
    `  listening on ${e.address.url} (pushes only on this path)${from}; every other path gets 404; health ` +
      `check ${e.base}/healthz`,
  );
  if (e.batchWebhookUrl) note(`  the batch sent webhook_url ${withoutCredentials(e.batchWebhookUrl)}`);
  if (e.suggestedPath) {
    note(
      `  warning: --path ${e.pushPath} is guessable and pushes are not signed; a long random path (e.g. ` +
        `${e.suggestedPath}) keeps forgers out`,
    );
  }
  if (e.batchPath) {
    note(
      `  note: --path ${e.pushPath} differs from the batch's webhook path ${e.batchPath}; fine if the ` +
        `proxy rewrites it, otherwise pushes get 404 and are lost`,
    );
  }
}

/**
 * Shows the run's events on stderr: status on the spinner (piped: a line when the counts changed, at most every
 * 5 s, or every 10 min); refusals, store and render failures, conflicts and lost lookups even with --quiet.
 */
export function showListenEvents(ctx: Context, o: ListenOptions, progress: Progress) {
  let lastCounts = '';
  let lastPrinted = -Infinity;
  const printStatus = (s: ListenStatus) => {
    const t = ctx.now().getTime();
    const counts = statusCounts(s);
    if (ctx.io.stderrIsTTY || (counts !== lastCounts && t - lastPrinted >= 5_000) || t - lastPrinted >= 600_000) {
      progress.update(statusLine(s, ctx.now()));
      lastCounts = counts;
      lastPrinted = t;
    }
  };
  const note = (line: string) => progress.info(line);
  const alert = (line: string) => (ctx.quiet ? ctx.warn(line) : progress.info(line));
  const onPushPath = refusalThrottle(ctx, alert, 'on the push path');
  const elsewhere = refusalThrottle(ctx, alert, 'elsewhere');
  const flushRefusals = () => {
    onPushPath.flush();
    elsewhere.flush();
  };
  let pushPath: string | undefined;
  const event = (e: ListenEvent): void => {
    switch (e.type) {
      case 'info':
        return note(e.text);
      case 'warning':
        return alert(e.text);
      case 'debug':
        return ctx.debug(e.text);
      case 'listening':
        pushPath = e.pushPath;
        return listeningLines(e, o, note);
      case 'status':
        onPushPath.tick();
        elsewhere.tick();
        return printStatus(e.status);
      case 'push': {
        const p = e.push;
        if (p.conflict) {
          // Pushes are unsigned: two verdicts for one lookup mean someone forged one. Never quiet, not even with
          // --quiet.
          ctx.warn(
            `warning: conflicting pushes for ${terminalSafe(p.phoneNumber)} (correlation id ` +
              `${terminalSafe(p.correlationId)}): a second, different verdict arrived; ` +
              `the row is now failed (conflicting_pushes), never callable. Both pushes are kept: dnc trace ` +
              `${terminalSafe(p.correlationId)}`,
          );
          return;
        }
        if (!ctx.verbose) return;
        const verdict = p.status === 'succeeded' ? 'succeeded' : `failed (${p.errorCode})`;
        const tag = p.duplicate ? ' · duplicate, ignored' : p.orphan ? ' · orphan: unknown correlation id, kept' : '';
        return ctx.debug(
          `push ${p.correlationId} ${p.phoneNumber} ${verdict} · stored and answered 200 in ` +
            `${p.latencyMs.toFixed(1)} ms${tag}`,
        );
      }
      case 'refused': {
        const r = e.refusal;
        const who = r.remoteAddress ? ` from ${r.remoteAddress}` : '';
        // 503: the orphan cap is reached; nothing is lost (the service retries), but someone may be flooding the
        // listener.
        const tag = r.status === 503 ? 'warning: ' : '';
        // The push path is the secret (pushes are unsigned): printed once at start, not in every refusal.
        const [requestPath = '', query] = r.path.split('?', 2);
        const secret = pushPath !== undefined && requestPath === pushPath;
        const where = secret ? `the push path${query !== undefined ? ' (with a query)' : ''}` : terminalSafe(r.path);
        return (secret ? onPushPath : elsewhere).show(
          `${tag}refused ${terminalSafe(r.method)} ${where}${who}: ${r.status} ${terminalSafe(r.reason)}`,
        );
      }
      case 'malformed-request':
        return elsewhere.show(
          `refused a malformed HTTP request${e.remoteAddress ? ` from ${e.remoteAddress}` : ''}: ${e.status} ` +
            `${terminalSafe(e.message)}`,
        );
      case 'store-failed': {
        const f = e.failure;
        const what =
          f.count > 0
            ? `could not store ${formatInteger(f.count)} push(es) (answered 503; the service retries them)`
            : 'could not read the journal';
        return alert(`warning: ${what}: ${f.error.message}`);
      }
      case 'lost':
        return alert(lostLine(e.lookup));
      case 'reconciled':
        return ctx.debug(
          `applied ${formatInteger(e.correlationIds.length)} push(es) that had arrived before the batch ` +
            `recorded their receipt`,
        );
      case 'rendered':
        return ctx.debug(`wrote ${o.results} in ${e.durationMs.toFixed(0)} ms`);
      case 'render-failed':
        return alert(`warning: could not write ${o.results}: ${e.error.message}${e.final ? '' : ' (retrying)'}`);
      case 'manifest-failed':
        return alert(`warning: could not rewrite the manifest: ${e.error.message}`);
      case 'unanchored':
        return alert(
          `warning: the results are not anchored in the team store (${e.reason}): \`dnc verify\` on another ` +
            'machine will call them unproven',
        );
      case 'stopping':
        if (!e.force)
          note('stopping: no new connections; pushes in progress are being stored (Ctrl-C again to cut them off)');
        return;
    }
  };
  return { event, flush: flushRefusals };
}

/** The --json document of a run that ended. */
export function listenSummaryJson(o: Pick<ListenOptions, 'results'>, r: ListenRunResult): string {
  const { final, byResult } = r;
  return JSON.stringify({
    results: o.results,
    url: r.address.url,
    received: final.stored,
    duplicates: final.duplicates,
    orphans: final.orphans,
    reconciled: final.reconciled,
    conflicts: final.conflicts,
    refused: final.rejected,
    over_capacity: final.overCapacity,
    store_failures: final.storeFailures,
    pending: final.pending,
    lost: r.lost.map((l) => ({
      correlation_id: l.correlationId,
      phone_number: l.phoneNumber,
      country: l.country,
      received_at: l.receivedAt.toISOString(),
      deadline: l.deadline.toISOString(),
    })),
    results_by_kind: byResult,
    stopped_reason: r.kind === 'done' ? 'done' : 'interrupted',
  });
}

/** The closing lines on stderr: the counts, the lost lookups, what a rerun receives. */
export function listenEndLines(o: Pick<ListenOptions, 'results'>, r: ListenRunResult): string[] {
  const { final, byResult } = r;
  // Rows of OUTPUT by result (a "pending" here counts rows, the status's counts lookups): labelled as rows.
  const kinds = byResult
    ? ' · rows: ' +
      Object.entries(byResult)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${formatInteger(n)}`)
        .join(', ')
    : '';
  return [
    `${r.kind === 'done' ? 'done' : 'stopped'}: ${statusCounts(final)}${kinds}` +
      (byResult ? ` · ${o.results} written` : ''),
    ...(r.lost.length > 0
      ? [`${formatInteger(r.lost.length)} lookup(s) lost (listed above with their correlation ids)`]
      : []),
    ...(r.kind === 'interrupted' && r.interrupted
      ? [
          `${formatInteger(final.pending)} lookup(s) still pending: run the same dnc listen again to receive them ` +
            `(the service retries pushes for up to 10 attempts)`,
        ]
      : []),
  ];
}
