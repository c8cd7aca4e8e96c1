// `dnc batch --join ID`: this runner helps a scrub another runner (its owner) started with a team store. It takes
// numbers of that scrub the store lists (from the end: the owner works from the start), claims them as any member does,
// looks up those it won, and settles their answers in the store, where the owner adopts them as it comes to them; it
// writes no output. A journal of its own (in the state folder, removed at the end) keeps the lookups in flight, so
// that the batch scheduler runs them as a batch's: the same concurrency, budget, errors and stops.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { DncError, inputError, isDncError, usageError } from '../errors.js';
import { BatchJournal } from '../journal/journal.js';
import { deleteJournalFiles } from '../journal/files.js';
import { keptFolder } from '../paths.js';
import { operatorOf } from '../compliance/settings.js';
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS } from '../config.js';
import { claimLeaseMs } from '../stores/lease.js';
import type { SharedScrubInfo, SharedScrubs } from '../stores/shared-scrubs.js';
import { TeamClaims } from '../stores/team-claims.js';
import type { BatchRunDeps, RunContext } from './job.js';
import { runContext } from './job.js';
import { BatchScheduler } from './scheduler.js';
import type { IncomingNumbers, SchedulerOutcome, SchedulerProgress } from './scheduler-types.js';

export interface JoinOptions {
  scrub: string;
  concurrency: number;
  /** Credits this runner may spend (its own budget: the owner's --max-credits bounds the owner's lookups). */
  maxCredits: number | null;
}

/**
 * Why a joiner ended: the scrub is done (every number answered), its owner stopped it (or was killed), nothing was
 * left to take (the others have the rest in hand), or this runner stopped on its own (see `outcome`).
 */
export type JoinEnd = 'done' | 'stopped' | 'nothing_left' | 'self';

export interface JoinResult {
  scrub: string;
  end: JoinEnd;
  /** Numbers this runner took from the scrub's list. */
  taken: number;
  outcome: SchedulerOutcome | null;
}

/** How often the joiner looks for more numbers while its queue is full, and at the scrub when none is left. */
const FEED_MS = 100;

/** The scrub this runner may help, or why not (E_SCRUB_UNKNOWN, exit 2). */
async function findScrub(shared: SharedScrubs | null, id: string, service: string): Promise<SharedScrubInfo> {
  const hint = 'give the id the scrub printed (`dnc: scrub ID: …`), with the same team store and API key';
  if (!shared)
    throw usageError('E_SCRUB_UNKNOWN', `--join needs a team store: the local store shares no scrub`, {
      hint: 'set the team store (--store, DNC_STORE; docs/team.md) on this runner as on the one that started it',
    });
  if (!/^[0-9a-f]{10}$/.test(id)) throw usageError('E_SCRUB_UNKNOWN', `--join: '${id}' is not a scrub id`, { hint });
  const scrub = await shared.find(id);
  if (!scrub) throw usageError('E_SCRUB_UNKNOWN', `no scrub ${id} in the team store`, { hint });
  if (scrub.service !== service)
    throw usageError('E_SCRUB_UNKNOWN', `scrub ${id} looks numbers up at ${scrub.service}, this dnc at ${service}`, {
      hint: 'set the same service (DNC_BASE_URL or the config) on both runners',
    });
  if (!scrub.sameAccount)
    throw usageError('E_SCRUB_UNKNOWN', `scrub ${id} is another account's (another API key)`, {
      hint: 'help with the API key the scrub is paid with: the claims that keep it from paying twice are by account',
    });
  return scrub;
}

/** The scrub's numbers, taken as this runner's queue runs low; ends when the scrub does or none is left. */
class Feed implements IncomingNumbers {
  reading = true;
  taken = 0;
  end: JoinEnd | null = null;
  private readonly listeners: Array<(added: number) => void> = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private busy = false;
  private failed: ((err: unknown) => void) | null = null;
  readonly windows = new Map<string, number | null>();

  constructor(
    private readonly shared: SharedScrubs,
    private scrub: SharedScrubInfo,
    private readonly claimant: string,
    private readonly journal: BatchJournal,
    private readonly low: number,
  ) {}

  subscribe(listener: (added: number) => void): void {
    this.listeners.push(listener);
  }

  start(onEnd: (end: JoinEnd) => void, onError: (err: unknown) => void): void {
    this.onEnd = onEnd;
    this.failed = onError;
    void this.poke();
  }

  private onEnd: ((end: JoinEnd) => void) | null = null;

  /** Looks for more now (a lookup ended: the queue may be low), and again every FEED_MS while it runs. */
  async poke(): Promise<void> {
    if (!this.reading || this.busy) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.busy = true;
    try {
      const end = await this.step();
      if (end) {
        this.end = end;
        this.finish();
        this.onEnd?.(end);
      }
    } catch (err) {
      this.finish();
      this.failed?.(err);
    } finally {
      this.busy = false;
    }
    if (this.reading && this.timer === null) this.timer = setTimeout(() => void this.poke(), FEED_MS);
  }

