// The scheduler with a scripted client: concurrency, the budget's probe of an unknown cost, stops, abandon.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BatchJournal, journalPathFor } from '../../src/journal/journal.js';
import { BatchScheduler } from '../../src/batch/scheduler.js';
import { creditError } from '../../src/errors.js';
import type { LookupOutcome, LookupRequest } from '../../src/service/client.js';
import { scratch } from './helpers.js';
import { succeededOutcome } from '../helpers/lookup-answers.js';
import { refusalOf } from '../../src/service/refusals.js';
import { TeamClaims } from '../../src/stores/team-claims.js';
import type { ClaimAnswer, ClaimFate, LookupClaims, SharedAnswer } from '../../src/stores/interfaces.js';

const tmp = scratch();
afterAll(() => tmp.remove());
let n = 0;

async function journalOf(count: number, country = 'US'): Promise<BatchJournal> {
  const j = await BatchJournal.open(journalPathFor(path.join(tmp.dir, `s${++n}.csv`)), { create: true });
  j.insertNumbers(Array.from({ length: count }, (_, i) => [`+1202555${1000 + i}`, country] as const));
  return j;
}

/** A client whose answers the test releases; records the most lookups in flight at once. */
function scriptedClient(cost: number, answer: (req: LookupRequest, index: number) => 'ok' | '429' = () => 'ok') {
  let inFlight = 0;
  let index = 0;
  const stats = { maxInFlight: 0, sent: [] as string[] };
  const waiting: Array<() => void> = [];
  const client = {
    lookup(req: LookupRequest): Promise<LookupOutcome> {
      const i = index++;
      stats.sent.push(req.phoneNumber);
      inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, inFlight);
      return new Promise<LookupOutcome>((resolve, reject) => {
        waiting.push(() => {
          inFlight--;
          if (answer(req, i) === '429') {
            reject(creditError('E_CREDIT_LIMIT', 'credit limit reached (429)'));
            return;
          }
          resolve(succeededOutcome(req.phoneNumber, i, { cost }));
        });
      });
    },
  };
  // Answers everything sent so far, on a later turn of the event loop (as sockets do).
  const answerAll = () =>
    new Promise<void>((r) =>
      setTimeout(() => {
        for (const w of waiting.splice(0)) w();
        r();
      }, 1),
    );
  return { client, stats, answerAll };
}

async function drive(run: Promise<unknown>, answerAll: () => Promise<void>) {
  let finished = false;
  void run.then(() => (finished = true));
  while (!finished) await answerAll();
  return run;
}

const base = { webhookUrl: null, webhookAll: false, webhookOnlyCountries: ['AU'] };

