// A verdict read back from the results cache is judged as an answer of the service before it is reused (issue 24):
// a row edited in the cache file (result made callable, its kept answer saying do_not_call) is never a verdict.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { dnc, json, lookedUp, world, type World } from '../helpers/world.js';

/** The output's rows by column name, read by Python's csv module. */
function readCsv(file: string): Array<Record<string, string>> {
  const [header, ...rows] = readCsvIndependently(file);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ''])));
}

let w: World;
beforeEach(async () => {
  w = await world();
});
afterEach(() => w.cleanup());

/** Edits the cache as someone with the file would: the number's result made callable, nothing else. */
function makeCallable(cacheDir: string, e164: string): number {
  const db = new Database(path.join(cacheDir, 'results.sqlite'));
  try {
    return db.prepare("UPDATE verdicts SET result = 'callable' WHERE e164 = ?").run(e164).changes;
  } finally {
    db.close();
  }
}

describe('the results cache, read back', () => {
  // The sandbox puts a number on a register when its last digit is odd.
  const registered = '+12025550101';

  it('an edited verdict is not reused by batch or check: the number is looked up again and is do_not_call', async () => {
    const first = await dnc(
      ['batch', w.file('a.csv', ['name,phone', `a,${registered}`]), '-o', path.join(w.dir, 'a.out.csv')],
      w.env,
    );
    expect(first.code, first.stderr).toBe(0);
    expect(readCsv(path.join(w.dir, 'a.out.csv'))[0]!.dnc_result).toBe('do_not_call');
    expect(makeCallable(w.cacheDir, registered)).toBe(1);
    w.sb.reset();

    const again = path.join(w.dir, 'b.out.csv');
    const batch = await dnc(
      ['batch', w.file('b.csv', ['name,phone', `b,${registered}`]), '-o', again, '--reuse-within', '1d'],
      w.env,
    );
    expect(batch.code, batch.stderr).toBe(0);
    expect(readCsv(again)[0]!.dnc_result).toBe('do_not_call');
    expect(lookedUp(w.sb)).toEqual([registered]);

    expect(makeCallable(w.cacheDir, registered)).toBe(1);
    w.sb.reset();
    const check = await dnc(['--json', 'check', registered, '--reuse-within', '1d'], w.env);
    expect(json(check.stdout).do_not_call).toBe(true);
    expect(lookedUp(w.sb)).toEqual([registered]);
  });

  it('a kept answer edited to give do_not_call twice (true, then false) is not reused as callable (issue 46)', async () => {
    const first = await dnc(
      ['batch', w.file('a.csv', ['name,phone', `a,${registered}`]), '-o', path.join(w.dir, 'a.out.csv')],
      w.env,
    );
    expect(first.code, first.stderr).toBe(0);
    expect(makeCallable(w.cacheDir, registered)).toBe(1);
    // The kept answer made to agree with the edit as JSON.parse reads it: its last do_not_call is false.
    const db = new Database(path.join(w.cacheDir, 'results.sqlite'));
    const edited = db
      .prepare(
        'UPDATE verdicts SET body = replace(body, \'"do_not_call":true\', \'"do_not_call":true,"do_not_call":false\') WHERE e164 = ?',
      )
      .run(registered).changes;
    const body = (db.prepare('SELECT body FROM verdicts WHERE e164 = ?').get(registered) as { body: string }).body;
    db.close();
    expect(edited).toBe(1);
    expect((JSON.parse(body) as { do_not_call: boolean }).do_not_call).toBe(false);
    w.sb.reset();
    const check = await dnc(['--json', 'check', registered, '--reuse-within', '1d'], w.env);
    expect(json(check.stdout).do_not_call).toBe(true);
    expect(lookedUp(w.sb)).toEqual([registered]);
  });

  it('a verdict as the service gave it is still reused (nothing sent)', async () => {
    await dnc(
      ['batch', w.file('a.csv', ['name,phone', `a,${registered}`]), '-o', path.join(w.dir, 'a.out.csv')],
      w.env,
    );
    w.sb.reset();
    const again = path.join(w.dir, 'b.out.csv');
    const batch = await dnc(
      ['batch', w.file('b.csv', ['name,phone', `b,${registered}`]), '-o', again, '--reuse-within', '1d'],
      w.env,
    );
    expect(batch.code, batch.stderr).toBe(0);
    expect(readCsv(again)[0]!.dnc_result).toBe('do_not_call');
    expect(lookedUp(w.sb)).toEqual([]);
  });
});
