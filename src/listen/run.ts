// The listen use case: locks the batch's journal, serves its pushes on one path, keeps OUTPUT and its manifest
// current, and returns how the run ended. It never prints: it emits typed events, and `src/commands/listen.ts`
// shows them and picks the exit code.
import { existsSync } from 'node:fs';
import { keptFolder } from '../paths.js';
import { readFile } from 'node:fs/promises';
import type { Interrupts } from '../io.js';
import { type DncError, inputError, usageError } from '../errors.js';
import {
  acquireJournalLock,
  lockHolder,
  type BatchJournal,
  type BatchMeta,
  type LockDeps,
} from '../journal/journal.js';
import type { KeyTrace } from '../key-trace.js';
import { claimLeaseMs } from '../stores/lease.js';
import { TeamClaims, sharedAnswerOf } from '../stores/team-claims.js';
import { adoptPushedVerdicts } from '../batch/team-adoption.js';
import {
  createListenSession,
  LOOKUP_EXPIRY_MS,
  type ListenSession,
  type ListenStatus,
  type PendingLookup,
} from './session.js';
import { JournalPushStore as Store, openListenJournal } from './journal-store.js';
import { isLoopbackHost } from './loopback.js';
import { randomPushPath } from './receiver.js';
import type { ListeningAddress, PushEvent, RejectedEvent, StoreFailedEvent } from './receiver-types.js';
import { rememberVerdicts, scopeOf } from '../evidence/batch-evidence.js';
import { manifestRewriter } from '../evidence/manifest.js';
import { anchorEverywhere } from '../evidence/anchor.js';
import { callingWindowsOf } from '../results/calling-cells.js';

/** What `dnc listen` was asked to do (the command has checked the flags). */
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
  /** The API key and other secrets: masked in every push before it is kept. */
  secrets?: readonly string[];
  /** One of --tls-cert and --tls-key was given without the other: refused (exit 2) after the host is checked. */
  unpairedTls?: boolean;
}

/** Where the push path came from: --path, the batch's --webhook-url, or generated for this run. */
export type PushPathSource = 'flag' | 'batch' | 'random';

/** A pending lookup past its 24 h deadline without a push. */
export type LostLookup = PendingLookup & { deadline: Date };

/** What the listener says while it runs; the command decides how each is shown. */
export type ListenEvent =
  | { type: 'info' | 'warning' | 'debug'; text: string }
  | {
      type: 'listening';
      address: ListeningAddress;
      /** The base URL without the push path, e.g. for /healthz. */
      base: string;
      pushPath: string;
      from: PushPathSource;
      /** The webhook URL the batch sent, if any (may carry credentials: show it without them). */
      batchWebhookUrl: string | null;
      /**
       * --path was given and is short or predictable (forgers could find it): a random one to use instead; else null.
       */
      suggestedPath: string | null;
      /** --path differs from the path of the batch's webhook URL (which is then given). */
      batchPath: string | null;
    }
  | { type: 'status'; status: ListenStatus }
  | { type: 'push'; push: PushEvent }
  | { type: 'refused'; refusal: RejectedEvent }
  | { type: 'malformed-request'; status: number; message: string; remoteAddress: string | undefined }
  | { type: 'store-failed'; failure: StoreFailedEvent }
  | { type: 'lost'; lookup: LostLookup }
  | { type: 'reconciled'; correlationIds: string[] }
  | { type: 'rendered'; durationMs: number; byResult: Record<string, number> }
  | { type: 'render-failed'; error: Error; final: boolean }
  | { type: 'manifest-failed'; error: Error }
  /** The manifest could not be anchored in the team store (why): verify on another machine calls the file unproven. */
  | { type: 'unanchored'; reason: string }
  /** An interrupt: the first stops taking connections and waits for pushes in progress; a second cuts them off. */
  | { type: 'stopping'; force: boolean };

/** What the listener may use: nothing of the process but what is injected here. */
export interface ListenRunDeps {
  env: Record<string, string | undefined>;
  homedir: string;
  now(): Date;
  /** Where the batch's verdicts are remembered (the results cache of the local or the team store). */
  stores(): Promise<import('../stores/owner.js').Stores>;
  serviceConfig(): Promise<import('../config.js').ServiceConfig>;
  /** The time-zone database's version (the context's): named in the calling columns' rules version. */
  tzdataVersion: string;
  interrupts: Interrupts;
  /** This process as the journal's lock sees it. */
  lockDeps: LockDeps;
  /** A fresh unguessable push path (injected so tests can know it). */
  randomPushPath?: () => string;
  onEvent(event: ListenEvent): void;
}

