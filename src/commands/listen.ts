// `dnc listen`: receives the webhook pushes of a batch, stores each before acknowledging it, and writes results into
// OUTPUT.csv.
import path from 'node:path';
import type { Command } from 'commander';
import { integerOption, nonEmptyOption, parsedOption } from '../cli-options.js';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import type { ListenEvent, ListenOptions, ListenRunResult, LostLookup } from '../listen/run.js';
import type { ListenStatus } from '../listen/session.js';
import type { CommandHost } from './host.js';
import { withoutCredentials } from '../redact.js';
import { formatInteger } from '../text/numbers.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { DEFAULT_CLOCK_SKEW_MS } from '../service/answers.js';

export const DEFAULT_LISTEN_PORT = 8787;
/** Refusal lines shown per minute; beyond, they are counted (a flood must not drown the terminal). */
export const REFUSALS_SHOWN_PER_MINUTE = 20;

/** The flags as commander hands them over: the port and skew parsed, the host and path checked. */
interface ListenFlags {
  results: string;
  port?: number;
  host?: string;
  path?: string;
  exitWhenDone?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  clockSkew?: number;
}

const EXAMPLES = `
Examples:
  dnc listen --results calls.results.csv --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A   behind a reverse proxy or tunnel
  dnc listen --results calls.results.csv --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A --exit-when-done

Pushes are not signed, so they are served on one unguessable path only (by default the path of
the batch's --webhook-url, or a generated one, printed at start); every other path gets 404, and a
--host other than loopback needs --path. A push must match the lookup sent under its correlation
id (else 4xx, kept as evidence); two different verdicts for one lookup make its row failed
(conflicting_pushes). See docs/listen-security.md.

Each push is committed to the batch's journal (OUTPUT.csv.journal.sqlite) before it is answered
200; OUTPUT.csv is rewritten atomically at most once a second while pushes arrive, and on exit.`;

function hostFlag(raw: string, flag: string): string {
  if (raw.trim() === '') throw usageError('E_USAGE', `${flag} must not be empty`);
  return raw;
}

function pathFlag(raw: string, flag: string): string {
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(raw)) {
    throw usageError('E_USAGE', `${flag} must be a URL path starting with /, without a query or spaces, got '${raw}'`, {
      hint: 'e.g. --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A, the path of the --webhook-url given to the batch',
    });
  }
  return raw;
}

/** The flags as options (the checks that involve several of them are the use case's: src/listen/run.ts). */
export function parseListenOptions(o: ListenFlags, cwd: string): ListenOptions {
  return {
    results: path.resolve(cwd, o.results),
    port: o.port ?? DEFAULT_LISTEN_PORT,
    host: o.host ?? '127.0.0.1',
    path: o.path,
    exitWhenDone: o.exitWhenDone === true,
    tls:
      o.tlsCert !== undefined && o.tlsKey !== undefined
        ? { certFile: path.resolve(cwd, o.tlsCert), keyFile: path.resolve(cwd, o.tlsKey) }
        : undefined,
    unpairedTls: (o.tlsCert === undefined) !== (o.tlsKey === undefined),
    skewMs: o.clockSkew === undefined ? DEFAULT_CLOCK_SKEW_MS : o.clockSkew * 1000,
  };
}

export function registerListen(program: Command, host: CommandHost): void {
  const command = program
    .command('listen')
    .description(
      "receive a batch's webhook results, store each before acknowledging it, and write them into OUTPUT.csv",
    )
    .addOption(
      nonEmptyOption(
        '--results <file>',
        'the batch output (OUTPUT.csv) whose pending lookups to receive',
        'give the batch output, e.g. --results calls.results.csv',
      ).makeOptionMandatory(),
    )
    .addOption(
      integerOption('--port <n>', `port to listen on (0: any free port; default ${DEFAULT_LISTEN_PORT})`, 0, 65_535),
    )
    .addOption(
      parsedOption(
        '--host <address>',
        'address to bind (default 127.0.0.1: put a reverse proxy or tunnel in front)',
        hostFlag,
      ),
    )
    .addOption(
      parsedOption(
        '--path <path>',
        "serve pushes only on this (secret) path; default: the batch's webhook path, or a generated one",
        pathFlag,
      ),
    )
    .option('--exit-when-done', 'exit 0 once no lookup of the batch is pending')
    .option('--tls-cert <file>', 'PEM certificate: serve HTTPS directly (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key for --tls-cert')
    .addOption(
      integerOption(
        '--clock-skew <seconds>',
        "how far a push's timestamp may fall outside [request, arrival] (default 300)",
        0,
        86_400,
      ),
    )
    .addHelpText('after', EXAMPLES);
  host.action(command, async (ctx, cmd) => runListen(ctx, parseListenOptions(cmd.opts<ListenFlags>(), ctx.cwd)));
}

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
function statusCounts(s: ListenStatus): string {
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

export async function runListen(ctx: Context, o: ListenOptions): Promise<number> {
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet, plainIntervalMs: 0 });
  const show = showEvents(ctx, o, progress);
  let result: ListenRunResult;
  try {
    const { runListenJob } = await import('../listen/run.js');
    result = await runListenJob({ ...o, secrets: ctx.secrets }, ctx.deps({ onEvent: show.event }));
  } finally {
    show.flush();
    progress.stop();
  }
  return finish(ctx, o, result);
}

/**
 * Shows the run's events on stderr: status on the spinner (piped: a line when the counts changed, at most every
 * 5 s, or every 10 min); refusals, store and render failures, conflicts and lost lookups even with --quiet.
 */
function showEvents(ctx: Context, o: ListenOptions, progress: Awaited<ReturnType<typeof createProgress>>) {
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
  // A flood of refusals must not drown the terminal: the first ones of each minute are shown, the rest counted.
  // Refusals on the secret push path have their own allowance: a flood of cheap 404s elsewhere must not hide them
  // (someone who knows the path is what an operator most needs to see).
  const throttle = (what: string) => {
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
  };
  const onPushPath = throttle('on the push path');
  const elsewhere = throttle('elsewhere');
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
      case 'listening': {
        pushPath = e.pushPath;
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
        return;
      }
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
      case 'stopping':
        if (!e.force)
          note('stopping: no new connections; pushes in progress are being stored (Ctrl-C again to cut them off)');
        return;
    }
  };
  return { event, flush: flushRefusals };
}

/** The run's summary (and --json document), and the exit code: 130 when interrupted with lookups still pending. */
function finish(ctx: Context, o: ListenOptions, r: ListenRunResult): number {
  const { final, byResult } = r;
  if (ctx.json) {
    writeLine(
      ctx.io.stdout,
      JSON.stringify({
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
      }),
    );
  }
  // Rows of OUTPUT by result (a "pending" here counts rows, the status's counts lookups): labelled as rows.
  const kinds = byResult
    ? ' · rows: ' +
      Object.entries(byResult)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${formatInteger(n)}`)
        .join(', ')
    : '';
  ctx.info(
    `${r.kind === 'done' ? 'done' : 'stopped'}: ` +
      `${statusCounts(final)}${kinds}${byResult ? ` · ${o.results} written` : ''}`,
  );
  if (r.lost.length > 0)
    ctx.info(`${formatInteger(r.lost.length)} lookup(s) lost (listed above with their correlation ids)`);
  if (r.kind === 'interrupted' && r.interrupted) {
    ctx.info(
      `${formatInteger(final.pending)} lookup(s) still pending: run the same dnc listen again to receive them ` +
        `(the service retries pushes for up to 10 attempts)`,
    );
    return ExitCode.INTERRUPTED;
  }
  return ExitCode.OK;
}
