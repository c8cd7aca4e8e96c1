// The built binary: batch writes its manifest, verify and trace exit as documented (0 / 3), --help stays light.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnDnc } from '../helpers/cli.js';
import { US_LIST, world, type World } from '../evidence/helpers.js';

let w: World;
beforeAll(async () => {
  w = await world();
});
afterAll(async () => {
  await w.cleanup();
});

describe('dnc verify and trace (spawned)', () => {
  it('batch → verify 0; a tampered copy → 3 with the line; trace of a row → 0; an unknown id → 3', async () => {
    const input = w.file('calls.csv', US_LIST);
    const b = await spawnDnc(['batch', input], { env: w.env, cwd: w.dir });
    expect(b.code, b.stderr).toBe(0);
    const output = path.join(w.dir, 'calls.results.csv');
    const ok = await spawnDnc(['verify', 'calls.results.csv'], { cwd: w.dir });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^calls\.results\.csv: fit to dial$/m);

    const text = readFileSync(output, 'utf8');
    writeFileSync(output, text.replace('+12025550102,US,callable', '+12025550102,US,callable '));
    const bad = await spawnDnc(['verify', output], { cwd: w.dir });
    expect(bad.code).toBe(3);
    expect(bad.stdout).toMatch(/NOT FIT TO DIAL/);
    expect(bad.stdout).toMatch(/line 5 /);
    writeFileSync(output, text);

    const id = text.split('\n')[1]!.split(',')[8]!;
    const t = await spawnDnc(['trace', id], { env: w.env });
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toContain(`correlation id ${id}`);
    const missing = await spawnDnc(['trace', '00000000-0000-4000-8000-000000000000'], { env: w.env });
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('E_TRACE_NOT_FOUND');
    // Not a correlation id at all: a usage error.
    expect((await spawnDnc(['trace', 'no-such-id'], { env: w.env })).code).toBe(2);
  });

  it('--help lists verify and trace', async () => {
    const h = await spawnDnc(['--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/verify \[options\] <output>/);
    expect(h.stdout).toMatch(/trace \[options\] <correlation-id\|number>/);
  });
});
