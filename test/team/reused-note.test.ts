// A row reused from another machine of the team says how: an answer already in the team store (that lookup had
// finished before this run asked), or one this run waited for while the other's lookup was in flight.
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readCsvObjects } from '../batch/helpers.js';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { lookedUp, lookedUpAtLeast, world, type World } from '../helpers/world.js';
import { teamMachine } from './helpers.js';

postgresSkipped('the note of a row reused from another machine');

describe.skipIf(!HAVE_POSTGRES)('a row another machine of the team answered', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let w: World | undefined;
  beforeAll(async () => {
    assertBuilt();
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  afterEach(async () => {
    await w?.cleanup();
    w = undefined;
  });

  const machine = (name: string) => teamMachine(w!, name, db.url);

  it('after that lookup finished: "its answer was in the team store", never "at the same time"', async () => {
    w = await world();
    const list = w.file('calls.csv', ['phone', '+12025550610', '+12025550611']);
    const a = await spawnDnc(['batch', list, '-o', path.join(w.dir, 'a.csv')], {
      env: machine('a'),
      cwd: w.dir,
      timeoutMs: 60_000,
    });
    expect(a.code, a.stderr).toBe(0);
    const b = await spawnDnc(['batch', list, '-o', path.join(w.dir, 'b.csv')], {
      env: machine('b'),
      cwd: w.dir,
      timeoutMs: 60_000,
    });
    expect(b.code, b.stderr).toBe(0);
    expect(lookedUp(w.sb)).toEqual(['+12025550610', '+12025550611']);
    for (const row of readCsvObjects(path.join(w.dir, 'b.csv'))) {
      expect(row.dnc_credits).toBe('0');
      expect(row.dnc_error).toMatch(
        // Who answered is named: the claim's machine and the role the server stamped, or for an answer taken from the
        // team's results cache before any claim (src/batch/repay.ts), the role that wrote the verdict.
        /^reused: checked \S+ by another dnc of the team \((a@[^)]* \[[^\]]+\]|written by role [^)]+)\), whose lookup had finished before this run asked: its answer was in the team store; no lookup sent, no credits$/,
      );
      expect(row.dnc_error).not.toContain('at the same time');
    }
  });

  it('dnc check after that lookup finished says it was answered just before, not "at the same moment"', async () => {
    w = await world();
    const list = w.file('one.csv', ['phone', '+12025550614']);
    const a = await spawnDnc(['batch', list], { env: machine('a'), cwd: w.dir, timeoutMs: 60_000 });
    expect(a.code, a.stderr).toBe(0);
    const b = await spawnDnc(['check', '+12025550614'], { env: machine('b'), cwd: w.dir, timeoutMs: 60_000 });
    expect(b.code, b.stderr).toBe(0);
    expect(lookedUp(w.sb)).toEqual(['+12025550614']);
    expect(b.stdout.replace(/\s+/g, ' ')).toMatch(
      /credits 0: answered just before by another dnc of the team \(a@[^)]*\), whose lookup had finished: its answer was in the team store, nothing sent/,
    );
    expect(b.stdout).not.toContain('at the same moment');
  });

  it('dnc check while that lookup is in flight waits for it and says so', async () => {
    // The colleague's answer is held at the sandbox until this check has said it waits for it: "in flight" is a
    // fact of the test, not a race against a busy machine (issue 53).
    w = await world();
    const release = w.sb.holdAnswers();
    const list = w.file('one.csv', ['phone', '+12025550912']);
    const a = spawnDnc(['batch', list], { env: machine('a'), cwd: w.dir, timeoutMs: 60_000 });
    await lookedUpAtLeast(w.sb, 1);
    let said = '';
    const b = spawnDnc(['check', '+12025550912'], {
      env: machine('b'),
      cwd: w.dir,
      timeoutMs: 60_000,
      onStderr: (text) => (said = text),
    });
    await waitFor(() => /another dnc of the team \(a@[^)]*\) is looking it up now/.test(said), {
      ms: 45_000,
      what: "dnc check's word that it waits for the colleague's lookup",
    });
    release();
    const checked = await b;
    expect(checked.code, checked.stderr).toBe(0);
    expect((await a).code).toBe(0);
    expect(lookedUp(w.sb)).toEqual(['+12025550912']);
    expect(checked.stderr).toMatch(
      /^dnc: \+1 202 555 0912: another dnc of the team \(a@[^)]*\) is looking it up now: waiting for its answer, nothing sent$/m,
    );
    expect(checked.stdout.replace(/\s+/g, ' ')).toMatch(
      /credits 0: looked up at the same moment by another dnc of the team \(a@[^)]*\): its answer waited for, nothing sent/,
    );
  });
});
