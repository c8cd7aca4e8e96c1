// An edited batch journal is never laundered into a proven file (issue 46): a number's result, do_not_call and answer
// body changed with the sqlite3 shell, as someone outside dnc would, is refused by every path that builds from the
// journal (a rerun, `dnc listen` at start), nothing written, cached or shared; `verify` stays not fit and its advice
// never says to rerun. The built CLI against the sandbox; outputs read back with Python's csv.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { rechainJournal } from '../helpers/forged-output.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { lookedUp, usNumbers, world, type World } from '../helpers/world.js';
import { teamMachine } from '../team/helpers.js';

postgresSkipped("an edited journal's verdict never reaches the team store");

let w: World | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const run = (world: World, argv: string[], env: Record<string, string> = world.env) =>
  spawnDnc(argv, { env, cwd: world.dir, timeoutMs: 60_000 });

/** A scrub of three US numbers into calls.results.csv; returns the output and the registered (do_not_call) number. */
async function scrub(world: World, env: Record<string, string> = world.env): Promise<{ out: string; dnc: string }> {
  const input = world.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550101', 'c,+12025550102']);
  const out = path.join(world.dir, 'calls.results.csv');
  const r = await run(world, ['batch', input, '-o', out], env);
  expect(r.code, r.stderr).toBe(0);
  return { out, dnc: rowsOf(out).find((r) => r.dnc_result === 'do_not_call')!.dnc_phone_e164! };
}

function rowsOf(file: string): Array<Record<string, string>> {
  const [head, ...rows] = readCsvIndependently(file);
  return rows.map((r) => Object.fromEntries(head!.map((h, i) => [h, r[i]!])));
}

/** The registered number made callable in the journal: its result, do_not_call and the answer body, by sqlite3. */
function editJournal(journal: string, e164: string): void {
  execFileSync('sqlite3', [
    journal,
    `UPDATE numbers SET result = 'callable', do_not_call = 0 WHERE e164 = '${e164}';
     UPDATE answers SET body = replace(body, '"do_not_call":true', '"do_not_call":false')
       WHERE number_id = (SELECT id FROM numbers WHERE e164 = '${e164}');`,
  ]);
  const body = execFileSync('sqlite3', [
    journal,
    `SELECT body FROM answers WHERE number_id = (SELECT id FROM numbers WHERE e164 = '${e164}')`,
  ]).toString();
  expect(body).toContain('"do_not_call":false');
}

async function expectNotFit(world: World, out: string, env: Record<string, string> = world.env) {
  const v = await run(world, ['--json', 'verify', out], env);
  expect(v.code, v.stderr).toBe(3);
  const report = JSON.parse(v.stdout);
  expect(report).toMatchObject({ fit: false, fitness: 'not_fit', journal_chain: 'altered' });
  expect(report.not_fit_because).toContain('its batch journal was altered after dnc wrote it');
  // Advice that is safe to follow: never "run the same batch again" (it would build from the edited journal).
  expect(report.way_out.join('\n')).not.toMatch(/running .* again|regenerate/);
  expect(report.way_out.join('\n')).toContain('--reuse-within');
  return report;
}

