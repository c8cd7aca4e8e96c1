// A list whose last bytes can begin no UTF-8 character (a Windows-1252 "ö" at the very end, 0xE0 0x80) is not
// UTF-8 at that byte: `dnc batch` says so, with the --encoding hint, and says it before the parser reads the chunk
// holding it (not as a character the file's end cut). The property itself: test/tables/strict-utf8.property.test.ts.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { scratch } from '../batch/helpers.js';

const tmp = scratch();
afterAll(() => tmp.remove());

describe('a file ending in bytes no UTF-8 character begins with', () => {
  it('dnc batch: a Windows-1252 list ending in "ö" is told to give --encoding windows-1252', async () => {
    const input = path.join(tmp.dir, 'malmo.csv');
    writeFileSync(
      input,
      Buffer.concat([Buffer.from('name,phone,city\nAnna,+12025550100,Malm', 'latin1'), Buffer.from([0xf6])]),
    );
    const r = await runDnc(['batch', input, '--dry-run'], { env: {} });
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('line 2: the text is not valid UTF-8');
    expect(r.stderr).toContain('--encoding windows-1252');
  });

  it('dnc batch: the bad ending is found before a stray quote earlier in the same read', async () => {
    const input = path.join(tmp.dir, 'quote-then-bad.csv');
    writeFileSync(
      input,
      Buffer.concat([
        Buffer.from('name,phone\nAn"na,+12025550100\nBo,+12025550101', 'utf8'),
        Buffer.from([0xe0, 0x80]),
      ]),
    );
    const r = await runDnc(['batch', input, '--dry-run'], { env: {} });
    expect(r.code, r.stderr).toBe(3);
    // (The record is counted by a second read that the stray quote misleads: only the line is sure.)
    expect(r.stderr).toMatch(/line 3( \(record \d+\))?: the text is not valid UTF-8/);
  });
});