describe('scheduler', () => {
  it('never has more lookups in flight than the concurrency, and answers every number once', async () => {
    const journal = await journalOf(50);
    const { client, stats, answerAll } = scriptedClient(1);
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 6, maxCredits: null });
    const outcome = await drive(s.run(), answerAll);
    expect(stats.maxInFlight).toBe(6);
    expect(new Set(stats.sent).size).toBe(50);
    expect(stats.sent).toHaveLength(50);
    expect(outcome).toMatchObject({ sent: 50, stoppedReason: null, creditsThisRun: 50 });
    expect(journal.summaryCounts()).toMatchObject({ done: 50, queued: 0, in_flight: 0 });
  });

  it('with a budget, sends one lookup of a country of unknown cost alone, then fills the budget exactly', async () => {
    const journal = await journalOf(30);
    const { client, stats, answerAll } = scriptedClient(2);
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 8, maxCredits: 11 });
    let firstRound = 0;
    s.on('progress', () => {
      if (firstRound === 0) firstRound = stats.sent.length;
    });
    const outcome = await drive(s.run(), answerAll);
    expect(firstRound).toBe(1);
    // 5 lookups at 2 credits = 10; a sixth could reach 12 > 11.
    expect(stats.sent).toHaveLength(5);
    expect(outcome).toMatchObject({ stoppedReason: 'budget_reached', creditsTotal: 10 });
    expect(journal.learnedCosts().get('US')).toBe(2);
  });

  it('on a 429 stops starting lookups, lets those in flight finish, and puts the refused number back in the queue', async () => {
    const journal = await journalOf(20);
    const { client, stats, answerAll } = scriptedClient(1, (_req, i) => (i === 9 ? '429' : 'ok'));
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 4, maxCredits: null });
    const outcome = await drive(s.run(), answerAll);
    expect(outcome).toMatchObject({ stoppedReason: 'credit_limit' });
    const counts = journal.summaryCounts();
    expect(counts.in_flight).toBe(0);
    expect(counts.done).toBe(stats.sent.length - 1);
    expect(counts.queued).toBe(20 - counts.done);
    expect(stats.sent.length).toBeLessThanOrEqual(12);
  });

  it('abandon() resolves at once with the answers received committed; the rest stay in flight for the next run', async () => {
    const journal = await journalOf(10);
    const { client, answerAll } = scriptedClient(1);
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 3, maxCredits: null });
    const run = s.run();
    await answerAll();
    // The answers are committed with the claims of the next three numbers, on the next turn.
    await new Promise((r) => setImmediate(r));
    s.abandon();
    const outcome = await run;
    expect(outcome.abandoned).toBe(true);
    const counts = journal.summaryCounts();
    expect(counts.done).toBe(3);
    expect(counts.in_flight).toBe(3);
    await answerAll();
    expect(journal.summaryCounts().done).toBe(3);
    expect(journal.requeueInFlight()).toBe(3);
  });
  it('under a budget, counts the sends a crash left without an answer as spent (they may have been charged)', async () => {
    const journal = await journalOf(10);
    journal.learnCost('US', 1);
    // A run killed with three lookups in flight; a fourth claim was released (a 429: certainly not charged).
    journal.atomically(() => journal.claim([1, 2, 3, 4]));
    journal.atomically(() => journal.release(4));
    expect(journal.unseenSends()).toEqual(new Map([['US', 3]]));
    const { client, stats, answerAll } = scriptedClient(1);
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 4, maxCredits: 10 });
    const outcome = await drive(s.run(), answerAll);
    expect(outcome).toMatchObject({ resent: 3, stoppedReason: 'budget_reached', creditsTotal: 7 });
    // 7 charged now + 3 maybe charged before = the budget of 10.
    expect(stats.sent).toHaveLength(7);
    // The re-sent numbers were answered: their earlier sends still count, as attempts beyond the answered one.
    expect(journal.unseenSends()).toEqual(new Map([['US', 3]]));
  });

  it('under a budget, a cost already known for the service (the cost cache) is used before any lookup', async () => {
    const journal = await journalOf(5);
    const { client, stats, answerAll } = scriptedClient(5);
    const s = new BatchScheduler({
      ...base,
      journal,
      client,
      concurrency: 4,
      maxCredits: 3,
      knownCosts: new Map([['US', 5]]),
    });
    const outcome = await drive(s.run(), answerAll);
    // Without it, one lookup would go out as a probe at 1 credit and spend 5 of a budget of 3.
    expect(stats.sent).toEqual([]);
    expect(outcome).toMatchObject({ stoppedReason: 'budget_reached', creditsTotal: 0 });
  });

  it('under a budget, a cached cost is a hint: the price may have risen, so one lookup goes alone first', async () => {
    const journal = await journalOf(10);
    const { client, stats, answerAll } = scriptedClient(5);
    const s = new BatchScheduler({
      ...base,
      journal,
      client,
      concurrency: 8,
      maxCredits: 12,
      knownCosts: new Map([['US', 1]]),
    });
    let firstRound = 0;
    s.on('progress', () => {
      if (firstRound === 0) firstRound = stats.sent.length;
    });
    const outcome = await drive(s.run(), answerAll);
    // Taken as certain, the hint would have sent 8 at once (40 credits against 12).
    expect(firstRound).toBe(1);
    expect(outcome).toMatchObject({ stoppedReason: 'budget_reached', creditsTotal: 10 });
  });
});

/**
 * A webhook-mode client: `plan[i]` is what the i-th lookup gets: a 202 receipt, a 400 without a word of webhooks, or
 * one naming the URL (400w), each classified as the real client does (src/service/answers.ts refusalOf).
 */
function webhookClient(plan: Array<'202' | '400' | '400w'>) {
  let index = 0;
  const sent: string[] = [];
  return {
    sent,
    client: {
      async lookup(req: LookupRequest): Promise<LookupOutcome> {
        const i = index++;
        sent.push(req.phoneNumber);
        await new Promise((r) => setImmediate(r)); // answered on a later turn, as over the network
        if (plan[i] !== '202') {
          const error = plan[i] === '400w' ? 'webhook_url must be a public https URL' : 'bad request';
          throw refusalOf(
            { status: 400, json: { error }, text: JSON.stringify({ error }), details: {} },
            { what: 'lookup', webhook: true, forwardedHost: null },
          );
        }
        const body = { status: 'started', correlation_id: `c${i}`, phone_number: req.phoneNumber, country: 'US' };
        return {
          kind: 'started',
          body: body as never,
          raw: body,
          meta: {
            status: 202,
            creditCost: 1,
            rateLimitLimit: null,
            rateLimitRemaining: null,
            correlationId: `c${i}`,
            attempts: 1,
          },
        };
      },
    },
  };
}

