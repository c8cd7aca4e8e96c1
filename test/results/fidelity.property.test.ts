// Property: whatever the cells, line endings, delimiter and BOM of a call list, the results file and both
// lists read back with an independent CSV reader (Python's csv) as exactly the input's records, cell for cell,
// in order, plus the dnc columns; `dnc verify` finds nothing tampered. The seed is printed on failure.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLING_COLUMNS, DNC_COLUMNS as CONTRACT_COLUMNS } from '../../src/results/columns.js';

/** The dnc_* columns of an output of one phone column: the contract's, then the calling columns. */
const DNC_COLUMNS = [...CONTRACT_COLUMNS, ...CALLING_COLUMNS];
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { CsvOracle } from '../helpers/csv-oracle.js';
import { sandbox, scratch, scratchFolders, sha256 } from '../batch/helpers.js';

/** Cases per run: thousands, in CI as anywhere (DNC_PROPERTY_RUNS to change it). */
const RUNS = Number(process.env.DNC_PROPERTY_RUNS ?? 2000);

let sb: Sandbox;
let env: Record<string, string>;
let oracle: CsvOracle;
// In memory where the system has it (/dev/shm): every case syncs its outputs, its manifest and its journal to disk,
// which on a shared disk took most of a case's time (≈ 2.6× slower on /tmp, 150 cases side by side). What this
// property checks is what the files hold; that they reach the disk is test/results/durability.test.ts's.
const tmp = inMemoryScratch() ?? scratch();

function inMemoryScratch(): { dir: string; remove(): void } | null {
  try {
    const dir = mkdtempSync(path.join('/dev/shm', 'dnc-property-'));
    return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch {
    return null;
  }
}

beforeAll(async () => {
  ({ sb, env } = await sandbox());
  // The results cache and the state folder with the cases, not in a home shared with other tests.
  env = { ...env, ...scratchFolders(tmp.dir) };
  oracle = new CsvOracle();
});
afterAll(async () => {
  oracle.close();
  await sb.close();
  tmp.remove();
});

const DELIMITERS = [',', ';', '\t', '|'] as const;
type Ending = '\n' | '\r\n' | '\r';
const ENDINGS: Ending[] = ['\n', '\r\n', '\r'];

// Fragments that break naive writers and readers: every delimiter, quotes, each line break, spaces at the
// edges, non-ASCII text (two- to four-byte UTF-8), and what spreadsheets take for a formula.
const fragment = fc.constantFrom(
  'a',
  'Z',
  '7',
  ' ',
  '  ',
  'é',
  '中',
  '😀',
  ',',
  ';',
  '\t',
  '|',
  '"',
  '""',
  '\r',
  '\n',
  '\r\n',
  '=',
  '+',
  '-',
  '@',
  "'",
  '=1+2',
  '@SUM(A1)',
);
const cell = fc.array(fragment, { maxLength: 5 }).map((parts) => parts.join(''));
const validNumber = fc.integer({ min: 100, max: 199 }).map((n) => `+12025550${n}`);
const phoneCell = fc.oneof(
  { weight: 5, arbitrary: validNumber },
  { weight: 1, arbitrary: validNumber.map((n) => ` ${n.slice(0, 2)} ${n.slice(2, 5)} ${n.slice(5)} `) },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: cell },
);

interface Table {
  header: string[];
  phoneIndex: number;
  rows: string[][];
  delimiter: (typeof DELIMITERS)[number];
  /** One ending per record after the header's, or all the same. */
  endings: Ending[];
  bom: boolean;
  trailingBreak: boolean;
  quoteAll: boolean;
  escapeFormulas: boolean;
}

const table: fc.Arbitrary<Table> = fc
  .record({
    columns: fc.integer({ min: 1, max: 4 }),
    phoneAt: fc.nat(),
    rowCount: fc.integer({ min: 1, max: 8 }),
    delimiter: fc.constantFrom(...DELIMITERS),
    mixed: fc.boolean(),
    ending: fc.constantFrom(...ENDINGS),
    bom: fc.boolean(),
    trailingBreak: fc.boolean(),
    quoteAll: fc.boolean(),
    escapeFormulas: fc.boolean(),
    seed: fc.array(fc.tuple(phoneCell, fc.array(cell, { minLength: 4, maxLength: 4 }), fc.constantFrom(...ENDINGS)), {
      minLength: 8,
      maxLength: 8,
    }),
  })
  .map((r) => {
    const phoneIndex = r.phoneAt % r.columns;
    const header = Array.from({ length: r.columns }, (_, i) => (i === phoneIndex ? 'phone' : `c${i + 1}`));
    const rows = r.seed
      .slice(0, r.rowCount)
      .map(([phone, others]) => header.map((_, i) => (i === phoneIndex ? phone : others[i]!)));
    const endings = r.seed.map(([, , e]) => (r.mixed ? e : r.ending));
    return {
      header,
      phoneIndex,
      rows,
      delimiter: r.delimiter,
      endings: [r.ending, ...endings],
      bom: r.bom,
      trailingBreak: r.trailingBreak,
      quoteAll: r.quoteAll,
      escapeFormulas: r.escapeFormulas,
    };
  });

