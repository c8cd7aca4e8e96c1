// A call list repeats numbers, and verify judges a number's later rows by its first (src/verify/fit-rows.ts): a
// later row edited to differ from the first must still be found, by verify and by window, even with the results
// file, its manifest and the state folder's anchor rewritten to agree (so that only the rows can tell). The rows are
// read back with Python's csv module to aim each edit at one row.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyOutput } from '../../src/verify/verify.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { dnc, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** A callable and a registered number, each on three rows, scrubbed against the sandbox. */
async function scrub(world: World): Promise<string> {
  const rows = ['name,phone'];
  for (let i = 0; i < 3; i++)
    rows.push(`free ${i},+12125550100`, `listed ${i},+12125550101`, `other ${i},+16025550102`);
  const input = world.file('calls.csv', rows);
  const out = path.join(world.dir, 'calls.results.csv');
  const r = await dnc(['batch', input, '-o', out], world.env);
  expect(r.code, r.stderr).toBe(0);
  return out;
}

/**
 * The results with one cell of the `nth` row of `e164` (0-based, by Python's reading) set to `value`; the file, its
 * manifest and the anchor rewritten to agree, the manifest's counts moved as the edit moves them.
 */
function forgeRow(
  world: World,
  out: string,
  e164: string,
  nth: number,
  column: string,
  value: string | { as: string },
): number {
  const [header, ...rows] = readCsvIndependently(out);
  const at = header!.indexOf(column);
  const phone = header!.indexOf('dnc_phone_e164');
  const result = header!.indexOf('dnc_result');
  const index = rows.map((r, i) => [r, i] as const).filter(([r]) => r[phone] === e164)[nth]![1];
  const before = rows[index]![result]!;
  // { as: number }: that number's cell (a time the manifest's oldest and newest already span).
  rows[index]![at] = typeof value === 'string' ? value : rows.find((r) => r[phone] === value.as)![at]!;
  const after = rows[index]![result]!;
  // The sandbox's cells need no quotes: the file is written back as dnc wrote it.
  const text = `${[header!, ...rows].map((r) => r.join(',')).join('\n')}\n`;
  rewriteOutputAndManifest(
    out,
    text,
    (m) => {
      if (before === after) return;
      m.rows.by_result[before] -= 1;
      m.rows.by_result[after] = (m.rows.by_result[after] ?? 0) + 1;
      const country = m.rows.by_country.US;
      country[before] -= 1;
      country[after] = (country[after] ?? 0) + 1;
    },
    world.stateDir,
  );
  return index;
}

async function verifyJson(world: World, out: string) {
  const r = await dnc(['--json', 'verify', out], world.env);
  return {
    code: r.code,
    report: JSON.parse(r.stdout) as {
      fit: boolean;
      tampered: boolean;
      anchored: string;
      differences: string[];
      recheck: Array<{ line: number; number: string; reason: string; detail: string }>;
    },
  };
}

