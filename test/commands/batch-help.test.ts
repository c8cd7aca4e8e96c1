// dnc batch --help says what the table options do now: --sheet's default and --skip-rows for both kinds of list.
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';

describe('dnc batch --help', () => {
  it('says --sheet defaults to the sheet Excel opens on, and --skip-rows reads CSV files too', async () => {
    const r = await runDnc(['batch', '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    // It said "(default: the first)"; dnc reads the active tab (docs/excel.md).
    expect(text).toContain('(default: the one Excel opens on, its active tab)');
    expect(text).not.toMatch(/--sheet[^-]*default: the first\)/);
    expect(text).toContain('or the first N lines of a CSV file');
  });
});
