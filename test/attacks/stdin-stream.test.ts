// Issue 38: standard input is kept as it is read, within the limits of a file: 200 MB of one line is refused after a
// few MB (not copied whole first), a list refused late leaves no copy, and SIGTERM while reading leaves nothing.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertBuilt, BIN } from '../helpers/cli.js';
import { sandbox, scratch } from '../batch/helpers.js';

let sb: Sandbox;
let env: Record<string, string>;
const tmp = scratch();
beforeAll(async () => {
  assertBuilt();
  ({ sb, env } = await sandbox());
  env = {
    ...env,
    PATH: process.env.PATH ?? '',
    HOME: path.join(tmp.dir, 'home'),
    XDG_STATE_HOME: path.join(tmp.dir, 'state'),
  };
});
afterAll(async () => {
  await sb.close();
  tmp.remove();
});

let n = 0;
function folder(): string {
  const d = path.join(tmp.dir, `case-${n++}`);
  mkdirSync(d);
  return d;
}

interface Fed {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Bytes dnc took from its standard input before it stopped reading. */
  taken: number;
  ms: number;
}

/**
 * `dnc batch - -o o.csv` in `cwd`, fed `total` bytes made by `chunk(i)`, as fast as it reads them; `onFed(bytes, child)`
 * hears of each chunk written.
 */
function feed(
  cwd: string,
  total: number,
  chunk: (i: number) => Buffer,
  onFed?: (bytes: number, kill: () => void) => void,
): Promise<Fed> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, 'batch', '-', '-o', 'o.csv', '--quiet'], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.resume();
  let taken = 0;
  let i = 0;
  let open = true;
  child.stdin.on('error', () => (open = false));
  const pump = () => {
    while (open && taken < total) {
      const c = chunk(i++);
      taken += c.length;
      onFed?.(taken, () => child.kill('SIGTERM'));
      if (!child.stdin.write(c)) return void child.stdin.once('drain', pump);
    }
    if (open && taken >= total) child.stdin.end();
  };
  pump();
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      open = false;
      resolve({ code, signal, stderr, taken, ms: Date.now() - started });
    }),
  );
}

const leftovers = (d: string) => readdirSync(d).filter((f) => f !== 'keep.txt');

describe('dnc batch -: standard input within bounds', () => {
  it('200 MB of one line: refused (exit 3) after a few MB read, nothing kept', async () => {
    const d = folder();
    writeFileSync(path.join(d, 'keep.txt'), 'x');
    const block = Buffer.alloc(1 << 20, 'a');
    const r = await feed(d, 200 << 20, () => block);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_MALFORMED]');
    expect(r.stderr).toMatch(/line 1 is longer than 1048576 characters/);
    // Refused once the line passed 4 MiB: the pipe's buffers hold a few MB more at most.
    expect(r.taken).toBeLessThan(40 << 20);
    expect(leftovers(d)).toEqual([]);
  }, 120_000);

  it('a list refused after it was kept (a record past the limit, late): the copy is removed', async () => {
    const d = folder();
    const rows = [
      'name,phone',
      ...Array.from({ length: 3000 }, (_, i) => `a${i},+1202555${String(i % 10000).padStart(4, '0')}`),
    ];
    const body = Buffer.from(rows.join('\n') + '\nbad,"' + 'a\n'.repeat(600_000) + '"\n');
    const r = await feed(d, body.length, (i) => (i === 0 ? body : Buffer.alloc(0)));
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('[E_INPUT_MALFORMED]');
    expect(leftovers(d).filter((f) => f.endsWith('.input.csv') || f.endsWith('.tmp'))).toEqual([]);
  }, 120_000);

  it('SIGTERM while standard input is read: exit 130, no copy of the list left', async () => {
    const d = folder();
    const line = Buffer.from('a0,+12025550100\n'.repeat(4096));
    let killed = false;
    const r = await feed(
      d,
      400 << 20,
      (i) => (i === 0 ? Buffer.concat([Buffer.from('name,phone\n'), line]) : line),
      (bytes, kill) => {
        if (!killed && bytes > 20 << 20) {
          killed = true;
          kill();
        }
      },
    );
    expect(killed).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.taken).toBeLessThan(400 << 20);
    expect(leftovers(d)).toEqual([]);
  }, 120_000);
});
