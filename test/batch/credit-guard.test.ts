// The credit guard (batch warning, dry-run comparison) and `usage --reconcile` against the sandbox's account.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, afterEach } from 'vitest';
import { forecastByCountry, forecastInOrder, forecastLines } from '../../src/batch/credit-guard.js';
import { runDnc } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';
import { dnc, json, lookedUp, sandboxSettled, usNumbers, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

describe('forecast', () => {
  it('stops where the running cost passes the balance, in sending order', () => {
    const costs = new Map([
      ['US', 1],
      ['DE', 2],
    ]);
    expect(forecastInOrder(['US', 'DE', 'DE', 'US'], costs, 4)).toMatchObject({
      numbers: 4,
      estimate: 6,
      short: true,
      stopsAfter: 2,
    });
    expect(forecastInOrder(['US', 'US'], costs, 4)).toMatchObject({ estimate: 2, short: false, stopsAfter: null });
    // A country whose cost is not learned yet counts at 1 credit (the floor): an estimate is never a reassuring 0.
    expect(forecastInOrder(['FR', 'US'], costs, 4)).toMatchObject({
      estimate: 2,
      unknownCostCountries: ['FR'],
      short: false,
    });
    expect(forecastInOrder(['FR', 'FR', 'FR', 'FR', 'FR'], new Map(), 4)).toMatchObject({
      estimate: 5,
      short: true,
      stopsAfter: 4,
    });
    expect(forecastLines(forecastInOrder(['FR', 'FR'], new Map(), 1), 'batch')[0]).toBe(
      'warning: credits are short: 2 number(s) to look up need at least 2 credit(s) (FR counted at 1 credit each: cost not learned yet), but only 1 remain in this billing period',
    );
    expect(forecastByCountry(new Map([['DE', 10]]), costs, 7)).toMatchObject({
      estimate: 20,
      short: true,
      stopsAfter: 3,
    });
  });
});

describe('credit guard', () => {
  it('batch warns before its first lookup when the credits left fall short, says where it stops, and goes on until the 429', async () => {
    w = await world();
    // A first batch teaches the US cost (X-Credit-Cost) to the cost cache.
    const first = w.file('first.csv', ['phone', ...usNumbers(100, 2)]);
    expect((await dnc(['batch', first], w.env)).code).toBe(0);
    w.sb.setCreditLimit(w.sb.account().creditsUsed + 4);
    const input = w.file('calls.csv', ['phone', ...usNumbers(200, 10)]);
    const dry = await dnc(['--json', 'batch', input, '--dry-run'], w.env);
    expect(dry.code).toBe(0);
    expect(json(dry.stdout).credit_guard).toEqual({
      estimated_credits: 10,
      credits_remaining: 4,
      short: true,
      stops_after_numbers: 4,
      numbers_to_look_up: 10,
    });
    const dryHuman = await dnc(['batch', input, '--dry-run'], w.env);
    expect(dryHuman.stdout).toContain(
      'warning: credits are short: 10 number(s) to look up need about 10 credit(s), but only 4 remain in this billing period',
    );
    expect(dryHuman.stdout).toContain('the batch would stop at the credit limit (429) after about 4 of 10 number(s)');

    const r = await dnc(['batch', input, '--concurrency', '1'], w.env);
    expect(r.code).toBe(5);
    // The balance is read (free) before the first lookup: all 10 numbers are still queued then.
    expect(r.stderr).toContain(
      'dnc: warning: credits are short: 10 number(s) to look up need about 10 credit(s), but only 4 remain in this billing period',
    );
    expect(r.stderr).toContain('after about 4 of 10 number(s); the other 6 would be not_checked');
    const paths = w.sb.requests().map((q) => q.path);
    expect(paths.lastIndexOf('/v2/usage_stats')).toBeLessThan(paths.lastIndexOf('/check_phone_number'));
    expect(lookedUp(w.sb).slice(2)).toHaveLength(5); // 4 answered, then one 429 (not charged)
  });

  it('an account over its limit (a lowered limit) is said to be over it by so many credits, and refused at the first lookup', async () => {
    w = await world();
    expect((await dnc(['batch', w.file('first.csv', ['phone', ...usNumbers(100, 60)])], w.env)).code).toBe(0);
    // 60 credits used; the limit lowered to 10: the service reports credits_remaining -50 (section 2.5).
    w.sb.setCreditLimit(10);
    const input = w.file('calls.csv', ['phone', ...usNumbers(200, 30)]);
    const dry = await dnc(['batch', input, '--dry-run'], w.env);
    expect(dry.stdout).toContain(
      'warning: the account is over its credit limit by 50 credit(s) in this billing period: 30 number(s) to look up need about 30 credit(s)',
    );
    expect(dry.stdout).toContain(
      'the batch would be refused at its first lookup (429): all 30 number(s) would be not_checked',
    );
    const r = await dnc(['batch', input], w.env);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(
      'dnc: warning: the account is over its credit limit by 50 credit(s) in this billing period',
    );
    expect(r.stderr).toContain('the batch will be refused at its first lookup (429)');
    for (const text of [dry.stdout, r.stderr]) {
      expect(text).not.toMatch(/-50 remain|after about 0 of/);
    }
    // None left at all reads so too.
    const none = forecastLines(forecastInOrder(['US', 'US'], new Map([['US', 1]]), 0), 'dry-run');
    expect(none[0]).toBe(
      'warning: no credits remain in this billing period: 2 number(s) to look up need about 2 credit(s)',
    );
  });

  it('no warning when the credits suffice', async () => {
    w = await world();
    expect((await dnc(['batch', w.file('first.csv', ['phone', ...usNumbers(100, 2)])], w.env)).code).toBe(0);
    const r = await dnc(['batch', w.file('calls.csv', ['phone', ...usNumbers(200, 5)])], w.env);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('credits are short');
  });
});

describe('credit guard: what will not be sent', () => {
  it('leaves out numbers no lookup will be sent for (AU without --webhook-url), as the dry run does', async () => {
    w = await world();
    expect((await dnc(['batch', w.file('first.csv', ['phone', ...usNumbers(100, 2)])], w.env)).code).toBe(0);
    w.sb.setCreditLimit(w.sb.account().creditsUsed + 3);
    const input = w.file('calls.csv', ['phone', ...usNumbers(300, 3), '+61 2 9876 5432']);
    const dry = json((await dnc(['--json', 'batch', input, '--dry-run'], w.env)).stdout);
    expect(dry.credit_guard).toMatchObject({ numbers_to_look_up: 3, estimated_credits: 3, short: false });
    const r = await dnc(['batch', input], w.env);
    expect(r.code, r.stderr).toBe(7);
    // 3 US lookups fit the 3 credits left; the AU number is not_checked / webhook_required, never sent.
    expect(r.stderr).not.toContain('credits are short');
    expect(lookedUp(w.sb).slice(2)).toHaveLength(3);
  });
});

describe('usage --reconcile', () => {
  it('the credits of registered journals and checks match the service; spending elsewhere shows as a difference with a note', async () => {
    w = await world();
    expect(
      (await dnc(['batch', w.file('calls.csv', ['phone', ...usNumbers(300, 3), '+44 20 7946 0001'])], w.env)).code,
    ).toBe(0);
    expect((await dnc(['check', '+12025550400', '+12025550995'], w.env)).code).toBe(6);
    const r = await dnc(['--json', 'usage', '--reconcile'], w.env);
    expect(r.code, r.stderr).toBe(0);
    const used = w.sb.account().creditsUsed;
    expect(used).toBe(6);
    const v = json(r.stdout);
    expect(v).toMatchObject({ service_credits_used: used, local_credits: used, difference: 0 });
    expect(v.local).toEqual([
      {
        kind: 'batch',
        path: path.join(w.dir, 'calls.results.csv.journal.sqlite'),
        lookups: 4,
        credits: 4,
        unanswered_sends: 0,
      },
      { kind: 'checks', path: path.join(w.stateDir, 'checks.sqlite'), lookups: 2, credits: 2, unanswered_sends: 0 },
    ]);
    // Another machine (its own state folder) spends on the same account.
    expect((await dnc(['check', '+12025550402'], { ...w.env, XDG_STATE_HOME: path.join(w.dir, 'other') })).code).toBe(
      0,
    );
    const human = await dnc(['usage', '--reconcile'], w.env);
    expect(human.stdout).toMatch(/the service counts +7 credit\(s\) used/);
    expect(human.stdout).toMatch(/this machine recorded +6 credit\(s\)/);
    expect(human.stdout).toContain('+1 credit(s) not recorded on this machine');
    expect(human.stdout).toContain('other machines, users or keys of the same account also spend credits');
    expect((await dnc(['usage', '--reconcile', '--periods', '2'], w.env)).code).toBe(2);
  });

  it('sends an interrupted run left without an answer (charged by the service, unrecorded) are counted and explain the difference', async () => {
    // A long latency, so that nothing is answered before the interrupt even on a loaded machine; the
    // figures below are still read from what the stopped run recorded, not assumed.
    w = await world({ latencyMs: 1000 });
    const calls = w.file('calls.csv', ['phone', ...usNumbers(500, 12)]);
    // A second Ctrl-C once four lookups reached the service: their answers are never recorded.
    const interrupts = testInterrupts();
    const sb = w.sb;
    const poll = setInterval(() => {
      if (lookedUp(sb).length >= 4) {
        clearInterval(poll);
        interrupts.fire();
        interrupts.fire();
      }
    }, 5);
    const stopped = await runDnc(['batch', calls, '--concurrency', '4'], { env: w.env, interrupts });
    clearInterval(poll);
    expect(stopped.code).toBe(130);
    await sandboxSettled(w.sb); // the service has taken in (and charged) them, answered or not
    const journalFile = path.join(w.dir, 'calls.results.csv.journal.sqlite');
    type Local = { lookups: number; credits: number; unanswered_sends: number };
    const reconcile = async () =>
      json((await dnc(['--json', 'usage', '--reconcile'], w!.env)).stdout) as { local: Local[] };
    const afterStop = (await reconcile()).local[0] ?? { lookups: 0, credits: 0, unanswered_sends: 0 };
    const answered = afterStop.credits;
    const unansweredSends = afterStop.unanswered_sends;
    // Every send the service took in was either answered (recorded) or cut (unrecorded, counted as a send
    // without an answer); at most the four in flight were cut.
    expect(unansweredSends).toBeGreaterThanOrEqual(1);
    expect(unansweredSends).toBeLessThanOrEqual(4);
    // What the service charged: every answered lookup, and each cut one it took in before the connection was
    // cut (on a loaded machine the last may be cut before the sandbox has routed it, and then it is not charged).
    const chargedByTheStoppedRun = w.sb.account().creditsUsed;
    expect(chargedByTheStoppedRun).toBeGreaterThanOrEqual(answered + 1);
    expect(chargedByTheStoppedRun).toBeLessThanOrEqual(answered + unansweredSends);
    // While a batch runs on the journal (its lock held by a live process), numbers in flight are lookups under way.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(`${journalFile}.lock`, `${holder.pid}\n`);
      expect((await reconcile()).local[0]?.unanswered_sends ?? 0).toBe(0); // a journal with nothing to count is not listed
    } finally {
      holder.kill();
      rmSync(`${journalFile}.lock`, { force: true });
    }
    // A rerun does not send the unanswered numbers again (they may have been charged) until asked to.
    const bare = await dnc(['batch', calls, '--concurrency', '4'], w.env);
    expect(bare.code, bare.stderr).toBe(7);
    expect(bare.stdout).toContain(
      `${unansweredSends} send(s) of an interrupted run got no answer and may have been charged`,
    );
    expect(w.sb.account().creditsUsed).toBe(chargedByTheStoppedRun + 12 - answered - unansweredSends);
    expect(json((await dnc(['--json', 'usage', '--reconcile'], w.env)).stdout).local).toEqual([
      {
        kind: 'batch',
        path: journalFile,
        lookups: 12 - unansweredSends,
        credits: 12 - unansweredSends,
        unanswered_sends: unansweredSends,
      },
    ]);
    expect((await dnc(['batch', calls, '--resend-unanswered'], w.env)).code).toBe(0);
    const r = await dnc(['--json', 'usage', '--reconcile'], w.env);
    const v = json(r.stdout);
    expect(w.sb.account().creditsUsed).toBe(chargedByTheStoppedRun + 12 - answered);
    expect(v).toMatchObject({
      service_credits_used: chargedByTheStoppedRun + 12 - answered,
      local_credits: 12,
      difference: chargedByTheStoppedRun - answered,
    });
    expect(v.local).toEqual([
      { kind: 'batch', path: journalFile, lookups: 12, credits: 12, unanswered_sends: unansweredSends },
    ]);
    const human = await dnc(['usage', '--reconcile'], w.env);
    expect(human.stdout).toContain(
      `(12 lookup(s); and ${unansweredSends} send(s) an interrupted run left without an answer, which may have been charged)`,
    );
    expect(human.stdout).toContain(
      `note: the ${unansweredSends} send(s) without an answer above may account for up to that many lookups' credits`,
    );
  });
});
