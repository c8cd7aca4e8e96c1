// FitRows says a row was judged fit before only when its cells are exactly those of the number's row kept (all but
// dnc_credits, in the same column), judged against a plain oracle (the cells as JSON) over generated rows; it keeps at
// most `capacity` numbers. The seed is printed on failure.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FitRows } from '../../src/verify/fit-rows.js';
import { C } from '../../src/results/columns.js';

const options = {
  numRuns: 300,
  ...(process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {}),
};

/** Cells of 14 columns from a few values each, so that rows often agree and often differ by one cell. */
const cellsArb = fc.array(fc.constantFrom('', 'a', 'b', 'US', 'callable', '\0', 'a\0', '1'), {
  minLength: 14,
  maxLength: 14,
});
const numberArb = fc.constantFrom('+12125550100', '+12125550101', '+442079460100');
const columnArb = fc.constantFrom(null, 1, 2);

const oracleText = (cells: readonly string[], column: number | null) =>
  JSON.stringify([column, cells.filter((_, i) => i !== C.credits)]);

describe('FitRows', () => {
  it('knows a row only by all its cells but the credits, in its column; the last row added for a number counts', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), numberArb, cellsArb, columnArb), { maxLength: 40 }), (steps) => {
        const fit = new FitRows();
        const oracle = new Map<string, string>();
        for (const [add, e164, cells, column] of steps) {
          if (add) {
            fit.add(e164, cells, column);
            oracle.set(e164, oracleText(cells, column));
          } else {
            expect(fit.has(e164, cells, column)).toBe(oracle.get(e164) === oracleText(cells, column));
          }
        }
      }),
      options,
    );
  });

  it('keeps the first `capacity` numbers, and a kept number’s later rows; never more', () => {
    const fit = new FitRows(2);
    const row = (x: string) => ['+1', 'US', x, '', '', '', '', '', '', '1', '', '', '', ''];
    fit.add('+12125550100', row('callable'), null);
    fit.add('+12125550101', row('do_not_call'), null);
    fit.add('+12125550102', row('callable'), null);
    expect(fit.has('+12125550100', row('callable'), null)).toBe(true);
    expect(fit.has('+12125550101', row('do_not_call'), null)).toBe(true);
    expect(fit.has('+12125550102', row('callable'), null)).toBe(false);
    // A kept number's row replaced (its last row judged fit), at capacity.
    fit.add('+12125550100', row('failed'), null);
    expect(fit.has('+12125550100', row('callable'), null)).toBe(false);
    expect(fit.has('+12125550100', row('failed'), null)).toBe(true);
    // Credits are not compared; the column is.
    expect(
      fit.has(
        '+12125550100',
        row('failed').map((c, i) => (i === C.credits ? '0' : c)),
        null,
      ),
    ).toBe(true);
    expect(fit.has('+12125550100', row('failed'), 1)).toBe(false);
  });

  it("does not keep a row far longer than dnc writes (its memory stays bounded whatever a file's cells hold)", () => {
    const fit = new FitRows();
    const row = (error: string) => ['+12125550100', 'US', 'failed', '', '', '', '', 'x', error, '0', '', '', '', ''];
    fit.add('+12125550100', row('e'.repeat(2_000)), null);
    expect(fit.has('+12125550100', row('e'.repeat(2_000)), null)).toBe(false);
    fit.add('+12125550100', row('e'.repeat(200)), null);
    expect(fit.has('+12125550100', row('e'.repeat(200)), null)).toBe(true);
  });
});
