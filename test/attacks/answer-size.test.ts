// Issue 46: an answer of 300 MB. The built dnc reads 64 KiB of it and refuses it (failed / bad_response), its peak
// memory measured by /usr/bin/time, and what its journal keeps of each refused answer stays a few kilobytes.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, spawnDnc } from '../helpers/cli.js';
import { hostileWorld } from './hostile-world.js';

const world = hostileWorld();
const { machine, list, rowsOf } = world;

/** The issue's figure to beat: dnc's peak resident memory over the whole run, whatever the answers' size. */
const MAX_RSS_KB = 200 * 1024;

/** `dnc argv` built, under /usr/bin/time: its outcome and peak resident memory (kB). */
async function measured(argv: string[], env: Record<string, string>, dir: string) {
  const report = path.join(dir, `time-${argv[0]}.txt`);
  const r = await spawnDnc(argv, { env, under: ['/usr/bin/time', '-v', '-o', report], timeoutMs: 60_000 });
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(readFileSync(report, 'utf8'));
  expect(rss, 'the report of /usr/bin/time').not.toBeNull();
  return { ...r, peakKb: Number(rss![1]) };
}

beforeAll(() => assertBuilt());

describe('an answer of 300 MB', () => {
  it.each(['huge-body', 'huge-body-chunked'])(
    '%s: check refuses it (exit 6, no verdict) in under 200 MB of memory',
    async (behaviour) => {
      const m = machine();
      world.svc.setBehaviour(behaviour);
      const r = await measured(['check', '+12025550107', '--json'], m.env, m.dir);
      expect(r.code, r.stderr).toBe(6);
      expect(JSON.parse(r.stdout)).toMatchObject({ dnc_error: { code: 'E_BAD_RESPONSE' } });
      expect(r.stderr).toMatch(/the body is larger than 65536 bytes/);
      console.log(`check, ${behaviour}: peak RSS ${r.peakKb} kB`);
      expect(r.peakKb).toBeLessThan(MAX_RSS_KB);
    },
  );

  it('three in a batch: each failed / bad_response, under 200 MB, a few kilobytes of each kept in the journal', async () => {
    const numbers = ['+12025550171', '+12025550173', '+12025550175'];
    const honest = machine();
    const honestOut = path.join(honest.dir, 'out.csv');
    const baseline = await spawnDnc(['batch', list(honest.dir, numbers), '-o', honestOut], { env: honest.env });
    expect(baseline.code, baseline.stderr).toBe(0);

    const m = machine();
    world.svc.setBehaviour('huge-body');
    const out = path.join(m.dir, 'out.csv');
    const r = await measured(['batch', list(m.dir, numbers), '-o', out, '--concurrency', '3'], m.env, m.dir);
    expect(r.code, r.stderr).toBe(7);
    expect(rowsOf(out).map((x) => [x.dnc_result, x.dnc_error_code])).toEqual(
      numbers.map(() => ['failed', 'bad_response']),
    );
    const journal = `${out}.journal.sqlite`;
    const db = new Database(journal, { readonly: true });
    const kept = db.prepare('SELECT body FROM answers').all() as Array<{ body: string }>;
    db.close();
    expect(kept).toHaveLength(3);
    for (const { body } of kept) {
      const record = JSON.parse(body) as Record<string, unknown>;
      expect(record).toMatchObject({ bytes_read: 65536, complete: false, content_length: 300 * 2 ** 20 });
      expect(String(record.dnc_excerpt)).toMatch(/^\{"status":"succeeded"/);
      expect(String(record.sha256_of_read)).toMatch(/^[0-9a-f]{64}$/);
      expect(body.length).toBeLessThan(5 * 1024);
    }
    const growth = statSync(journal).size - statSync(`${honestOut}.journal.sqlite`).size;
    console.log(`batch of 3: peak RSS ${r.peakKb} kB; journal ${statSync(journal).size} bytes (${growth} over honest)`);
    expect(r.peakKb).toBeLessThan(MAX_RSS_KB);
    expect(growth).toBeLessThan(64 * 1024);
  });
});
