import { describe, expect, it } from 'vitest';
import { gauge, usedPercent } from '../../src/render/gauge.js';

describe('gauge', () => {
  it('shows the issue example: 81 % as eight of ten cells', () => {
    expect(gauge(8123, 10_000)).toBe('████████░░ 81 %');
  });
  it('rounds down, so it never claims 100 % while a credit remains', () => {
    expect(usedPercent(9_999, 10_000)).toBe(99);
    expect(gauge(9_999, 10_000)).toBe('█████████░ 99 %');
    expect(gauge(10_000, 10_000)).toBe('██████████ 100 %');
  });
  it('stays full past the limit and keeps counting', () => {
    expect(gauge(5_750, 5_000)).toBe('██████████ 115 %');
  });
  it('handles nothing used and a limit of 0', () => {
    expect(gauge(0, 100)).toBe('░░░░░░░░░░ 0 %');
    expect(gauge(0, 0)).toBe('░░░░░░░░░░ no credits');
    expect(gauge(3, 0)).toBe('██████████ no credits');
  });
  it('colours by how full it is, only when asked', () => {
    expect(gauge(95, 100, { color: true })).toContain('\u001b[31m');
    expect(gauge(80, 100, { color: true })).toContain('\u001b[33m');
    expect(gauge(10, 100, { color: true })).toContain('\u001b[32m');
  });
  it('takes another width', () => {
    expect(gauge(1, 2, { width: 4 })).toBe('██░░ 50 %');
  });
});