/** The test's own CSV writer (RFC 4180): the input side, independent of dnc's writer. */
function serialise(t: Table): string {
  // Quoted only where RFC 4180 needs it (the file's own delimiter, a quote, CR, LF), or everywhere: so the other
  // delimiters also stand bare in cells (a ';' in a comma file), as they do in real exports.
  const needs = (v: string) => v.includes(t.delimiter) || /["\r\n]/.test(v);
  const field = (v: string) => (t.quoteAll || needs(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const records = [t.header, ...t.rows].map((r) => r.map(field).join(t.delimiter));
  let text = t.bom ? '\uFEFF' : '';
  for (let i = 0; i < records.length; i++) {
    text += records[i];
    const last = i === records.length - 1;
    if (!last || t.trailingBreak || records[i] === '') {
      let ending = t.endings[i]!;
      // A lone CR then an empty record's LF would be one CRLF: no reader could tell them apart.
      if (ending === '\r' && records[i + 1] === '' && (t.endings[i + 1] ?? '\n').startsWith('\n')) ending = '\r\n';
      text += ending;
    }
  }
  return text;
}

// docs/csv-files.md: a cell that starts with = + - @ TAB or CR, or with white space before = + - @.
const escapeFormula = (v: string) => (/^[=+\-@\t\r]/.test(v) || /^\s+[=+\-@]/.test(v) ? `'${v}` : v);

let caseNo = 0;

describe('results file fidelity (property, independent reader)', () => {
  it(`${RUNS} generated call lists read back intact from the output and both lists`, async () => {
    await fc.assert(
      fc.asyncProperty(table, async (t) => {
        const dir = path.join(tmp.dir, `case-${caseNo++}`);
        mkdirSync(dir);
        const input = path.join(dir, 'in.csv');
        writeFileSync(input, serialise(t));
        const before = sha256(input);
        const out = path.join(dir, 'out.csv');
        const args = [
          'batch',
          input,
          '-o',
          out,
          '--delimiter',
          t.delimiter === '\t' ? 'tab' : t.delimiter,
          '--callable-out',
          path.join(dir, 'call.csv'),
          '--suppressed-out',
          path.join(dir, 'dnc.csv'),
          '--quiet',
          '--concurrency',
          '4',
        ];
        if (t.escapeFormulas) args.push('--escape-formulas');
        const r = await runDnc(args, { env });
        expect(r.code, r.stderr).toBe(0);
        expect(sha256(input)).toBe(before);

        const asWritten = (row: string[]) => (t.escapeFormulas ? row.map(escapeFormula) : row);
        const records = await oracle.read(out, t.delimiter);
        expect(records[0]).toEqual([...asWritten(t.header), ...DNC_COLUMNS]);
        expect(records.length).toBe(t.rows.length + 1);
        const callable: string[][] = [];
        const suppressed: string[][] = [];
        t.rows.forEach((row, i) => {
          const got = records[i + 1]!;
          expect(got.length).toBe(t.header.length + DNC_COLUMNS.length);
          expect(got.slice(0, t.header.length)).toEqual(asWritten(row));
          const dnc = Object.fromEntries(DNC_COLUMNS.map((c, j) => [c, got[t.header.length + j]!]));
          if (row[t.phoneIndex]!.trim() === '')
            expect([dnc.dnc_result, dnc.dnc_error_code]).toEqual(['invalid', 'missing_number']);
          for (const c of ['dnc_list_source', 'dnc_error', 'dnc_error_code', 'dnc_correlation_id'])
            expect(dnc[c]).not.toMatch(/^[=@\-\t\r]/);
          if (dnc.dnc_result === 'callable') callable.push(asWritten(row));
          if (dnc.dnc_result === 'do_not_call') suppressed.push(asWritten(row));
        });
        expect(await oracle.read(path.join(dir, 'call.csv'), t.delimiter)).toEqual([asWritten(t.header), ...callable]);
        expect(await oracle.read(path.join(dir, 'dnc.csv'), t.delimiter)).toEqual([asWritten(t.header), ...suppressed]);
        // The output keeps the input's first line ending for its records, and its BOM.
        const text = readFileSync(out, 'utf8');
        expect(text.startsWith('\uFEFF')).toBe(t.bom);
        expect(text.slice(t.bom ? 1 : 0).split(t.endings[0]!)[0]).toBe(
          [...asWritten(t.header), ...DNC_COLUMNS]
            .map((v) => (/[",;\t|\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v))
            .join(t.delimiter),
        );
        const v = await runDnc(['verify', out, '--json'], { env });
        const report = JSON.parse(v.stdout) as { tampered: boolean; differences: string[] };
        expect(report.tampered, JSON.stringify(report.differences)).toBe(false);
      }),
      // A failure prints its seed; DNC_PROPERTY_SEED=<seed> runs the same cases again.
      {
        numRuns: RUNS,
        verbose: 1,
        ...(process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {}),
      },
    );
  }, 900_000);
});