export interface ListenRunResult {
  /**
   * done: nothing is pending (--exit-when-done, or already so when stopped); interrupted: stopped with lookups pending.
   */
  kind: 'done' | 'interrupted';
  /** Stopped by an interrupt (Ctrl-C or a signal), not by --exit-when-done. */
  interrupted: boolean;
  address: ListeningAddress;
  final: ListenStatus;
  /** Lookups found past their deadline without a push, each once. */
  lost: LostLookup[];
  /** Rows of OUTPUT by dnc_result as last written; null when nothing was written. */
  byResult: Record<string, number> | null;
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
export function defaultPushPath(
  batchWebhookUrl: string | null,
  random: () => string,
): { path: string; from: 'batch' | 'random' } {
  if (batchWebhookUrl) {
    const batchPath = new URL(batchWebhookUrl).pathname;
    if (isUnguessablePath(batchPath)) return { path: batchPath, from: 'batch' };
    throw usageError(
      'E_GUESSABLE_PATH',
      `the batch's webhook path ${batchPath} is guessable, and pushes are not signed`,
      {
        hint:
          `serve it anyway with --path ${batchPath}, or run the batch again with a --webhook-url whose path ` +
          `is long and random (e.g. /hooks/${random().split('/').pop()})`,
      },
    );
  }
  return { path: random(), from: 'random' };
}

/** The checks that involve several flags, first the host (here, so that node:net is not loaded at start-up). */
function refuseUnsafeOptions(o: ListenOptions): void {
  if (o.path === undefined && !isLoopbackHost(o.host)) {
    // Pushes are unsigned: on an address others can reach, the path is the only secret between them and the results.
    throw usageError(
      'E_USAGE',
      `--host ${o.host} is reachable from other machines: give the secret push path with --path`,
      {
        hint: "use the path of the batch's --webhook-url, e.g. --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A (long and random)",
      },
    );
  }
  // Commander can refuse two flags together (conflicts) but not one without the other.
  if (o.unpairedTls === true) {
    throw usageError('E_USAGE', '--tls-cert and --tls-key go together', {
      hint: 'pass both (PEM files) to serve HTTPS directly, or neither',
    });
  }
}

/** Receives the pushes of the batch whose output is `options.results` until done or interrupted. */
export async function runListenJob(options: ListenOptions, deps: ListenRunDeps): Promise<ListenRunResult> {
  refuseUnsafeOptions(options);
  const journalPath = Store.pathFor(options.results);
  // No journal: openListenJournal (in listenLocked) refuses, with its hint; there is nothing to lock.
  if (!existsSync(journalPath)) return listenLocked(options, deps);
  // Held while listening: `dnc batch --restart` refuses to delete a journal pushes are being stored in.
  const lock = acquireJournalLock(journalPath, deps.lockDeps, 'listen');
  try {
    return await listenLocked(options, deps);
  } finally {
    lock.release();
  }
}

/** What the receiver masks in pushes: the secrets given, and the keys the batch's journal keeps traces of. */
function masked(o: ListenOptions, meta: BatchMeta): { secrets: readonly string[]; keyTraces: readonly KeyTrace[] } {
  return { secrets: o.secrets ?? [], keyTraces: meta.keyTraces ?? [] };
}

async function listenLocked(o: ListenOptions, deps: ListenRunDeps): Promise<ListenRunResult> {
  const emit = deps.onEvent;
  const tls = o.tls
    ? { cert: await readPem(o.tls.certFile, '--tls-cert'), key: await readPem(o.tls.keyFile, '--tls-key') }
    : undefined;
  const random = deps.randomPushPath ?? randomPushPath;
  const journalPath = Store.pathFor(o.results);
  const journal = await openListenJournal(o.results, {
    now: () => deps.now(),
    stateDir: keptFolder(deps.env, deps.homedir, 'state'),
    tzdataVersion: deps.tzdataVersion,
    skewMs: o.skewMs,
    batchRunning: () => lockHolder(journalPath, deps.lockDeps) !== null,
  });
  const batchWebhookUrl = journal.meta.options.webhookUrl;
  let pushPath: { path: string; from: PushPathSource };
  let session;
  try {
    pushPath = o.path !== undefined ? { path: o.path, from: 'flag' } : defaultPushPath(batchWebhookUrl, random);
    session = createListenSession({
      journal,
      // A listener started without the key (it needs none) still finds the batch's in what a push echoes.
      receiver: { host: o.host, port: o.port, path: pushPath.path, tls, skewMs: o.skewMs, ...masked(o, journal.meta) },
      exitWhenDone: o.exitWhenDone,
      now: () => deps.now(),
    });
  } catch (err) {
    journal.close();
    throw listenError(err, o);
  }

  const lost = new Map<string, LostLookup>();
  let byResult: Record<string, number> | null = null;
  session.on('status', (status) => emit({ type: 'status', status }));
  session.on('push', (push) => emit({ type: 'push', push }));
  session.on('rejected', (refusal) => emit({ type: 'refused', refusal }));
  session.on('client-error', (e) =>
    emit({ type: 'malformed-request', status: e.status, message: e.error.message, remoteAddress: e.remoteAddress }),
  );
  session.on('store-failed', (failure) => emit({ type: 'store-failed', failure }));
  session.on('lost', (list) => {
    for (const l of list) {
      const lookup = { ...l, deadline: new Date(l.receivedAt.getTime() + LOOKUP_EXPIRY_MS) };
      lost.set(l.correlationId, lookup);
      emit({ type: 'lost', lookup });
    }
  });
  session.on('reconciled', (correlationIds) => emit({ type: 'reconciled', correlationIds }));
  let saidUnanchored = false;
  const manifest = manifestRewriter(
    journal.meta,
    journal.journal.path,
    () => deps.now(),
    (error) => emit({ type: 'manifest-failed', error }),
    (written) =>
      anchorEverywhere(deps, written).then((anchored) => {
        // Said once: every rewrite would say it again.
        if (typeof anchored.team === 'string' && !saidUnanchored) {
          saidUnanchored = true;
          emit({ type: 'unanchored', reason: anchored.team });
        }
      }),
    // What every render of this journal computes its calling columns under.
    { callingRulesVersion: callingWindowsOf(journal.meta, deps.tzdataVersion).rulesVersion },
  );
  session.on('rendered', (e) => {
    // The manifest follows every render: it states the hash of the file as now written.
    manifest.request();
    byResult = e.byResult;
    emit({ type: 'rendered', durationMs: e.durationMs, byResult: e.byResult });
  });
  session.on('render-failed', (e) => emit({ type: 'render-failed', error: e.error, final: e.final }));

  const team = await teamSharing(deps, journal.journal, journal.meta.serviceOrigin, () => session.refresh(), say(emit));
  session.on('push', (push) => {
    if (!push.duplicate && !push.orphan && !push.conflict) team?.pushed(push.phoneNumber);
  });

  let address: ListeningAddress;
  try {
    address = await session.start();
  } catch (err) {
    await session.stop().catch(() => undefined);
    throw listenError(err, o);
  }
  const flagPathDiffers =
    pushPath.from === 'flag' && batchWebhookUrl !== null && new URL(batchWebhookUrl).pathname !== pushPath.path;
  emit({
    type: 'listening',
    address,
    base: address.url.slice(0, address.url.length - pushPath.path.length),
    pushPath: pushPath.path,
    from: pushPath.from,
    batchWebhookUrl,
    suggestedPath: pushPath.from === 'flag' && !isUnguessablePath(pushPath.path) ? random() : null,
    batchPath: flagPathDiffers ? new URL(batchWebhookUrl!).pathname : null,
  });

  const interrupted = await untilDoneOrInterrupted(deps, session);
  // Shared while the journal is open (a push in the very last moment before a Ctrl-C may be left unshared).
  await team?.stop();
  const final = await session.stop();
  await manifest.settled();
  await rememberVerdicts(deps, say(emit), journal.journal.path, journal.meta.serviceOrigin, journal.meta.accounts);
  if (session.renderError) {
    const e = session.renderError;
    throw inputError('E_OUTPUT_UNWRITABLE', `could not write ${o.results}: ${e.message}`, {
      hint: 'every push received is safe in the journal; fix the cause and run dnc listen again to write the file',
      cause: e,
    });
  }
  const done = final.pending === 0 && final.unsent === 0;
  return { kind: done ? 'done' : 'interrupted', interrupted, address, final, lost: [...lost.values()], byResult };
}

/** Listens until the session is done (--exit-when-done) or interrupted (true); a second Ctrl-C stops it at once. */
function untilDoneOrInterrupted(deps: ListenRunDeps, session: Pick<ListenSession, 'stop' | 'done'>): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const off = deps.interrupts.on((count) => {
      deps.onEvent({ type: 'stopping', force: count > 1 });
      resolve(true);
      if (count > 1) {
        off();
        void session.stop({ force: true });
      }
    });
    void session.done.then(() => {
      off();
      resolve(false);
    });
  });
}

