// One fixture per way a results file was once corrupted (fixtures/fidelity/): each output and list is read
// back with an independent CSV reader (Python's csv) and compared with the input's records.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLING_COLUMNS, DNC_COLUMNS } from '../../src/results/columns.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { FIXTURES, lookedUp, sandbox, scratch, sha256 } from '../batch/helpers.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();

beforeAll(async () => {
  ({ sb, env } = await sandbox());
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

const fixture = (name: string) => path.join(FIXTURES, 'fidelity', name);

/** Runs a batch and returns the output and the callable list as Python's csv reads them. */
async function scrub(name: string, extra: string[] = []) {
  const input = fixture(name);
  const before = sha256(input);
  const out = path.join(tmp.dir, `${name}.out.csv`);
  const callable = path.join(tmp.dir, `${name}.callable.csv`);
  const r = await runDnc(['batch', input, '-o', out, '--callable-out', callable, ...extra], { env });
  expect(sha256(input)).toBe(before);
  const written = r.code === 0 || r.code === 7;
  return {
    r,
    out,
    rows: written ? readCsvIndependently(out) : [],
    callable: written ? readCsvIndependently(callable) : [],
  };
}

describe('results file fidelity: fixtures', () => {
  it("Excel's Alt+Enter (a bare LF inside a CRLF file): 2 rows stay 2 records, cells intact, CRLF kept", async () => {
    const { r, out, rows, callable } = await scrub('excel-alt-enter-crlf.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(rows.map((x) => x.slice(0, 3))).toEqual([
      ['name', 'phone', 'notes'],
      ['Ann\nLee', '+12025550120', 'l1\nl2'],
      ['Bob', '+12025550122', 'x'],
    ]);
    expect(callable.map((x) => x[0])).toEqual(['name', 'Ann\nLee', 'Bob']);
    expect(readFileSync(out, 'utf8')).toMatch(
      /^name,phone,notes,dnc_phone_e164.*\r\n"Ann\nLee",\+12025550120,"l1\nl2",/s,
    );
  });

  it('a bare CR inside an LF file is quoted too', async () => {
    const { r, rows } = await scrub('bare-cr-in-lf.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(rows.map((x) => x.slice(0, 3))).toEqual([
      ['name', 'phone', 'notes'],
      ['Cy\rDee', '+12025550123', 'a\rb'],
      ['Ed', '+12025550124', 'y'],
    ]);
  });

  it('mixed line endings are line breaks: 4 lines are 3 rows, never merged', async () => {
    const { r, rows } = await scrub('mixed-endings.csv', ['--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).rows).toBe(3);
    expect(rows.slice(1).map((x) => x[0])).toEqual(['+12025550130', '+12025550131', '+12025550132']);
  });

  it('CR-only line endings (old Mac exports) are read, and written back with CR', async () => {
    const { r, out, rows } = await scrub('cr-only.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(rows.slice(1).map((x) => x.slice(0, 2))).toEqual([
      ['Ann', '+12025550150'],
      ['Bob', '+12025550151'],
    ]);
    expect(readFileSync(out, 'utf8').split('\r')).toHaveLength(4);
  });

  it('a blank line in a one-column list stays a row (invalid, missing_number), so row N of the output is row N of the input', async () => {
    sb.reset();
    const { r, rows } = await scrub('blank-line-one-column.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(rows.slice(1).map((x) => [x[0], x[3], x[8]])).toEqual([
      ['+12025550140', 'callable', ''],
      ['', 'invalid', 'missing_number'],
      ['+12025550141', 'do_not_call', ''],
    ]);
    expect(lookedUp(sb).sort()).toEqual(['+12025550140', '+12025550141']);
  });

  it('blank rows of a several-column list, written as ",," or as an empty line, are rows of empty cells', async () => {
    const { r, rows } = await scrub('blank-rows-several-columns.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(rows.slice(1).map((x) => [...x.slice(0, 3), x[5], x[10]])).toEqual([
      ['Ann', '+12025550170', 'x', 'callable', ''],
      ['', '', '', 'invalid', 'missing_number'],
      ['', '', '', 'invalid', 'missing_number'],
      ['Bob', '+12025550171', 'y', 'do_not_call', ''],
    ]);
  });

  it('a NUL byte far past the first 64 KiB is an input error naming its line; nothing written; what was looked up before it is kept, never paid twice', async () => {
    sb.reset();
    const input = fixture('nul-after-64k.csv');
    const { r, out } = await scrub('nul-after-64k.csv');
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_BINARY]');
    expect(r.stderr).toContain('line 1187:');
    expect(() => readFileSync(out)).toThrow();
    // Lookups start while the list is read: numbers read before the bad byte may have been sent, and only those.
    const goodNumbers = new Set(
      readFileSync(input)
        .subarray(0, readFileSync(input).indexOf(0))
        .toString('utf8')
        .match(/\+\d{11}/g) ?? [],
    );
    const sentFirst = lookedUp(sb);
    for (const n of sentFirst) expect(goodNumbers.has(n), n).toBe(true);
    expect(new Set(sentFirst).size).toBe(sentFirst.length);
    if (sentFirst.length > 0)
      expect(r.stderr).toMatch(/kept in the journal: run the same command once the list is fixed/);
    // The list fixed (the NUL byte made a space): the run finishes it and sends none of those again.
    const fixed = path.join(tmp.dir, 'nul-fixed.csv');
    writeFileSync(fixed, Buffer.from(readFileSync(input).map((b) => (b === 0 ? 0x20 : b))));
    const again = await runDnc(['batch', fixed, '-o', out], { env });
    expect(again.code, again.stderr).toBe(0);
    const all = lookedUp(sb);
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeGreaterThan(sentFirst.length);
  });

  it('line and record numbers agree between --dry-run and verify once cells hold line breaks', async () => {
    const dry = await runDnc(['batch', fixture('lines-vs-records.csv'), '--dry-run'], { env });
    expect(dry.code, dry.stderr).toBe(0);
    // The bad number is on physical line 5, which is record 3 (the spreadsheet's row 3).
    expect(dry.stdout).toContain('line 5 (record 3):');
    const { r, out } = await scrub('lines-vs-records.csv');
    expect(r.code, r.stderr).toBe(7);
    // The AU row (webhook-only, not sent) is on line 6, record 4: verify names both.
    const v = await runDnc(['verify', out, '--json'], { env });
    const report = JSON.parse(v.stdout) as { recheck: Array<{ line: number; record: number; reason: string }> };
    expect(report.recheck.map((x) => [x.line, x.record, x.reason])).toEqual([[6, 4, 'not_checked']]);
    const human = await runDnc(['verify', out], { env });
    expect(human.stdout).toContain('line 6 (record 4)');
  });
});