describe('scheduler: a 400 in webhook mode is about the request, never a verdict', () => {
  const webhook = {
    webhookUrl: 'https://hooks.example.com/dnc',
    webhookAll: true,
    webhookOnlyCountries: ['AU'],
    maxCredits: null,
  };

  it('the first 400 naming the URL stops the run (exit 2): its number back in the queue, nothing marked, nothing counted as sent', async () => {
    const journal = await journalOf(5);
    const { client, sent } = webhookClient(['400w', '202', '202', '202', '202']);
    const outcome = await new BatchScheduler({ ...webhook, journal, client, concurrency: 1 }).run();
    expect([outcome.fatal?.code, outcome.fatal?.exitCode, outcome.stoppedReason]).toEqual([
      'E_WEBHOOK_URL',
      2,
      'configuration',
    ]);
    expect(outcome.fatal?.message).toContain(
      'the service refused --webhook-url (400): webhook_url must be a public https URL',
    );
    expect(sent).toHaveLength(1);
    expect(journal.summaryCounts()).toMatchObject({ queued: 5, done: 0, in_flight: 0 });
    expect(journal.unseenSends()).toEqual(new Map());
  });

  it('after 202s, a 400 without invalid_phone_number is still about the request: the run stops, no number is invalid', async () => {
    const journal = await journalOf(3);
    const { client, sent } = webhookClient(['202', '400', '202']);
    const outcome = await new BatchScheduler({ ...webhook, journal, client, concurrency: 1 }).run();
    expect([outcome.fatal?.code, outcome.stoppedReason]).toEqual(['E_BAD_REQUEST', 'configuration']);
    expect(journal.get(sent[1]!)).toMatchObject({ state: 'queued', result: null, attempts: 0 });
    expect(journal.summaryCounts()).toMatchObject({ pending: 1, queued: 2, done: 0, in_flight: 0 });
  });

  it('streaming: sends numbers as they arrive, waits (never finishes) while the list is read, counts every number once, within the budget', async () => {
    const journal = await journalOf(0);
    const { client, stats, answerAll } = scriptedClient(1);
    const listeners: Array<(added: number) => void> = [];
    const incoming = { reading: true, subscribe: (l: (added: number) => void) => void listeners.push(l) };
    const arrive = (from: number, count: number) => {
      const added = journal.insertNumbers(
        Array.from({ length: count }, (_, i) => [`+1202555${2000 + from + i}`, 'US'] as const),
      );
      for (const l of listeners) l(added);
    };
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 4, maxCredits: 25, incoming });
    const totals: number[] = [];
    s.on('progress', (p: { total: number; reading: boolean }) => totals.push(p.reading ? -p.total : p.total));
    let finished = false;
    const run = s.run().then((o) => ((finished = true), o));
    for (let turn = 0; turn < 5; turn++) await answerAll();
    expect(finished).toBe(false); // an empty queue while reading is "not yet"
    arrive(0, 10);
    for (let turn = 0; turn < 10; turn++) await answerAll();
    // The first chunk is looked up while the list is still being read.
    expect(stats.sent).toHaveLength(10);
    expect(finished).toBe(false);
    arrive(5, 30); // 5 already known (a number on two rows): 25 new
    await answerAll();
    (incoming as { reading: boolean }).reading = false;
    for (const l of listeners) l(0);
    const outcome = await drive(run, answerAll);
    // 35 distinct numbers, a budget of 25 at 1 credit each: exactly 25 sent, each once.
    expect(new Set(stats.sent).size).toBe(25);
    expect(stats.sent).toHaveLength(25);
    expect(outcome).toMatchObject({ stoppedReason: 'budget_reached', creditsTotal: 25, total: 35 });
    expect(totals.some((t) => t === -10)).toBe(true);
    expect(journal.summaryCounts()).toMatchObject({ done: 25, queued: 10, in_flight: 0 });
  });

  it('streaming: a run whose list ends finishes once the last number read is answered', async () => {
    const journal = await journalOf(3);
    const { client, stats, answerAll } = scriptedClient(1);
    const listeners: Array<(added: number) => void> = [];
    const incoming = { reading: true, subscribe: (l: (added: number) => void) => void listeners.push(l) };
    const s = new BatchScheduler({ ...base, journal, client, concurrency: 8, maxCredits: null, incoming });
    const run = s.run();
    await answerAll();
    journal.insertNumbers([['+12025559999', 'US']]);
    for (const l of listeners) l(1);
    incoming.reading = false;
    for (const l of listeners) l(0);
    const outcome = await drive(run, answerAll);
    expect(stats.sent.sort()).toEqual(['+12025551000', '+12025551001', '+12025551002', '+12025559999']);
    expect(outcome).toMatchObject({ sent: 4, total: 4, stoppedReason: null });
  });
});

