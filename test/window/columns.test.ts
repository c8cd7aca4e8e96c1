// Where `dnc window` finds each row's numbers: the row-level dnc_* cells, or one dnc_N_* group per phone column.
import { describe, expect, it } from 'vitest';
import { resultColumns } from '../../src/results/row-cells.js';
import { rowNumbersOf } from '../../src/window/columns.js';

describe('rowNumbersOf', () => {
  it('one phone column: the row-level number, country and result', () => {
    const cells = ['+12125550100', 'US', 'callable', 'false', '', '', 'cid', '', '', '1', '', ''];
    expect(rowNumbersOf(1, false).numbersOf(cells)).toEqual([
      { e164: '+12125550100', country: 'US', result: 'callable', column: null },
    ]);
  });

  it.each([true, false])('several phone columns (calling columns: %s): each dnc_N group, in order', (calling) => {
    const names = resultColumns(3, calling);
    const cells = names.map(() => '');
    const set = (name: string, value: string) => (cells[names.indexOf(name)] = value);
    set('dnc_phone_e164', '+12125550100');
    set('dnc_result', 'callable');
    set('dnc_1_e164', '+12125550100');
    set('dnc_1_result', 'callable');
    set('dnc_2_e164', '+442079460100');
    set('dnc_2_result', 'do_not_call');
    // An empty third phone cell.
    set('dnc_3_result', 'invalid');
    const rows = rowNumbersOf(3, calling);
    expect(rows.phoneColumns).toBe(3);
    expect(rows.numbersOf(cells)).toEqual([
      { e164: '+12125550100', country: 'US', result: 'callable', column: 1 },
      { e164: '+442079460100', country: 'GB', result: 'do_not_call', column: 2 },
      { e164: '', country: undefined, result: 'invalid', column: 3 },
    ]);
  });
});
