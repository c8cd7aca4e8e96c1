// formatInteger groups by hand (no Intl at start-up); the oracle is toLocaleString('en-US') on generated integers.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatInteger } from '../../src/text/numbers.js';

describe('formatInteger', () => {
  it('writes what toLocaleString en-US writes for any safe integer, and truncates fractions', () => {
    const seed = Number(process.env.DNC_PROPERTY_SEED ?? Date.now() % 2 ** 31);
    console.log(`formatInteger property seed: ${seed} (DNC_PROPERTY_SEED=${seed} replays it)`);
    fc.assert(
      fc.property(fc.maxSafeInteger(), (n) => formatInteger(n) === n.toLocaleString('en-US')),
      { seed, numRuns: 2000 },
    );
    expect([0, 999, 1000, 9560, 10_000, -1234567].map(formatInteger)).toEqual([
      '0',
      '999',
      '1,000',
      '9,560',
      '10,000',
      '-1,234,567',
    ]);
    expect([999.9, -999.9, 1234.5].map(formatInteger)).toEqual(['999', '-999', '1,234']);
  });
});
