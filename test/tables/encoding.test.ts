// CSV call lists in Windows-1252, Latin-1 and UTF-16: read with --encoding (UTF-16 found by its byte-order mark),
// results written in the input's encoding with every input cell byte for byte, read back by Python's csv.
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { FIXTURES, lookedUp, sandboxForFile, sha256 } from '../batch/helpers.js';

const ctx = sandboxForFile();
const tmp = { dir: ctx.dir };

let n = 0;
function fixture(name: string): string {
  const to = path.join(tmp.dir, `${++n}-${name}`);
  copyFileSync(path.join(FIXTURES, 'encoding', name), to);
  return to;
}

/** A record delimiter as bytes of an encoding. */
function encodedNewline(newline: string, encoding: BufferEncoding | 'utf-16be'): Buffer {
  const le = Buffer.from(newline, 'utf16le');
  if (encoding === 'utf16le') return le;
  if (encoding === 'utf-16be') return Buffer.from(le).swap16();
  return Buffer.from(newline, 'latin1');
}

/** The lines of a file as bytes (after a byte-order mark of `bomLength` bytes). */
function byteLines(file: string, newline: Buffer, bomLength: number): Buffer[] {
  const bytes = readFileSync(file).subarray(bomLength);
  const lines: Buffer[] = [];
  let start = 0;
  for (let i = bytes.indexOf(newline); i >= 0; i = bytes.indexOf(newline, start)) {
    // UTF-16 code units are two bytes: a match must start on one.
    if (newline.length === 4 && i % 2 === 1) {
      i = bytes.indexOf(newline, i + 1);
      if (i < 0) break;
    }
    lines.push(bytes.subarray(start, i));
    start = i + newline.length;
  }
  return lines;
}

const CASES = [
  {
    file: 'windows-1252-crlf.csv',
    args: ['--encoding', 'windows-1252'],
    python: 'cp1252',
    newline: '\r\n',
    bytes: 'latin1',
    bom: 0,
  },
  { file: 'latin1-lf.csv', args: ['--encoding', 'latin1'], python: 'latin-1', newline: '\n', bytes: 'latin1', bom: 0 },
  { file: 'utf16le-bom.csv', args: [], python: 'utf-16', newline: '\r\n', bytes: 'utf16le', bom: 2 },
  { file: 'utf16be-bom.csv', args: [], python: 'utf-16', newline: '\n', bytes: 'utf-16be', bom: 2 },
] as const;