/** How often a listener with a team store shares the pushes it stored, and asks for its colleagues' verdicts. */
const TEAM_SHARE_MS = 1_000;

/**
 * With a team store: the verdicts this listener stores are shared with the machines that waited for them (their rows
 * pending on this machine's lookup), and rows of this batch pending on a colleague's webhook lookup take the verdict
 * that colleague's listener shared. Best effort: a store that fails is said, and the journal keeps every push.
 */
async function teamSharing(
  deps: ListenRunDeps,
  journal: BatchJournal,
  service: string | null,
  refresh: () => void,
  s: ReturnType<typeof say>,
) {
  if (!service || !(await deps.stores()).claimsLookups) return null;
  let claims;
  try {
    const scope = await scopeOf(deps, service, journal.meta()?.accounts);
    claims = await (await deps.stores()).claims(scope, 'dnc listen', claimLeaseMs(30_000, 3));
  } catch (err) {
    s.warn(`dnc: warning: the team store cannot be used (${(err as Error).message}): pushes are not shared`);
    return null;
  }
  if (!claims) return null;
  const team = new TeamClaims(claims, false, () => deps.now());
  const pushed = new Set<string>();
  const share = async () => {
    const numbers = [...pushed];
    pushed.clear();
    const answers = numbers.flatMap((e164) => {
      const v = journal.verdict(e164);
      return v && v.state === 'done' && v.correlation_id
        ? [
            {
              correlationId: v.correlation_id,
              e164,
              country: v.country,
              answer: sharedAnswerOf({
                result: v.result ?? 'failed',
                doNotCall: v.do_not_call === null ? null : Boolean(v.do_not_call),
                listSource: v.list_source,
                checkedAt: v.checked_at,
                correlationId: v.correlation_id,
                errorCode: v.error_code,
                error: v.error,
                credits: v.credits,
                httpStatus: null,
                answer: null,
              }),
            },
          ]
        : [];
    });
    await claims.settlePushes(answers);
    if ((await adoptPushedVerdicts(journal, team)) > 0) refresh();
  };
  let failed = false;
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(share).catch((err: unknown) => {
      if (!failed) s.warn(`dnc: warning: the team store failed (${(err as Error).message}): pushes are kept here`);
      failed = true;
    });
  }, TEAM_SHARE_MS);
  return {
    pushed: (e164: string) => pushed.add(e164),
    async stop() {
      clearInterval(timer);
      await running;
      await share().catch(() => {});
    },
  };
}

function say(emit: (event: ListenEvent) => void) {
  return {
    info: (text: string) => emit({ type: 'info', text }),
    warn: (text: string) => emit({ type: 'warning', text }),
    debug: (text: string) => emit({ type: 'debug', text }),
  };
}

async function readPem(file: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw usageError(
      'E_TLS_UNREADABLE',
      `cannot read ${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      {
        hint: `${flag} takes a PEM file`,
        cause: err,
      },
    );
  }
}

/** A failure to listen, as what the user can do about it (the errno codes, never the message's wording, decide). */
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
      hint:
        code === 'EACCES'
          ? 'ports below 1024 need privileges; use a higher --port'
          : 'check --host: it must be an address of this machine',
      cause: err,
    });
  }
  // OpenSSL's refusals of a certificate or key all carry an ERR_OSSL_* code (PEM, ASN.1, decoder, key mismatch).
  if (o.tls && typeof code === 'string' && code.startsWith('ERR_OSSL_')) {
    return usageError(
      'E_TLS_INVALID',
      `cannot serve HTTPS with ${o.tls.certFile} and ${o.tls.keyFile}: ${(err as Error).message}`,
      {
        hint: 'both must be PEM files, the key matching the certificate',
        cause: err,
      },
    );
  }
  return err;
}
