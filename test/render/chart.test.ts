import { describe, expect, it } from 'vitest';
import { bar, barChart } from '../../src/render/chart.js';
import { visibleLength } from '../../src/render/table.js';

describe('bar', () => {
  it('scales to the maximum in eighths of a cell', () => {
    expect(bar(10, 10, 4)).toBe('████');
    expect(bar(5, 10, 4)).toBe('██');
    expect(bar(1, 16, 2)).toBe('▏');
    expect(bar(3, 16, 2)).toBe('▍');
  });
  it('shows any positive value, nothing for 0', () => {
    expect(bar(1, 1_000_000, 10)).toBe('▏');
    expect(bar(0, 10, 10)).toBe('');
  });
});

describe('barChart', () => {
  const rows = [
    { label: '2026-01', value: 2000, note: '· 1 request' },
    { label: '2026-02', value: 0 },
    { label: '2026-03', value: 500 },
  ];
  it('aligns labels and numbers and scales bars to the largest value', () => {
    const lines = barChart(rows, { columns: 80, maxBarWidth: 8, unit: 'credits' });
    expect(lines).toEqual([
      '  2026-01  ████████  2,000 credits · 1 request',
      '  2026-02                0 credits',
      '  2026-03  ██          500 credits',
    ]);
  });
  it('shrinks bars to fit a narrow terminal', () => {
    for (const line of barChart(rows, { columns: 45, unit: 'credits' }))
      expect(visibleLength(line)).toBeLessThanOrEqual(45);
  });
});