describe("a number's later rows, judged by its first", () => {
  it('the file as written is fit, and its repeats are all judged so', async () => {
    w = await world();
    const out = await scrub(w);
    const { code, report } = await verifyJson(w, out);
    expect(code).toBe(0);
    expect(report).toMatchObject({ fit: true, tampered: false, recheck: [] });
  });

  it.each([
    ['the third row of a registered number made callable', '+12125550101', 2, 'dnc_result', 'callable'],
    [
      'the second row of a callable number given another correlation id',
      '+12125550100',
      1,
      'dnc_correlation_id',
      '00000000-0000-4000-8000-000000000000',
    ],
    [
      'the third row of a callable number checked at another time',
      '+12125550100',
      2,
      'dnc_checked_at',
      { as: '+16025550102' },
    ],
    [
      'the second row of a callable number given a later valid-until',
      '+16025550102',
      1,
      'dnc_valid_until',
      '2099-01-01T00:00:00.000Z',
    ],
    [
      'the third row of a callable number given another calling window',
      '+16025550102',
      2,
      'dnc_calling_window',
      'Mon-Sun 00:00-24:00',
    ],
    // Cells verify did not compare with the journal before: a dialler that reads dnc_do_not_call would dial it.
    [
      'the first row of a registered number saying dnc_do_not_call false',
      '+12125550101',
      0,
      'dnc_do_not_call',
      'false',
    ],
    [
      'the second row of a registered number saying dnc_do_not_call false',
      '+12125550101',
      1,
      'dnc_do_not_call',
      'false',
    ],
    ['the first row of a callable number given an error text', '+12125550100', 0, 'dnc_error', 'looked up by hand'],
    ['the third row of a callable number given an error code', '+16025550102', 2, 'dnc_error_code', 'billing_error'],
    [
      'the second row of a callable number given an exemption',
      '+12125550100',
      1,
      'dnc_exemption',
      'consent until 2099-01-01T00:00:00.000Z',
    ],
  ] as Array<[string, string, number, string, string | { as: string }]>)(
    '%s: found at its own line, by verify and by window',
    async (_what, e164, nth, column, value) => {
      w = await world();
      const out = await scrub(w);
      const index = forgeRow(w, out, e164, nth, column, value);
      const { code, report } = await verifyJson(w, out);
      // Only the rows tell: the anchor and the manifest agree with the forged file.
      expect(report.anchored).toBe('matches');
      expect(report.differences).toEqual([]);
      expect(code).toBe(3);
      expect(report).toMatchObject({ fit: false, tampered: true });
      // Line = the record's (the header is line 1, no cell spans lines).
      expect(report.recheck.map((r) => [r.line, r.number, r.reason])).toEqual([[index + 2, e164, 'edited']]);
      const list = path.join(w.dir, 'slot.txt');
      const win = await dnc(
        ['window', out, '--from', '2026-07-01T16:00:00Z', '--until', '2026-07-01T17:00:00Z', '--dial-out', list],
        w.env,
        { now: () => new Date('2026-06-30T12:00:00Z') },
      );
      expect(win.code).toBe(3);
      expect(win.stderr).toContain('[E_NOT_FIT_TO_DIAL]');
    },
  );

  it("a later row's dnc_credits is not judged: the manifest's credits, from all rows, are", async () => {
    w = await world();
    const out = await scrub(w);
    forgeRow(w, out, '+12125550100', 1, 'dnc_credits', '5');
    const { code, report } = await verifyJson(w, out);
    expect(code).toBe(3);
    expect(report.recheck).toEqual([]);
    expect(report.differences.join('\n')).toMatch(/credits: 8 in the file, 3 in the manifest/);
    // Read back independently: only that cell changed.
    expect(
      readFileSync(out, 'utf8')
        .split('\n')
        .filter((l) => l.includes(',5,')).length,
    ).toBe(1);
  });
});

describe('one state of the journal for the whole pass', () => {
  it('a verdict changed in the journal while verify reads the file is not seen by that pass; the next pass sees it', async () => {
    w = await world();
    const out = await scrub(w);
    const journalPath = `${out}.journal.sqlite`;
    let changed = false;
    const report = await verifyOutput(out, {
      maxAgeMs: null,
      asOf: new Date(),
      tzdataVersion: process.versions.tz ?? 'unknown',
      // What is tested is the journal's one state: no anchors are read here (fitToDial reads them).
      unanchored: true,
      // Told row 0 before any verdict is read: another connection (a rerun, `dnc listen`) writes meanwhile.
      onRow: (index) => {
        if (index !== 0) return;
        const db = new Database(journalPath);
        db.prepare("UPDATE numbers SET result = 'do_not_call', do_not_call = 1 WHERE e164 = '+16025550102'").run();
        db.close();
        changed = true;
      },
    });
    expect(changed).toBe(true);
    // Every row of the number judged against the journal as it was when the pass began: all agree.
    expect(report).toMatchObject({ fit: true, tampered: false, recheckCount: 0 });
    // The next pass reads the journal as it is now: the file no longer agrees with it, on each row of that number.
    const again = await verifyJson(w, out);
    expect(again.code).toBe(3);
    expect(again.report.recheck.map((r) => [r.number, r.reason])).toEqual([
      ['+16025550102', 'edited'],
      ['+16025550102', 'edited'],
      ['+16025550102', 'edited'],
    ]);
  });
});
