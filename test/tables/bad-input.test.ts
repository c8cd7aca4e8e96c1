// The bad-input corpus (fixtures/bad/cases.json): each file's exit code, error code and the line its message names; nothing sent.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { FIXTURES, lookedUp, readCsvObjects, sandbox, scratch, sha256 } from '../batch/helpers.js';

interface Case {
  file: string;
  args?: string[];
  exit: number;
  code?: string;
  line?: number | null;
  invalidRows?: number;
}

const corpus = JSON.parse(readFileSync(path.join(FIXTURES, 'bad', 'cases.json'), 'utf8')) as { cases: Case[] };

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

describe('bad-input corpus', () => {
  it('has at least 30 files, each with a documented case', () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of corpus.cases) {
    it(`${c.file} → exit ${c.exit}${c.code ? ` ${c.code}` : ''}`, async () => {
      sb.reset();
      const input = path.join(FIXTURES, 'bad', c.file);
      const before = sha256(input);
      const output = path.join(tmp.dir, `${c.file}.out.csv`);
      const r = await runDnc(['batch', input, '-o', output, ...(c.args ?? [])], { env });
      expect(r.code, r.stderr).toBe(c.exit);
      expect(lookedUp(sb)).toEqual([]);
      expect(sha256(input)).toBe(before);
      if (c.exit === 0) {
        const rows = readCsvObjects(output);
        const invalid = rows.filter(
          (x) =>
            x.dnc_result === 'invalid' &&
            ['unparseable_number', 'missing_number', 'excel_damaged_number'].includes(x.dnc_error_code!),
        );
        expect(invalid).toHaveLength(c.invalidRows!);
        // Only a cell with nothing in it is missing_number; anything written there is unparseable_number.
        // A number in scientific notation is one Excel damaged (its last digits are gone): said so apart.
        for (const row of invalid) {
          const phone = row.phone!.trim();
          expect(row.dnc_error_code).toBe(
            phone === ''
              ? 'missing_number'
              : /^\d(\.\d+)?E\+\d+$/i.test(phone)
                ? 'excel_damaged_number'
                : 'unparseable_number',
          );
        }
        expect(rows).toHaveLength(c.invalidRows!);
        for (const row of rows) expect(row.dnc_error).not.toBe('');
        return;
      }
      expect(r.stderr).toContain(`[${c.code}]`);
      if (c.line !== null && c.line !== undefined) expect(r.stderr).toContain(`line ${c.line}:`);
      if (c.exit === 3) expect(r.stderr).toContain(input);
      // A refused list leaves nothing beside its output: no empty journal (nor its -wal, -shm or lock).
      expect(readdirSync(tmp.dir).filter((f) => f.startsWith(`${c.file}.out.csv`))).toEqual([]);
    });
  }

  it('refuses a 10 MB line with exit 3 naming its line, and reads nothing past it', async () => {
    const input = path.join(tmp.dir, 'huge-line.csv');
    writeFileSync(input, `name,phone\nAnn,+12025550100\nBob,"${'x'.repeat(10 * 1024 * 1024)}"\nCy,+12025550102\n`);
    const r = await runDnc(['batch', input, '-o', path.join(tmp.dir, 'huge.out.csv')], { env });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/line 3: a record longer than/);
    expect(lookedUp(sb)).toEqual([]);
    expect(readdirSync(tmp.dir).filter((f) => f.startsWith('huge.out.csv'))).toEqual([]);
  });

  it('a list refused deep into its reading keeps its journal when lookups were sent meanwhile (they were paid for)', async () => {
    sb.reset();
    const input = path.join(tmp.dir, 'late-error.csv');
    const rows = Array.from({ length: 30_000 }, (_, i) => `r${i},+1202${String(5_550_000 + i).padStart(7, '0')}`);
    writeFileSync(input, `name,phone\n${rows.join('\n')}\nbad,"+1202\n`);
    const output = path.join(tmp.dir, 'late.out.csv');
    const r = await runDnc(['batch', input, '-o', output], { env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_MALFORMED]');
    // Lookups start while the list is read: whether any went out before the error depends on the machine.
    expect(readdirSync(tmp.dir).includes('late.out.csv.journal.sqlite')).toBe(lookedUp(sb).length > 0);
  });

  it('refuses a 10 MB header line with exit 3', async () => {
    const input = path.join(tmp.dir, 'huge-header.csv');
    writeFileSync(input, `phone,${'y'.repeat(10 * 1024 * 1024)}\n+12025550100,a\n`);
    const r = await runDnc(['batch', input, '-o', path.join(tmp.dir, 'hh.out.csv')], { env });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/line 1 is longer than/);
  });

  it('refuses a missing file and a folder with exit 3', async () => {
    const missing = await runDnc(['batch', path.join(tmp.dir, 'nope.csv')], { env });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('no such file');
    const dir = path.join(tmp.dir, 'a-folder.csv');
    mkdirSync(dir);
    const folder = await runDnc(['batch', dir, '-o', path.join(tmp.dir, 'f.out.csv')], { env });
    expect(folder.code).toBe(3);
    expect(folder.stderr).toContain('directory');
  });
});
