import { describe, expect, it } from 'vitest';
import { formatInteger, paint, renderTable, tsvLine, visibleLength, wrap } from '../../src/render/table.js';

const piped = { tty: false, color: false, columns: 80 };
const terminal = { tty: true, color: false, columns: 80 };

describe('renderTable', () => {
  it('writes a head line and one tab-separated line per row when piped, plain numbers, no colour', () => {
    const text = renderTable(
      {
        head: ['country', 'requests'],
        rows: [
          ['US', 12345],
          ['GB', 0],
        ],
      },
      { ...piped, color: true },
    );
    expect(text).toBe('country\trequests\nUS\t12345\nGB\t0\n');
  });

  it('keeps each piped record on one line: tabs and line breaks inside a cell become spaces', () => {
    expect(tsvLine(['a\tb', 'c\r\nd', null, undefined, 7])).toBe('a b\tc d\t\t\t7');
  });

  it('can leave out the head line when piped', () => {
    expect(renderTable({ head: ['a'], rows: [['x']], header: false }, piped)).toBe('x\n');
  });

  it('draws a box on a terminal, numbers right-aligned with separators', () => {
    const lines = renderTable(
      {
        head: ['Country', 'Requests'],
        rows: [
          ['US', 12345],
          ['GB', 7],
        ],
      },
      terminal,
    )
      .trimEnd()
      .split('\n');
    expect(lines[0]!.startsWith('┌')).toBe(true);
    expect(lines.at(-1)!.startsWith('└')).toBe(true);
    expect(lines).toContain('│ US      │   12,345 │');
    expect(lines).toContain('│ GB      │        7 │');
  });

  it('never draws a table wider than the terminal', () => {
    const long = 'x'.repeat(200);
    const text = renderTable({ head: ['key', 'value'], rows: [['k', long]] }, { ...terminal, columns: 60 });
    for (const line of text.trimEnd().split('\n')) expect(visibleLength(line)).toBeLessThanOrEqual(60);
    expect(text).toContain('…');
  });

  it('a terminal that reports no width (0) gets a table 80 columns wide, not one-character columns', () => {
    const spec = {
      head: ['result', 'rows'],
      rows: [
        ['do_not_call', 1],
        ['x'.repeat(120), 2],
      ],
    };
    const text = renderTable(spec, { ...terminal, columns: 0 });
    expect(text).toBe(renderTable(spec, { ...terminal, columns: 80 }));
    expect(text).toContain('│ do_not_call');
    for (const line of text.trimEnd().split('\n')) expect(visibleLength(line)).toBeLessThanOrEqual(80);
  });

  it('makes the head bold only when colour is on', () => {
    const spec = { head: ['A'], rows: [['x']] };
    expect(renderTable(spec, terminal)).not.toContain('\u001b[');
    expect(renderTable(spec, { ...terminal, color: true })).toContain('\u001b[1mA\u001b[22m');
  });
});

describe('helpers', () => {
  it('paint is the identity with colour off', () => {
    expect(paint(false, 'red', 'x')).toBe('x');
    expect(visibleLength(paint(true, 'red', 'abc'))).toBe(3);
  });
  it('wraps prose at the width, keeping long words whole', () => {
    expect(wrap('aaa bbb ccc ddd eee fff ggg hhh iii', 20)).toBe('aaa bbb ccc ddd eee\nfff ggg hhh iii\n');
    expect(wrap(`x ${'y'.repeat(30)} z`, 20)).toBe(`x\n${'y'.repeat(30)}\nz\n`);
  });
  it('formats integers the same on every machine', () => {
    expect(formatInteger(1234567)).toBe('1,234,567');
    expect(formatInteger(-750)).toBe('-750');
  });
});
