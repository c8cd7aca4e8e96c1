// Where `dnc window` finds each row's numbers: the row-level dnc_* columns, or one dnc_N_* group per phone column.
import { describe, expect, it } from 'vitest';
import { DNC_COLUMNS } from '../../src/results/columns.js';
import { phoneColumnsOf, rowNumbersOf } from '../../src/window/columns.js';

describe('rowNumbersOf', () => {
  it('one phone column: the row-level number, country and result', () => {
    const rows = rowNumbersOf(['name', 'phone', ...DNC_COLUMNS], 2);
    expect(rows.phoneColumns).toBe(1);
    const cells = ['+12125550100', 'US', 'callable', 'false', '', '', 'cid', '', '', '1', '', ''];
    expect(rows.numbersOf(['a', '212 555 0100', ...cells], cells)).toEqual([
      { e164: '+12125550100', country: 'US', result: 'callable', validUntil: undefined, correlationId: undefined },
    ]);
    // A file without a header has its dnc_* columns where the batch put them.
    expect(rowNumbersOf(null, 2).phoneColumns).toBe(1);
  });

  it('several phone columns: each dnc_N group read by name, in N order, its country from the number itself', () => {
    const header = [
      'name',
      'dnc_9_e164', // an input column of that name is not one of dnc's (it comes before the input's end)
      'home',
      'mobile',
      ...DNC_COLUMNS,
      'dnc_2_e164',
      'dnc_2_result',
      'dnc_2_valid_until',
      'dnc_1_e164',
      'dnc_1_result',
      'dnc_1_error_code',
      'dnc_1_correlation_id',
      'dnc_1_checked_at',
      'dnc_1_valid_until',
      'dnc_3_e164', // no dnc_3_result: not a phone column
    ];
    expect(phoneColumnsOf(header, 4).map((c) => c.n)).toEqual([1, 2]);
    const rows = rowNumbersOf(header, 4);
    expect(rows.phoneColumns).toBe(2);
    const fields = [
      'a',
      '+19999999999',
      '212 555 0100',
      '020 7946 0100',
      ...DNC_COLUMNS.map(() => ''),
      '+442079460100',
      'do_not_call',
      '2026-12-01T00:00:00.000Z',
      '+12125550100',
      'callable',
      '',
      'cid-1',
      '2026-11-01T00:00:00Z',
      '2026-12-02T00:00:00.000Z',
      '+12125550102',
    ];
    expect(rows.numbersOf(fields, fields.slice(4))).toEqual([
      { e164: '+12125550100', country: 'US', result: 'callable', validUntil: '2026-12-02T00:00:00.000Z', correlationId: 'cid-1' },
      { e164: '+442079460100', country: 'GB', result: 'do_not_call', validUntil: '2026-12-01T00:00:00.000Z', correlationId: undefined },
    ]);
  });
});
