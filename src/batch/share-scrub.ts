// A batch with a team store lets other runners help (`dnc batch --join ID`): it lists the numbers it will send in the
// store, as they are known (all at once, or as the list is read), and ends the sharing with the run. Listing goes on
// beside the lookups, never on their path; a store that refuses it leaves the batch as it was, unjoinable (a warning).
import type { BatchJournal } from '../journal/journal.js';
import type { SharedNumber } from '../stores/shared-scrubs.js';
import type { TeamClaims } from '../stores/team-claims.js';
import type { RunContext } from './job.js';
import type { IncomingNumbers } from './scheduler-types.js';

/** Numbers read from the journal per page while listing. */
const PAGE = 5_000;

export interface SharedScrub {
  readonly id: string;
  /** Ends the sharing: `done` when every number has its answer, else `stopped` (joiners stop either way). */
  end(state: 'done' | 'stopped'): Promise<void>;
}

/**
 * Starts sharing this run's numbers. `sends(country)`: whether a joiner may look a country's numbers up (not those
 * sent in webhook mode, whose pushes go to this run's listener). Null when the store does not share scrubs.
 */
export async function shareScrub(
  ctx: RunContext,
  journal: BatchJournal,
  team: TeamClaims,
  scope: { service: string; apiKey: string },
  reading: IncomingNumbers | null,
  sends: (country: string) => boolean,
): Promise<SharedScrub | null> {
  const shared = await (await ctx.stores()).sharedScrubs(scope);
  if (!shared) return null;
  let id: string;
  try {
    id = await shared.start(team.claimant);
  } catch (err) {
    ctx.warn(`dnc: warning: other runners cannot join this scrub (${(err as Error).message})`);
    return null;
  }
  ctx.info(`dnc: scrub ${id}: another runner can help with \`dnc batch --join ${id}\` (the same team store and key)`);
  const of = (rows: ReadonlyArray<{ e164: string; country: string }>): SharedNumber[] =>
    rows.filter((r) => sends(r.country)).map((r) => ({ ...r, windowMs: team.windowOf(r.country) }));
  let last = 0;
  let listing: Promise<void> = Promise.resolve();
  let failed = false;
  const list = (numbers: SharedNumber[], complete: boolean) => {
    listing = listing
      .then(() => (failed ? undefined : shared.list(id, numbers, complete)))
      .catch((err: unknown) => {
        if (!failed) ctx.warn(`dnc: warning: scrub ${id} cannot be shared further (${(err as Error).message})`);
        failed = true;
      });
  };
  // What is queued now, then what is read after (every number read later is still to be sent).
  for (let page = journal.nextQueued(0, PAGE); page.length > 0; page = journal.nextQueued(last, PAGE)) {
    last = page[page.length - 1]!.id;
    list(of(page), false);
  }
  last = Math.max(last, journal.lastNumberId());
  const more = () => {
    for (let page = journal.numbersAfter(last, PAGE); page.length > 0; page = journal.numbersAfter(last, PAGE)) {
      last = page[page.length - 1]!.id;
      list(of(page), false);
    }
  };
  if (reading?.reading) {
    reading.subscribe(() => {
      more();
      if (!reading.reading) list([], true);
    });
  } else list([], true);
  return {
    id,
    async end(state) {
      await listing;
      await shared.end(id, state).catch((err: unknown) => {
        ctx.warn(`dnc: warning: scrub ${id} could not be ended in the team store (${(err as Error).message})`);
      });
    },
  };
}