describe('faults found in the bytes name the line and the record, where they differ', () => {
  // Each data record takes two physical lines (a cell holds a line break): record R starts on line 2R - 2.
  const records = (n: number) =>
    Array.from({ length: n }, (_, i) => `"multi\nline ${i}",+1202555${String(1000 + i).padStart(4, '0')}`);
  const cases: Array<{
    name: string;
    bytes: (rows: string[]) => Buffer;
    rows: number;
    says: string;
    line: number;
    record: number;
  }> = [
    // Within the first read (the header's), and far past it (read while lookups would run).
    {
      name: 'a NUL byte near the start',
      rows: 3,
      bytes: (r) => Buffer.from(`name,phone\n${r.join('\n')}\nx\0y,+12025550100\n`),
      says: 'the file holds a NUL byte',
      line: 8,
      record: 5,
    },
    {
      name: 'a NUL byte past 64 KiB',
      rows: 3000,
      bytes: (r) => Buffer.from(`name,phone\n${r.join('\n')}\nx\0y,+12025550100\n`),
      says: 'the file holds a NUL byte',
      line: 6002,
      record: 3002,
    },
    {
      name: 'a NUL byte inside a multi-line cell',
      rows: 3000,
      bytes: (r) => Buffer.from(`name,phone\n${r.join('\n')}\n"x\n\0y",+12025550100\n`),
      says: 'the file holds a NUL byte',
      line: 6003,
      record: 3002,
    },
    {
      name: 'a byte that is not UTF-8',
      rows: 3000,
      bytes: (r) =>
        Buffer.concat([
          Buffer.from(`name,phone\n${r.join('\n')}\nx`),
          Buffer.from([0xff]),
          Buffer.from('y,+12025550100\n'),
        ]),
      says: 'the text is not valid UTF-8',
      line: 6002,
      record: 3002,
    },
    {
      name: 'a file ending inside a UTF-8 character',
      rows: 3000,
      bytes: (r) =>
        Buffer.concat([Buffer.from(`name,phone\n${r.join('\n')}\nx,+12025550100\n`), Buffer.from([0xe2, 0x82])]),
      says: 'the file ends in the middle of a UTF-8 character',
      line: 6003,
      record: 3003,
    },
    {
      name: 'a quote never closed',
      rows: 3,
      bytes: (r) => Buffer.from(`name,phone\n${r.join('\n')}\n"x,+12025550100\nCy,+12025550101\n`),
      says: 'a quoted field is never closed',
      line: 8,
      record: 5,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: exit 3, "line ${c.line} (record ${c.record})"`, async () => {
      const input = path.join(tmp.dir, `bytes-${c.name.replace(/\W+/g, '-')}.csv`);
      const bytes = c.bytes(records(c.rows));
      writeFileSync(input, bytes);
      // The oracle: the line counted in the bytes up to the fault, the record as Python's csv counts them.
      const fault = c.name.includes('quote')
        ? bytes.indexOf('"x,')
        : c.name.includes('ending')
          ? bytes.length - 2
          : c.name.includes('UTF-8')
            ? bytes.indexOf(0xff)
            : bytes.indexOf(0);
      expect(bytes.subarray(0, fault).toString('latin1').split('\n').length).toBe(c.line);
      // (The bytes before the fault, ended so that the record at fault is a whole one: its quote closed, or a character added.)
      const prefix = bytes.subarray(0, fault).toString('latin1');
      const before = path.join(tmp.dir, 'bytes-before.csv');
      writeFileSync(before, prefix + ((prefix.split('"').length - 1) % 2 === 1 ? '"' : 'x'), 'latin1');
      expect(readCsvIndependently(before, ',', 'latin-1')).toHaveLength(c.record);
      const r = await runDnc(['batch', input, '--dry-run'], { env });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`line ${c.line} (record ${c.record}): ${c.says}`);
    });
  }
});

describe('dnc verify re-reads the file as a dialler would', () => {
  it('a file whose rows a dialler would split is not fit, even with a manifest whose hash matches it', async () => {
    const { r, out } = await scrub('excel-alt-enter-crlf.csv');
    expect(r.code, r.stderr).toBe(0);
    // What the old writer produced: the cell with a bare LF left unquoted, and a manifest describing that file.
    rewriteOutputAndManifest(out, readFileSync(out, 'utf8').replace('"Ann\nLee"', 'Ann\nLee'));
    const v = await runDnc(['verify', out, '--json'], { env });
    const report = JSON.parse(v.stdout) as {
      fit: boolean;
      tampered: boolean;
      sha256_matches: boolean;
      differences: string[];
    };
    expect(report.sha256_matches).toBe(true);
    expect(report.fit).toBe(false);
    expect(report.tampered).toBe(true);
    expect(report.differences[0]).toMatch(/does not read as the CSV dnc wrote: .*line 2.*field/);
    expect(v.code).not.toBe(0);
  });

  it('a header whose dnc columns were renamed or whose input columns differ from the input is not fit', async () => {
    const { r, out } = await scrub('mixed-endings.csv');
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(out, 'utf8').replace('dnc_result', 'verdict');
    writeFileSync(out, text);
    const v = await runDnc(['verify', out, '--json'], { env });
    const report = JSON.parse(v.stdout) as { fit: boolean; differences: string[] };
    expect(report.fit).toBe(false);
    expect(report.differences).toContain(
      `the header's last columns are not ${[...DNC_COLUMNS, ...CALLING_COLUMNS].join(', ')}`,
    );
  });
});
