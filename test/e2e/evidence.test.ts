// The built binary: batch writes its manifest, verify and trace exit as documented (0 / 3), --help stays light.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnDnc } from '../helpers/cli.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { ROWS_THREAD_MIN_BYTES } from '../../src/tables/rows-thread.js';
import { US_LIST, world, type World, sameMachine } from '../helpers/world.js';

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
    const ok = await spawnDnc(['verify', 'calls.results.csv'], { env: sameMachine(w), cwd: w.dir });
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

describe('dnc verify of a big list (spawned): its input read in a thread', () => {
  /**
   * How long one run over ≈ 270,000 rows may take before it is killed: a few seconds on a quiet machine, but CI's two
   * cores may be shared with other work, and a run killed for being slow would fail the test for no fault of dnc's.
   */
  const BIG_RUN_MS = 150_000;
  /** A batch of an input past ROWS_THREAD_MIN_BYTES (the built reader's thread): 40 numbers on ≈ 270,000 rows. */
  async function bigBatch(name: string): Promise<{ input: string; output: string }> {
    const rows = ['name,phone,city'];
    for (let i = 0; i * 33 < ROWS_THREAD_MIN_BYTES + 64 * 1024; i++) {
      rows.push(`n${String(i).padStart(6, '0')},+1202555${String(100 + (i % 40) * 2).padStart(4, '0')},Springfield`);
    }
    const input = w.file(`${name}.csv`, rows);
    expect(readFileSync(input).length).toBeGreaterThan(ROWS_THREAD_MIN_BYTES);
    // The thread's module beside the bundle's chunks, where src/tables/rows-thread.ts looks for it (else verify
    // would read the input on its own thread, as the in-process tests do).
    expect(existsSync(path.join(REPO_ROOT, 'dist', 'bundle', 'rows-worker.js'))).toBe(true);
    const output = path.join(w.dir, `${name}.results.csv`);
    const b = await spawnDnc(['batch', input, '-o', output, '--quiet'], {
      env: w.env,
      cwd: w.dir,
      timeoutMs: BIG_RUN_MS,
    });
    expect(b.code, b.stderr).toBe(0);
    return { input, output };
  }

  it(
    'an input over the thread threshold: fit as written; a row edited in its input cells is out of step, at its line',
    async () => {
      const { output } = await bigBatch('big');
      const ok = await spawnDnc(['--json', 'verify', output], { env: w.env, cwd: w.dir, timeoutMs: BIG_RUN_MS });
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ fit: true, compared_with_input: true, recheck: [] });
      // A city edited on row 200,000 of the output, with the manifest and the anchor rewritten: only the input tells.
      const text = readFileSync(output, 'utf8');
      const lines = text.split('\n');
      lines[200_000] = lines[200_000]!.replace(',Springfield,', ',Shelbyville,');
      rewriteOutputAndManifest(output, lines.join('\n'), () => {}, w.stateDir);
      const bad = await spawnDnc(['--json', 'verify', output], { env: w.env, cwd: w.dir, timeoutMs: BIG_RUN_MS });
      expect(bad.code).toBe(3);
      const report = JSON.parse(bad.stdout) as { anchored: string; recheck: Array<{ line: number; reason: string }> };
      expect(report.anchored).toBe('matches');
      expect(report.recheck.map((r) => [r.line, r.reason])).toEqual([[200_001, 'out_of_step']]);
    },
    3 * BIG_RUN_MS,
  );

  it(
    "an error after the thread began reading (the journal's calling settings refused) ends verify and status",
    async () => {
      const { output } = await bigBatch('refused');
      // Settings a newer dnc wrote into the journal, with a key this one does not know: refused (exit 2) after the
      // input's header was read, its thread started.
      const db = new Database(`${output}.journal.sqlite`);
      const meta = JSON.parse(
        (db.prepare("SELECT value FROM meta WHERE key = 'batch'").get() as { value: string }).value,
      );
      meta.calling = { name: 'team', settings: { no_such_setting: 1 } };
      db.prepare("UPDATE meta SET value = ? WHERE key = 'batch'").run(JSON.stringify(meta));
      db.close();
      for (const argv of [
        ['verify', output],
        ['status', output],
      ]) {
        const r = await spawnDnc(argv, { env: w.env, cwd: w.dir, timeoutMs: BIG_RUN_MS });
        // (Killed at the time-out, it would have code -1 and signal SIGKILL.)
        expect({ code: r.code, signal: r.signal }, `${argv[0]}: ${r.stderr}`).toEqual({ code: 2, signal: null });
        expect(r.stderr).toMatch(/E_CONFIG_INVALID.*no_such_setting/);
      }
    },
    3 * BIG_RUN_MS,
  );
});
