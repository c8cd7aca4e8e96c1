// `dnc listen`: receives the webhook pushes of a batch, stores each before acknowledging it, and writes results into OUTPUT.csv.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { parseIntegerOption } from '../config.js';
import { processLockDeps, type Context } from '../context.js';
import { ExitCode, inputError, usageError, type DncError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import type { ListenSession, ListenStatus, PendingLookup } from '../listen/session.js';
import type { JournalPushStore } from '../listen/journal-store.js';
import type { CommandHost } from '../main.js';
import { terminalSafe } from '../render/terminal-safe.js';
import { DEFAULT_CLOCK_SKEW_MS } from '../wire/push-rules.js';

export const DEFAULT_LISTEN_PORT = 8787;
/** Refusal lines shown per minute; beyond, they are counted (a flood must not drown the terminal). */
export const REFUSALS_SHOWN_PER_MINUTE = 20;

interface RawListenOptions {
  results: string;
  port?: string;
  host?: string;
  path?: string;
  exitWhenDone?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  clockSkew?: string;
}

export interface ListenOptions {
  results: string;
  port: number;
  host: string;
  /** Serve pushes only here; undefined: the batch's webhook path, or a generated one (see defaultPushPath). */
  path: string | undefined;
  exitWhenDone: boolean;
  tls: { certFile: string; keyFile: string } | undefined;
  /** How far a push's timestamp may stray outside [request, arrival], ms. */
  skewMs: number;
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

/** 127.0.0.0/8, ::1 and localhost: only this machine can connect. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

/** A path no one guesses: a segment of at least 16 characters from a URL-safe alphabet (≥ 96 bits when random). */
export function isUnguessablePath(p: string): boolean {
  return p.split('/').some((segment) => /^[A-Za-z0-9_~.-]{16,}$/.test(segment));
}

/**
 * Where pushes are served when --path is not given: the path of the batch's webhook URL when it is unguessable
 * (the service pushes there; any other path would turn every push into a permanent 404), a fresh random one when
 * the batch sent none. A guessable batch path is refused: accepting it must be a choice (--path).
 */
export function defaultPushPath(batchWebhookUrl: string | null, random: () => string): { path: string; from: 'batch' | 'random' } {
  if (batchWebhookUrl) {
    const batchPath = new URL(batchWebhookUrl).pathname;
    if (isUnguessablePath(batchPath)) return { path: batchPath, from: 'batch' };
    throw usageError('E_GUESSABLE_PATH', `the batch's webhook path ${batchPath} is guessable, and pushes are not signed`, {
      hint: `serve it anyway with --path ${batchPath}, or run the batch again with a --webhook-url whose path is long and random (e.g. /hooks/${random().split('/').pop()})`,
    });
  }
  return { path: random(), from: 'random' };
}

/** Checks the flags (exit 2 on a bad one). */
export function parseListenOptions(o: RawListenOptions, cwd: string): ListenOptions {
  const port = o.port === undefined ? DEFAULT_LISTEN_PORT : parseIntegerOption('--port', o.port, 0, 65_535);
  const host = o.host ?? '127.0.0.1';
  if (host.trim() === '') throw usageError('E_USAGE', '--host must not be empty');
  if (o.path !== undefined && !/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(o.path)) {
    throw usageError('E_USAGE', `--path must be a URL path starting with /, without a query or spaces, got '${o.path}'`, {
      hint: 'e.g. --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A, the path of the --webhook-url given to the batch',
    });
  }
  if (o.path === undefined && !isLoopbackHost(host)) {
    // Pushes are unsigned: on an address others can reach, the path is the only secret between them and the results.
    throw usageError('E_USAGE', `--host ${host} is reachable from other machines: give the secret push path with --path`, {
      hint: "use the path of the batch's --webhook-url, e.g. --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A (long and random)",
    });
  }
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) {
    throw usageError('E_USAGE', '--tls-cert and --tls-key go together', { hint: 'pass both (PEM files) to serve HTTPS directly, or neither' });
  }
  return {
    results: path.resolve(cwd, o.results),
    port,
    host,
    path: o.path,
    exitWhenDone: o.exitWhenDone === true,
    tls: o.tlsCert !== undefined && o.tlsKey !== undefined ? { certFile: path.resolve(cwd, o.tlsCert), keyFile: path.resolve(cwd, o.tlsKey) } : undefined,
    skewMs: o.clockSkew === undefined ? DEFAULT_CLOCK_SKEW_MS : parseIntegerOption('--clock-skew', o.clockSkew, 0, 86_400) * 1000,
  };
}

export function registerListen(program: Command, host: CommandHost): void {
  const command = program
    .command('listen')
    .description("receive a batch's webhook results, store each before acknowledging it, and write them into OUTPUT.csv")
    .requiredOption('--results <file>', 'the batch output (OUTPUT.csv) whose pending lookups to receive')
    .option('--port <n>', `port to listen on (0: any free port; default ${DEFAULT_LISTEN_PORT})`)
    .option('--host <address>', 'address to bind (default 127.0.0.1: put a reverse proxy or tunnel in front)')
    .option('--path <path>', "serve pushes only on this (secret) path; default: the batch's webhook path, or a generated one")
    .option('--exit-when-done', 'exit 0 once no lookup of the batch is pending')
    .option('--tls-cert <file>', 'PEM certificate: serve HTTPS directly (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key for --tls-cert')
    .option('--clock-skew <seconds>', "how far a push's timestamp may fall outside [request, arrival] (default 300)")
    .addHelpText('after', EXAMPLES);
  host.action(command, async (ctx, cmd) => runListen(ctx, parseListenOptions(cmd.opts() as RawListenOptions, ctx.cwd)));
}

async function readPem(file: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw usageError('E_TLS_UNREADABLE', `cannot read ${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      hint: `${flag} takes a PEM file`,
      cause: err,
    });
  }
}

function listenError(err: unknown, o: ListenOptions): DncError | unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    return usageError('E_PORT_IN_USE', `port ${o.port} on ${o.host} is already in use`, {
      hint: 'is another dnc listen running? choose another --port (and point the proxy or tunnel at it)',
      cause: err,
    });
  }
  if (code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
    return usageError('E_CANNOT_LISTEN', `cannot listen on ${o.host}:${o.port}: ${code}`, {
      hint: code === 'EACCES' ? 'ports below 1024 need privileges; use a higher --port' : 'check --host: it must be an address of this machine',
      cause: err,
    });
  }
  if (o.tls && /PEM|key|cert|asn1|DECODER/i.test(String((err as Error).message))) {
    return usageError('E_TLS_INVALID', `cannot serve HTTPS with ${o.tls.certFile} and ${o.tls.keyFile}: ${(err as Error).message}`, {
      hint: 'both must be PEM files, the key matching the certificate',
      cause: err,
    });
  }
  return err;
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
  const parts = [`received ${s.stored}`, `duplicates ${s.duplicates}`, `orphans ${s.orphans}`, `pending ${s.pending}`];
  if (s.unsent > 0) parts.push(`not sent yet ${s.unsent}`);
  if (s.lost > 0) parts.push(`lost ${s.lost}`);
  if (s.conflicts > 0) parts.push(`CONFLICTS ${s.conflicts}`);
  if (s.rejected > 0) parts.push(`refused ${s.rejected}`);
  if (s.storeFailures > 0) parts.push(`store failures ${s.storeFailures}`);
  return parts.join(' · ');
}

export function statusLine(s: ListenStatus, now: Date): string {
  let line = statusCounts(s);
  if (s.oldest) {
    const left = s.oldest.deadline.getTime() - now.getTime();
    const due = left > 0 ? `in ${duration(left)}` : `${duration(-left)} ago`;
    line += ` · oldest pending ${s.oldest.phoneNumber} since ${clock(s.oldest.receivedAt)}, 24 h deadline ${clock(s.oldest.deadline)} (${due})`;
  }
  return line;
}

function lostLine(l: PendingLookup, expiryMs: number): string {
  return (
    `lost: ${l.phoneNumber} (${l.country}) correlation id ${l.correlationId}: receipt at ${clock(l.receivedAt)}, ` +
    `no push by its 24 h deadline ${clock(new Date(l.receivedAt.getTime() + expiryMs))}; quote the correlation id to the service's support`
  );
}


export async function runListen(ctx: Context, o: ListenOptions): Promise<number> {
  const [{ JournalPushStore: Store }, { acquireJournalLock }] = await Promise.all([import('../listen/journal-store.js'), import('../batch/journal.js')]);
  const journalPath = Store.pathFor(o.results);
  // No journal: listenLocked says so, with its hint.
  if (!existsSync(journalPath)) return listenLocked(ctx, o);
  // Held while listening: `dnc batch --restart` refuses to delete a journal pushes are being stored in.
  const lock = acquireJournalLock(journalPath, processLockDeps(), 'listen');
  try {
    return await listenLocked(ctx, o);
  } finally {
    lock.release();
  }
}

async function listenLocked(ctx: Context, o: ListenOptions): Promise<number> {
  const tls = o.tls ? { cert: await readPem(o.tls.certFile, '--tls-cert'), key: await readPem(o.tls.keyFile, '--tls-key') } : undefined;
  const [{ openListenJournal, JournalPushStore: Store }, { createListenSession, LOOKUP_EXPIRY_MS }, { lockHolder }, { randomPushPath }] = await Promise.all([
    import('../listen/journal-store.js'),
    import('../listen/session.js'),
    import('../batch/journal.js'),
    import('../listen/receiver.js'),
  ]);
  const journalPath = Store.pathFor(o.results);
  const journal: JournalPushStore = await openListenJournal(o.results, {
    now: () => ctx.now(),
    skewMs: o.skewMs,
    batchRunning: () => lockHolder(journalPath, processLockDeps()) !== null,
  });
  let pushPath: { path: string; from: 'flag' | 'batch' | 'random' };
  try {
    pushPath = o.path !== undefined ? { path: o.path, from: 'flag' } : defaultPushPath(journal.meta.options.webhookUrl, () => randomPushPath());
  } catch (err) {
    journal.close();
    throw err;
  }
  let session: ListenSession;
  try {
    session = createListenSession({
      journal,
      receiver: { host: o.host, port: o.port, path: pushPath.path, tls, skewMs: o.skewMs },
      exitWhenDone: o.exitWhenDone,
      now: () => ctx.now(),
    });
  } catch (err) {
    journal.close();
    throw listenError(err, o);
  }
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet, plainIntervalMs: 0 });
  let lastCounts = '';
  let lastPrinted = -Infinity;
  let lastByResult: Record<string, number> | null = null;
  const lost = new Map<string, PendingLookup>();
  const printStatus = (s: ListenStatus, force = false) => {
    const t = ctx.now().getTime();
    const counts = statusCounts(s);
    // On a terminal the spinner line is refreshed every second; piped, a line when the counts changed (at most every 5 s) or every 10 min.
    if (ctx.io.stderrIsTTY || force || (counts !== lastCounts && t - lastPrinted >= 5_000) || t - lastPrinted >= 600_000) {
      progress.update(statusLine(s, ctx.now()));
      lastCounts = counts;
      lastPrinted = t;
    }
  };
  const note = (line: string) => progress.info(line);
  // Refusals, store and render failures and lost lookups are shown with --quiet too (without a spinner then).
  const alert = (line: string) => (ctx.quiet ? ctx.warn(line) : progress.info(line));
  session.on('status', (s) => {
    if (refusals.hidden > 0 && ctx.now().getTime() - refusals.windowStart >= 60_000) {
      flushRefusals();
      refusals.windowStart = -Infinity;
    }
    printStatus(s);
  });
  session.on('push', (e) => {
    if (e.conflict) {
      // Pushes are unsigned: two verdicts for one lookup mean someone forged one. Never quiet, not even with --quiet.
      ctx.warn(
        `warning: conflicting pushes for ${terminalSafe(e.phoneNumber)} (correlation id ${terminalSafe(e.correlationId)}): a second, different verdict arrived; ` +
          `the row is now failed (conflicting_pushes), never callable. Both pushes are kept: dnc trace ${terminalSafe(e.correlationId)}`,
      );
      return;
    }
    if (!ctx.verbose) return;
    const verdict = e.status === 'succeeded' ? 'succeeded' : `failed (${e.errorCode})`;
    const tag = e.duplicate ? ' · duplicate, ignored' : e.orphan ? ' · orphan: unknown correlation id, kept' : '';
    ctx.debug(`push ${e.correlationId} ${e.phoneNumber} ${verdict} · stored and answered 200 in ${e.latencyMs.toFixed(1)} ms${tag}`);
  });
  // A flood of refusals must not drown the terminal: the first ones of each minute are shown, the rest counted.
  const refusals = { windowStart: -Infinity, shown: 0, hidden: 0 };
  const flushRefusals = () => {
    if (refusals.hidden > 0) alert(`… and ${refusals.hidden} more refused request(s) not shown (pushes refused on the push path are kept in the journal: dnc trace ID)`);
    refusals.hidden = 0;
  };
  const refusal = (line: string) => {
    const t = ctx.now().getTime();
    if (t - refusals.windowStart >= 60_000) {
      flushRefusals();
      refusals.windowStart = t;
      refusals.shown = 0;
    }
    if (refusals.shown < REFUSALS_SHOWN_PER_MINUTE) {
      refusals.shown++;
      alert(line);
    } else refusals.hidden++;
  };
  session.on('rejected', (e) => {
    const who = e.remoteAddress ? ` from ${e.remoteAddress}` : '';
    // 503: the orphan cap is reached; nothing is lost (the service retries), but someone may be flooding the listener.
    const tag = e.status === 503 ? 'warning: ' : '';
    refusal(`${tag}refused ${terminalSafe(e.method)} ${terminalSafe(e.path)}${who}: ${e.status} ${terminalSafe(e.reason)}`);
  });
  session.on('client-error', (e) => {
    refusal(`refused a malformed HTTP request${e.remoteAddress ? ` from ${e.remoteAddress}` : ''}: ${e.status} ${terminalSafe(e.error.message)}`);
  });
  session.on('store-failed', (e) => {
    const what = e.count > 0 ? `could not store ${e.count} push(es) (answered 503; the service retries them)` : 'could not read the journal';
    alert(`warning: ${what}: ${e.error.message}`);
  });
  session.on('lost', (list) => {
    for (const l of list) {
      lost.set(l.correlationId, l);
      alert(lostLine(l, LOOKUP_EXPIRY_MS));
    }
  });
  session.on('reconciled', (ids) => ctx.debug(`applied ${ids.length} push(es) that had arrived before the batch recorded their receipt`));
  const { manifestRewriter } = await import('../evidence/manifest.js');
  const manifest = manifestRewriter(journal.meta, journal.journal.path, () => ctx.now(), (err) => alert(`warning: could not rewrite the manifest: ${err.message}`));
  session.on('rendered', (e) => {
    manifest.request();
    lastByResult = e.byResult;
    ctx.debug(`wrote ${o.results} in ${e.durationMs.toFixed(0)} ms`);
  });
  session.on('render-failed', (e) => alert(`warning: could not write ${o.results}: ${e.error.message}${e.final ? '' : ' (retrying)'}`));

  let address;
  try {
    address = await session.start();
  } catch (err) {
    await session.stop().catch(() => undefined);
    throw listenError(err, o);
  }
  const base = address.url.slice(0, address.url.length - pushPath.path.length);
  note(`dnc listen: receiving webhook results for ${o.results}`);
  // Printed once: the path is the secret (pushes are unsigned), so it is not repeated in status lines.
  const from = pushPath.from === 'batch' ? "; it is the batch's webhook path" : pushPath.from === 'random' ? '; generated: use it in the webhook URL' : '';
  note(`  listening on ${address.url} (pushes only on this path)${from}; every other path gets 404; health check ${base}/healthz`);
  const batchUrl = journal.meta.options.webhookUrl;
  if (batchUrl) {
    const { withoutCredentials } = await import('../redact.js');
    note(`  the batch sent webhook_url ${withoutCredentials(batchUrl)}`);
  }
  if (pushPath.from === 'flag' && !isUnguessablePath(pushPath.path)) {
    note(`  warning: --path ${pushPath.path} is guessable and pushes are not signed; a long random path (e.g. ${randomPushPath()}) keeps forgers out`);
  }
  if (pushPath.from === 'flag' && batchUrl && new URL(batchUrl).pathname !== pushPath.path) {
    note(`  note: --path ${pushPath.path} differs from the batch's webhook path ${new URL(batchUrl).pathname}; fine if the proxy rewrites it, otherwise pushes get 404 and are lost`);
  }

  let interrupted = false;
  const stopped = new Promise<void>((resolve) => {
    const off = ctx.interrupts.on((count) => {
      interrupted = true;
      if (count === 1) note('stopping: no new connections; pushes in progress are being stored (Ctrl-C again to cut them off)');
      resolve();
      if (count > 1) {
        off();
        void session.stop({ force: true });
      }
    });
    void session.done.then(() => {
      off();
      resolve();
    });
  });
  await stopped;
  let final: ListenStatus;
  try {
    final = await session.stop();
  } finally {
    flushRefusals();
    progress.stop();
  }
  await manifest.settled();
  await (await import('../evidence/batch-evidence.js')).rememberVerdicts(ctx, ctx, journal.journal.path, journal.meta.serviceOrigin);
  if (session.renderError) {
    const e = session.renderError;
    throw inputError('E_OUTPUT_UNWRITABLE', `could not write ${o.results}: ${e.message}`, {
      hint: 'every push received is safe in the journal; fix the cause and run dnc listen again to write the file',
      cause: e,
    });
  }
  const done = final.pending === 0 && final.unsent === 0;
  const lostList = [...lost.values()];
  if (ctx.json) {
    writeLine(
      ctx.io.stdout,
      JSON.stringify({
        results: o.results,
        url: address.url,
        received: final.stored,
        duplicates: final.duplicates,
        orphans: final.orphans,
        reconciled: final.reconciled,
        conflicts: final.conflicts,
        refused: final.rejected,
        over_capacity: final.overCapacity,
        store_failures: final.storeFailures,
        pending: final.pending,
        lost: lostList.map((l) => ({
          correlation_id: l.correlationId,
          phone_number: l.phoneNumber,
          country: l.country,
          received_at: l.receivedAt.toISOString(),
          deadline: new Date(l.receivedAt.getTime() + LOOKUP_EXPIRY_MS).toISOString(),
        })),
        results_by_kind: lastByResult,
        stopped_reason: done ? 'done' : 'interrupted',
      }),
    );
  }
  const byResult = lastByResult
    ? ' · ' +
      Object.entries(lastByResult as Record<string, number>)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')
    : '';
  ctx.info(`${done ? 'done' : 'stopped'}: ${statusCounts(final)}${byResult}${lastByResult ? ` · ${o.results} written` : ''}`);
  if (lostList.length > 0) ctx.info(`${lostList.length} lookup(s) lost (listed above with their correlation ids)`);
  if (!done && interrupted) {
    ctx.info(`${final.pending} lookup(s) still pending: run the same dnc listen again to receive them (the service retries pushes for up to 10 attempts)`);
    return ExitCode.INTERRUPTED;
  }
  return ExitCode.OK;
}