describe('an edited journal is refused by every path that builds from it', () => {
  it('verify is not fit; a rerun, listen at start and a scrub elsewhere (--reuse-within) build nothing from the edit', async () => {
    w = await world();
    const { out, dnc } = await scrub(w);
    const journal = `${out}.journal.sqlite`;
    const written = readFileSync(out);
    const manifest = readFileSync(out.replace(/\.csv$/, '.manifest.json'));
    editJournal(journal, dnc);
    const sent = lookedUp(w.sb).length;

    const before = await expectNotFit(w, out);
    expect(before.recheck).toEqual([expect.objectContaining({ number: dnc, reason: 'edited' })]);

    // The rerun verify used to advise: refused, nothing sent, the output and its manifest as dnc wrote them.
    const rerun = await run(w, ['batch', path.join(w.dir, 'calls.csv'), '-o', out]);
    expect(rerun.code, rerun.stderr).toBe(3);
    expect(rerun.stderr).toContain(`dnc: error [E_JOURNAL_ALTERED]: the batch journal ${journal} was altered`);
    expect(rerun.stderr).toContain(`1 number(s) differ from what dnc committed (${dnc})`);
    expect(rerun.stderr).toMatch(/hint: restore the journal from a copy .* --reuse-within .* --restart/);
    expect(readFileSync(out).equals(written)).toBe(true);
    expect(readFileSync(out.replace(/\.csv$/, '.manifest.json')).equals(manifest)).toBe(true);

    // --accept-unproven-journal accepts an unproven journal, never an altered one.
    const accepted = await run(w, ['batch', path.join(w.dir, 'calls.csv'), '-o', out, '--accept-unproven-journal']);
    expect(accepted.code, accepted.stderr).toBe(3);
    expect(accepted.stderr).toContain('E_JOURNAL_ALTERED');

    // dnc listen rebuilds the output at start: refused before it does.
    const listen = await run(w, ['listen', '--results', out, '--port', '0', '--exit-when-done']);
    expect(listen.code, listen.stderr).toBe(3);
    expect(listen.stderr).toContain('E_JOURNAL_ALTERED');
    expect(readFileSync(out).equals(written)).toBe(true);

    // Another list with the number, reusing the results cache: the verdict dnc committed, never the edit.
    const other = w.file('other.csv', ['name,phone', `z,${dnc}`]);
    const elsewhere = await run(w, [
      'batch',
      other,
      '-o',
      path.join(w.dir, 'other.results.csv'),
      '--reuse-within',
      '30d',
    ]);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(rowsOf(path.join(w.dir, 'other.results.csv')).map((r) => r.dnc_result)).toEqual(['do_not_call']);
    expect(lookedUp(w.sb)).toHaveLength(sent);

    await expectNotFit(w, out);
  });

  it('the chain recomputed to agree with the edit: the head anchored in the state folder and the manifest still differ', async () => {
    w = await world();
    const { out, dnc } = await scrub(w);
    const journal = `${out}.journal.sqlite`;
    editJournal(journal, dnc);
    rechainJournal(journal);
    const report = await expectNotFit(w, out);
    expect(report.journal_chain_why).toMatch(/not where dnc anchored it/);

    const rerun = await run(w, ['batch', path.join(w.dir, 'calls.csv'), '-o', out]);
    expect(rerun.code, rerun.stderr).toBe(3);
    expect(rerun.stderr).toMatch(/E_JOURNAL_ALTERED.*its chain ends at entry \d+, not where dnc anchored it/);
    // On a machine without this state folder the manifest's recorded head (anchored with the manifest) differs too.
    const v = await run(w, ['--json', 'verify', out, '--unanchored'], { XDG_STATE_HOME: path.join(w.dir, 'other') });
    expect(v.code).toBe(3);
    expect(JSON.parse(v.stdout).journal_chain_why).toMatch(/is not the one the manifest records/);
  });

  it('an untouched journal: a bare rerun proves it and sends nothing, and verify calls the output fit', async () => {
    w = await world();
    const { out } = await scrub(w);
    const sent = lookedUp(w.sb).length;
    const rerun = await run(w, ['batch', path.join(w.dir, 'calls.csv'), '-o', out]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(lookedUp(w.sb)).toHaveLength(sent);
    expect((await run(w, ['verify', out])).code).toBe(0);
  });
});

describe('a journal a dnc is writing', () => {
  it('dnc listen started while the batch commits answers is not refused: the anchor moves on with the chain', async () => {
    w = await world({ latencyMs: 150 });
    const numbers = usNumbers(100, 60);
    const input = w.file('calls.csv', ['name,phone', ...numbers.map((n, i) => `r${i},${n}`)]);
    const out = path.join(w.dir, 'calls.results.csv');
    const batch = run(w, ['batch', input, '-o', out, '--concurrency', '2']);
    // Listen once the batch has answered a few numbers and goes on answering.
    await waitFor(() => lookedUp(w!.sb).length >= 6, { what: 'the batch under way' });
    const listen = await run(w, ['listen', '--results', out, '--port', '0', '--exit-when-done']);
    expect(listen.stderr).not.toContain('E_JOURNAL');
    expect(listen.code, listen.stderr).toBe(0);
    expect((await batch).code).toBe(0);
    expect((await run(w, ['verify', out])).code).toBe(0);
  });
});

describe.skipIf(!HAVE_POSTGRES)('with a team store: the edit never reaches dnc.verdicts nor a colleague', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("a rerun is refused before sharing; a colleague's scrub gets the verdict dnc committed", async () => {
    w = await world();
    const alice = teamMachine(w, 'alice', db.url);
    const bob = teamMachine(w, 'bob', db.url);
    expect((await run(w, ['store', 'migrate'], alice)).code).toBe(0);
    const { out, dnc } = await scrub(w, alice);
    const verdictOf = async () =>
      (await sqlOn(db.url, 'SELECT result FROM dnc.verdicts WHERE e164 = $1', [dnc])).map((r) => r.result);
    expect(await verdictOf()).toEqual(['do_not_call']);
    editJournal(`${out}.journal.sqlite`, dnc);

    const rerun = await run(w, ['batch', path.join(w.dir, 'calls.csv'), '-o', out], alice);
    expect(rerun.code, rerun.stderr).toBe(3);
    expect(rerun.stderr).toContain('E_JOURNAL_ALTERED');
    expect(await verdictOf()).toEqual(['do_not_call']);

    const sent = lookedUp(w.sb).length;
    const other = w.file('bob.csv', ['name,phone', `z,${dnc}`]);
    const colleague = await run(
      w,
      ['batch', other, '-o', path.join(w.dir, 'bob.results.csv'), '--reuse-within', '30d'],
      bob,
    );
    expect(colleague.code, colleague.stderr).toBe(0);
    expect(rowsOf(path.join(w.dir, 'bob.results.csv')).map((r) => r.dnc_result)).toEqual(['do_not_call']);
    expect(lookedUp(w.sb)).toHaveLength(sent);
    await expectNotFit(w, out, alice);
  });
});
