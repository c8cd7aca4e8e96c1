// Power-loss safety of a batch's outputs: each file's data is flushed to disk (fsync) before its name points at
// it, and its folder after the rename; an fsync that fails fails the batch. Seen through fs.fsync, which both the
// outputs' write streams (`flush: true`) and the durable whole-file writes call.
import fs, { existsSync, fstatSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { lookedUp, sandbox, scratch } from '../batch/helpers.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();

beforeAll(async () => {
  ({ sb, env } = await sandbox());
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

interface Synced {
  ino: number;
  dir: boolean;
  /** Which of the watched names existed when the fsync returned. */
  present: Set<string>;
}

/** Records every fsync: the inode synced, and which of `names` existed once it was done (it is slowed a little, so a rename that does not wait for it is seen). */
function watchFsyncs(names: string[], fail?: (ino: number) => boolean): Synced[] {
  const seen: Synced[] = [];
  const real = fs.fsync;
  vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => {
    const st = fstatSync(fd);
    setTimeout(() => {
      if (fail?.(st.ino)) {
        callback(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' }));
        return;
      }
      real(fd, (err) => {
        seen.push({ ino: st.ino, dir: st.isDirectory(), present: new Set(names.filter((n) => existsSync(n))) });
        callback(err);
      });
    }, 30);
  }) as typeof fs.fsync);
  return seen;
}

describe('outputs survive a power loss', () => {
  it('the results, both lists and the manifest are each synced before they are renamed into place, and their folder after', async () => {
    const dir = path.join(tmp.dir, 'synced');
    mkdirSync(dir);
    const input = path.join(dir, 'in.csv');
    writeFileSync(input, 'name,phone\nAnn,+12025550100\nBob,+12025550101\n');
    const files = ['out.csv', 'call.csv', 'dnc.csv', 'out.manifest.json'].map((f) => path.join(dir, f));
    const seen = watchFsyncs(files);
    const r = await runDnc(
      ['batch', input, '-o', files[0]!, '--callable-out', files[1]!, '--suppressed-out', files[2]!, '--quiet'],
      { env },
    );
    expect(r.code, r.stderr).toBe(0);
    vi.restoreAllMocks();
    const folder = statSync(dir).ino;
    for (const file of files) {
      const ino = statSync(file).ino;
      const own = seen.findIndex((s) => s.ino === ino);
      expect(
        own,
        `${path.basename(file)} was not synced (its fsync had not returned when the batch ended)`,
      ).toBeGreaterThanOrEqual(0);
      // Its data was on the disk before its name pointed at it …
      expect(
        seen[own]!.present.has(file),
        `${path.basename(file)} was renamed into place before its fsync returned`,
      ).toBe(false);
      // … and the folder was synced once the name was there.
      expect(
        seen.some((s, i) => i > own && s.dir && s.ino === folder && s.present.has(file)),
        `the folder was not synced after ${path.basename(file)}'s rename`,
      ).toBe(true);
    }
  });

  it('an fsync that fails fails the batch (exit 3, E_OUTPUT_UNWRITABLE) and leaves no results file; a rerun sends nothing again', async () => {
    const dir = path.join(tmp.dir, 'eio');
    mkdirSync(dir);
    const input = path.join(dir, 'in.csv');
    writeFileSync(input, 'name,phone\nAnn,+12025550102\n');
    const out = path.join(dir, 'out.csv');
    // Only regular files in this folder fail (not the journal's, which SQLite syncs itself): the results' temporary file.
    const folderFiles = () =>
      new Set(
        fs
          .readdirSync(dir)
          .filter((f) => f.endsWith('.tmp'))
          .map((f) => statSync(path.join(dir, f)).ino),
      );
    watchFsyncs([], (ino) => folderFiles().has(ino));
    const r = await runDnc(['batch', input, '-o', out, '--quiet'], { env });
    vi.restoreAllMocks();
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('[E_OUTPUT_UNWRITABLE]');
    expect(r.stderr).toContain('EIO');
    expect(existsSync(out)).toBe(false);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    sb.reset();
    const again = await runDnc(['batch', input, '-o', out, '--quiet'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(readCsvIndependently(out)[1]!.slice(0, 2)).toEqual(['Ann', '+12025550102']);
    expect(lookedUp(sb)).toEqual([]);
  });
});