describe('a CSV list in another encoding than UTF-8', () => {
  for (const c of CASES) {
    it(`${c.file}: read ${c.args.length ? `with ${c.args.join(' ')}` : 'by its byte-order mark'}, written back in it, input cells byte for byte`, async () => {
      const input = fixture(c.file);
      const before = sha256(input);
      const out = path.join(tmp.dir, `${n}-out.csv`);
      const r = await runDnc(['batch', input, '-o', out, ...c.args], { env: ctx.env, cwd: tmp.dir });
      expect(r.code, r.stderr).toBe(0);
      expect(sha256(input)).toBe(before);
      const original = readCsvIndependently(input, ',', c.python);
      const results = readCsvIndependently(out, ',', c.python);
      expect(results).toHaveLength(original.length);
      const width = original[0]!.length;
      for (let i = 0; i < original.length; i++)
        expect(results[i]!.slice(0, width), `record ${i + 1}`).toEqual(original[i]);
      // Accented names came through as text, not as mojibake.
      expect(results.map((row) => row[0])).toContain('Zoë Brontë');
      // Byte for byte: each output line starts with the input line's bytes, then the delimiter.
      const newline = encodedNewline(c.newline, c.bytes as BufferEncoding);
      const inLines = byteLines(input, newline, c.bom);
      const outLines = byteLines(out, newline, c.bom);
      expect(outLines).toHaveLength(inLines.length);
      const comma = encodedNewline(',', c.bytes as BufferEncoding);
      for (let i = 0; i < inLines.length; i++) {
        expect(outLines[i]!.subarray(0, inLines[i]!.length).equals(inLines[i]!), `line ${i + 1}`).toBe(true);
        expect(outLines[i]!.subarray(inLines[i]!.length, inLines[i]!.length + comma.length).equals(comma)).toBe(true);
      }
      expect(readFileSync(out).subarray(0, c.bom)).toEqual(readFileSync(input).subarray(0, c.bom));
      const phones = results
        .slice(1)
        .map((row) => row[width])
        .filter((p) => p);
      expect(new Set(lookedUp(ctx.sb))).toEqual(new Set(phones));
      const v = await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir });
      expect(v.stdout).toContain('rows compared with the journal and the input');
      expect(v.code, v.stdout).toBe(0);
    });
  }

  it('suggests windows-1252 when the file is not UTF-8, naming the line', async () => {
    const r = await runDnc(['batch', fixture('windows-1252-crlf.csv'), '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('line 2: the text is not valid UTF-8');
    expect(r.stderr).toContain('--encoding windows-1252');
    expect(lookedUp(ctx.sb)).toEqual([]);
  });

  it('names --encoding for a UTF-16 file without a byte-order mark (not "binary"), and reads it when given', async () => {
    for (const [encoding, swap] of [
      ['utf-16le', false],
      ['utf-16be', true],
    ] as const) {
      const file = path.join(tmp.dir, `${++n}-${encoding}-no-bom.csv`);
      const le = Buffer.from('name,phone\r\nAnn,+12025550100\r\nBob,+12025550101\r\n', 'utf16le');
      writeFileSync(file, swap ? Buffer.from(le).swap16() : le);
      const r = await runDnc(['batch', file, '--dry-run'], { env: ctx.env, cwd: tmp.dir });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain('[E_INPUT_ENCODING]');
      expect(r.stderr).toContain(`looks like ${encoding.toUpperCase()} without a byte-order mark`);
      expect(r.stderr).toContain(`--encoding ${encoding}`);
      expect(r.stderr).not.toMatch(/binary/i);
      const given = await runDnc(['batch', file, '--dry-run', '--encoding', encoding], { env: ctx.env, cwd: tmp.dir });
      expect(given.code, given.stderr).toBe(0);
    }
    expect(lookedUp(ctx.sb)).toEqual([]);
  });

  it('names the line of a byte that is not UTF-8 when a character before it spans two reads (the reads are 4 KiB, 16 KiB, then 64 KiB)', async () => {
    // Lines of 12 bytes ("name,phone\n" then "n,+1202555…\n"): a 3-byte € placed across the first read's end at 4,096.
    const lines = ['name,phone'];
    for (let i = 0; lines.join('\n').length < 4_200; i++) lines.push(`n${i % 10},+12025550${String(100 + (i % 900))}`);
    let text = `${lines.join('\n')}\n`;
    text = `${text.slice(0, 4_095 - 1)}\u20ac${text.slice(4_095 - 1 + 1)}`; // the € at bytes 4,094–4,096 (ASCII before it)
    const head = Buffer.from(text, 'utf8');
    expect([...head.subarray(4_094, 4_097)]).toEqual([0xe2, 0x82, 0xac]);
    const more = Array.from({ length: 100 }, (_, i) => `m${i},+12025551${String(100 + i)}`);
    const bad = Buffer.concat([head, Buffer.from(`${more.join('\n')}\n`), Buffer.from([0x6e, 0x2c, 0xff, 0x0a])]);
    const badLine = bad
      .subarray(0, bad.length - 2)
      .toString('latin1')
      .split('\n').length;
    const file = path.join(tmp.dir, `${n}-split-char.csv`);
    writeFileSync(file, bad);
    const r = await runDnc(['batch', file, '--dry-run'], { env: ctx.env, cwd: tmp.dir });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(`line ${badLine}: the text is not valid UTF-8`);
  });

  it('writes --output-encoding utf-8 from a Windows-1252 list: the same text, as UTF-8', async () => {
    const input = fixture('windows-1252-crlf.csv');
    const out = path.join(tmp.dir, `${n}-utf8.csv`);
    const r = await runDnc(['batch', input, '-o', out, '--encoding', 'cp1252', '--output-encoding', 'utf-8'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    const bytes = readFileSync(out);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes)).not.toThrow();
    expect(bytes.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))).toBe(false);
    const original = readCsvIndependently(input, ',', 'cp1252');
    expect(readCsvIndependently(out, ',', 'utf-8').map((row) => row.slice(0, 4))).toEqual(original);
    expect((await runDnc(['verify', out], { env: ctx.env, cwd: tmp.dir })).code).toBe(0);
  });

  it('refuses an --encoding a UTF-16 byte-order mark contradicts, and an encoding it does not know', async () => {
    const bom = await runDnc(['batch', fixture('utf16le-bom.csv'), '--dry-run', '--encoding', 'windows-1252'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(bom.code).toBe(3);
    expect(bom.stderr).toContain('the file is UTF-16LE');
    const bad = await runDnc(['batch', fixture('latin1-lf.csv'), '--dry-run', '--encoding', 'ebcdic'], {
      env: ctx.env,
      cwd: tmp.dir,
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--encoding must be one of utf-8, windows-1252, latin1, utf-16le, utf-16be');
    expect(lookedUp(ctx.sb)).toEqual([]);
  });
});