  /** One look: more numbers when few are queued; the scrub's state when none is left to take. */
  private async step(): Promise<JoinEnd | null> {
    if (this.journal.summaryCounts().queued >= this.low) return null;
    const numbers = await this.shared.take(this.scrub, this.claimant, this.low * 2);
    if (numbers !== null) {
      for (const n of numbers) this.windows.set(n.country, n.windowMs);
      const added = this.journal.insertNumbers(numbers.map((n) => [n.e164, n.country] as const));
      this.taken += added;
      for (const l of this.listeners) l(added);
      return null;
    }
    const now = await this.shared.find(this.scrub.id);
    if (!now || now.state === 'done') return 'done';
    if (now.state === 'stopped' || !now.ownerAlive) return 'stopped';
    this.scrub = now;
    return now.listed ? 'nothing_left' : null;
  }

  /** Stops taking (the run stops, or the scrub ended): the scheduler finishes what it has. */
  finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.reading) return;
    this.reading = false;
    for (const l of this.listeners) l(0);
  }
}

/** Why the joiner ended: its own stop (an error, Ctrl-C, its budget) unless the scrub's end came first. */
function endOf(failed: boolean, outcome: SchedulerOutcome, fed: JoinEnd | null): JoinEnd {
  if (failed) return 'self';
  if (fed === 'stopped') return 'stopped';
  if (outcome.stoppedReason !== null) return 'self';
  return fed ?? 'nothing_left';
}

/** The joiner's journal: in the state folder, a file of this run's own. */
function journalPathOf(ctx: RunContext, scrub: string): string {
  const state = keptFolder(ctx.env, ctx.homedir, 'state');
  if (state === null)
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep the lookups of --join in the state folder`, {
      hint: 'set HOME to a folder that exists (or XDG_STATE_HOME); nothing was sent',
    });
  const dir = path.join(state, 'joins');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return path.join(dir, `${scrub}-${ctx.lockDeps.pid}-${randomUUID().slice(0, 8)}.sqlite`);
}

export async function runJoin(deps: BatchRunDeps, options: JoinOptions): Promise<JoinResult> {
  const ctx = runContext(deps);
  const config = await ctx.serviceConfig();
  const service = new URL(config.baseUrl.value).origin;
  const stores = await ctx.stores();
  await stores.ready();
  const scope = { service, apiKey: config.apiKey.value };
  const shared = await stores.sharedScrubs(scope);
  const scrub = await findScrub(shared, options.scrub, service);
  if (scrub.state !== 'running' || !scrub.ownerAlive)
    return { scrub: scrub.id, end: scrub.state === 'done' ? 'done' : 'stopped', taken: 0, outcome: null };
  const claimant = `${operatorOf(ctx.env)} pid ${ctx.lockDeps.pid} join ${scrub.id} run ${randomUUID().slice(0, 8)}`;
  const lease = claimLeaseMs(ctx.flags.timeout ?? DEFAULT_TIMEOUT_MS, ctx.flags.retries ?? DEFAULT_RETRIES);
  // Claims as of the scrub's start: what a colleague settled since is reused, as the owner would reuse it.
  const claims = await stores.claims(scope, claimant, lease, undefined, scrub.startedAt);
  if (!claims) throw new DncError('E_INTERNAL', 'the team store gave no claims');
  const journalPath = journalPathOf(ctx, scrub.id);
  const journal = await BatchJournal.open(journalPath, { create: true }, ctx.now);
  const feed = new Feed(shared!, scrub, claimant, journal, options.concurrency);
  // The owner's validity windows (by country, as its list gave them): a colleague's verdict within one is reused.
  const team = new TeamClaims(claims, false, ctx.now, (country) => feed.windows.get(country) ?? null);
  const client = await ctx.createClient({
    connections: options.concurrency,
    onClockSkew: (skew) => ctx.emit({ type: 'clock_skew', skew }),
  });
  const scheduler = new BatchScheduler({
    // The numbers come from the owner's list of the scrub, a few at a time; none of a webhook-only country (see
    // joinable in src/batch/lookups.ts), so a joiner sends no webhook lookup.
    incoming: feed,
    team,
    journal,
    client,
    concurrency: options.concurrency,
    maxCredits: options.maxCredits,
  });
  scheduler.on('progress', (p: SchedulerProgress) => {
    // (No list is read here: the total is what this runner has taken so far.)
    ctx.emit({ type: 'progress', progress: { ...p, reading: false } });
    void feed.poke();
  });
  const off = ctx.interrupts.on((count) => {
    if (count === 1) {
      ctx.emit({ type: 'stopping' });
      scheduler.stop('interrupted');
    } else scheduler.abandon();
  });
  let storeFailure: DncError | null = null;
  try {
    ctx.emit({ type: 'lookups-started' });
    const running = scheduler.run();
    feed.start(
      (end) => {
        if (end === 'stopped') scheduler.stop('interrupted');
      },
      (err) => {
        storeFailure = isDncError(err) ? err : new DncError('E_STORE_UNAVAILABLE', (err as Error).message);
        scheduler.stop('service_failure');
      },
    );
    const outcome = await running;
    feed.finish();
    const fatal = outcome.fatal ?? storeFailure;
    return {
      scrub: scrub.id,
      end: endOf(fatal !== null, outcome, feed.end),
      taken: feed.taken,
      outcome: { ...outcome, fatal },
    };
  } finally {
    off();
    feed.finish();
    // What it claimed and never sent is free for the others at once; its heartbeat stops.
    await team.close().catch(() => {});
    await client.close().catch(() => {});
    ctx.emit({ type: 'lookups-ended' });
    journal.close();
    deleteJournalFiles(journalPath);
  }
}