describe('scheduler with a team store', () => {
  /** Claims in which a colleague holds every number; its answers come when the test says. */
  function heldByColleague() {
    let polled!: () => void;
    const firstPoll = new Promise<void>((r) => (polled = r));
    const answers: Array<(m: Map<string, ClaimAnswer>) => void> = [];
    const claims: LookupClaims = {
      claimant: 'me',
      leaseMs: 60_000,
      claim: async (e164s) => new Map(e164s.map((e): [string, ClaimFate] => [e, { kind: 'held', claimant: 'them' }])),
      sending: async (e164s) => new Set(e164s),
      answers: () => {
        polled();
        return new Promise((r) => answers.push(r));
      },
      settle: async () => {},
      byCorrelation: async () => new Map(),
      settlePushes: async () => {},
      settleEarlier: async () => 0,
      close: async () => {},
    };
    return { team: new TeamClaims(claims, false, () => new Date()), firstPoll, answers };
  }

  it("stopped while a colleague's answers are asked for: the late reply is dropped, no crash, the numbers stay queued", async () => {
    const journal = await journalOf(3);
    const { client } = scriptedClient(1);
    const { team, firstPoll, answers } = heldByColleague();
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      const s = new BatchScheduler({ ...base, journal, client, concurrency: 3, maxCredits: null, team });
      const run = s.run();
      await firstPoll;
      s.stop('interrupted');
      const outcome = await run;
      // The colleague's lookups are still running when the reply comes: nothing of it may reach the stopped run.
      answers[0]!(new Map());
      // A rejection nobody handles is reported once the turn that made it ends: a few turns are ample.
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
      expect(outcome).toMatchObject({ stoppedReason: 'interrupted', sent: 0, fatal: null });
      expect(journal.summaryCounts()).toMatchObject({ queued: 3, in_flight: 0, done: 0 });
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('numbers a colleague is looking up hold no place in flight: the run goes on with the others', async () => {
    const journal = await journalOf(40);
    const { client, stats, answerAll } = scriptedClient(1);
    const held = new Set(Array.from({ length: 20 }, (_, i) => `+1202555${1000 + i}`));
    let claimedHeld = 0;
    const claims: LookupClaims = {
      claimant: 'me',
      leaseMs: 60_000,
      claim: async (e164s) =>
        new Map(
          e164s.map((e): [string, ClaimFate] =>
            held.has(e) ? (claimedHeld++, [e, { kind: 'held', claimant: 'them' }]) : [e, { kind: 'claimed' }],
          ),
        ),
      sending: async (e164s) => new Set(e164s),
      // The colleague's answers land once this run has sent all of its own.
      answers: async (e164s) =>
        new Map(
          stats.sent.length < 20
            ? []
            : e164s.map((e): [string, ClaimAnswer] => [e, { kind: 'answered', claimant: 'them', answer: shared(e) }]),
        ),
      settle: async () => {},
      byCorrelation: async () => new Map(),
      settlePushes: async () => {},
      settleEarlier: async () => 0,
      close: async () => {},
    };
    const s = new BatchScheduler({
      ...base,
      journal,
      client,
      concurrency: 4,
      maxCredits: null,
      team: new TeamClaims(claims, false, () => new Date()),
    });
    const outcome = await drive(s.run(), answerAll);
    expect(claimedHeld).toBe(20);
    expect(stats.sent).toHaveLength(20);
    expect(outcome).toMatchObject({ sent: 20, stoppedReason: null });
    expect(journal.summaryCounts()).toMatchObject({ done: 40, queued: 0, in_flight: 0 });
  }, 20_000);
});

function shared(e164: string): SharedAnswer {
  return {
    result: 'callable',
    doNotCall: false,
    listSource: 'https://register.example/US',
    checkedAt: '2026-11-20T10:00:00Z',
    correlationId: `c-${e164}`,
    errorCode: null,
    error: null,
    httpStatus: 200,
    body: null,
  };
}
