// The credit budget without HTTP: what may start, what waits, what stops, and what crashes may have cost.
import { describe, expect, it } from 'vitest';
import { CreditBudget } from '../../src/batch/budget.js';

const budget = (
  max: number | null,
  spent = 0,
  costs: Record<string, number> = {},
  hints: Record<string, number> = {},
  unseen: Record<string, number> = {},
) =>
  new CreditBudget(
    max,
    spent,
    new Map(Object.entries(costs)),
    new Map(Object.entries(hints)),
    new Map(Object.entries(unseen)),
  );

describe('CreditBudget', () => {
  it('with no budget, every lookup starts and holds nothing', () => {
    const b = budget(null);
    expect(b.admit('US', false)).toEqual({ kind: 'start', estimate: 0 });
    expect(b.admit('US', true)).toEqual({ kind: 'start', estimate: 0 });
  });

  it('a country whose cost is not known is probed alone, at the highest cost seen or hinted', () => {
    const b = budget(100, 0, { US: 1 }, { GB: 5 });
    expect(b.admit('FR', false)).toEqual({ kind: 'start', estimate: 5 });
    // A second FR waits for the first's answer, which tells the price.
    expect(b.admit('FR', true)).toEqual({ kind: 'wait' });
    expect(b.admit('US', true)).toEqual({ kind: 'start', estimate: 1 });
    b.settle('FR', 5, 3);
    expect(b.learn('FR', 3)).toBe(true);
    expect(b.learn('FR', 3)).toBe(false);
    expect(b.admit('FR', true)).toEqual({ kind: 'start', estimate: 3 });
  });

  it('never starts a lookup that could pass the budget: it waits while answers may free holds, then stops', () => {
    const b = budget(3, 1, { US: 1 });
    expect(b.admit('US', false)).toEqual({ kind: 'start', estimate: 1 });
    expect(b.admit('US', true)).toEqual({ kind: 'start', estimate: 1 });
    expect(b.admit('US', true)).toEqual({ kind: 'wait' });
    // One answer charged nothing (an uncharged failure): its hold comes back and another may start.
    b.settle('US', 1, 0);
    expect(b.admit('US', true)).toEqual({ kind: 'start', estimate: 1 });
    b.settle('US', 1, 1);
    b.settle('US', 1, 1);
    expect(b.spent).toBe(3);
    const why = { country: 'US', estimate: 1, left: 0, unknownCost: false };
    expect(b.admit('US', false)).toEqual({ kind: 'stop', why });
    expect(b.stoppedBy).toEqual(why);
  });

  it('says when it stops before a 1-credit number: the first of a country is counted at the most known', () => {
    // DE cost 2 in an earlier batch (a hint); US is 1 credit, but this batch has not seen its price yet.
    const b = budget(1, 0, {}, { DE: 2 });
    expect(b.admit('US', false)).toEqual({
      kind: 'stop',
      why: { country: 'US', estimate: 2, left: 1, unknownCost: true },
    });
  });

  it('sends a crash left without an answer count as spent, at their country cost', () => {
    const b = budget(10, 0, { US: 2 }, {}, { US: 3, GB: 1 });
    // 3 × 2 (US) + 1 × 2 (GB at the highest cost known) = 8 of 10 may have been charged already.
    expect(b.admit('US', false)).toEqual({ kind: 'start', estimate: 2 });
    expect(b.admit('US', true)).toEqual({ kind: 'wait' });
  });

  it('a refused claim gives its hold (and its country probe) back', () => {
    const b = budget(5, 0, {}, {});
    expect(b.admit('DE', false)).toEqual({ kind: 'start', estimate: 1 });
    b.cancel('DE', 1);
    expect(b.admit('DE', false)).toEqual({ kind: 'start', estimate: 1 });
  });
});
