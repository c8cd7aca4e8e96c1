// Every `console` block of README.md and docs/ runs against a fresh sandbox and prints what the page
// shows (ids, times, ports, folders and durations normalised). DOCS_UPDATE=1 writes the real output
// of a block that differs back into its page, for a person to review.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';
import {
  createWorkspace,
  docPages,
  fixedPorts,
  matches,
  normalise,
  parseBlocks,
  runBlock,
  stopSandbox,
  takePorts,
  updateBlock,
  type Block,
  type CommandResult,
  type Workspace,
} from './examples.js';

const pages = docPages().map((file) => ({ file, blocks: parseBlocks(file, readFileSync(file, 'utf8')) }));
const updates: Array<{ block: Block; results: CommandResult[]; dir: string }> = [];

afterAll(() => {
  // From the bottom of each page up, so earlier blocks keep their line numbers.
  for (const u of updates.sort((a, b) => (a.block.file === b.block.file ? b.block.line - a.block.line : 0)))
    updateBlock(u.block, u.results, u.dir);
});

describe('the normaliser and matcher (so the runner below can be trusted)', () => {
  it('hides ids, times, ports, pids, folders, durations and rates, and nothing else', () => {
    expect(normalise('correlation id  09efa06c-f762-4cd0-af4e-60e5bcc81f0a at 2026-11-21T23:21:55.601006+00:00')).toBe(
      'correlation id  <uuid> at <time>',
    );
    expect(normalise('output: /tmp/dnc-docs-Ab12/calls.results.csv')).toBe('output: calls.results.csv');
    expect(normalise('export DNC_BASE_URL=http://127.0.0.1:41234')).toBe('export DNC_BASE_URL=http://127.0.0.1:<port>');
    expect(normalise('credits used: 31 in this run in 0.1s (446/s)')).toBe(
      'credits used: 31 in this run in <duration> (<rate>)',
    );
    // Counts and verdicts are compared as they are.
    expect(normalise('balance 999 / 1,000')).toBe('balance 999 / 1,000');
    // The age of a verdict depends on the hour the example runs: a tenth of a day or none.
    expect(normalise('(26337.3 days ago)')).toBe(normalise('(26337 days ago)'));
    expect(normalise('callable 15')).not.toBe(normalise('callable 16'));
  });

  it('a line that is just … stands for any lines; a line ending in … for any line starting so', () => {
    expect(matches(['a', '…', 'd'], ['a', 'b', 'c', 'd'])).toBe(true);
    expect(matches(['a', '…', 'd'], ['a', 'd'])).toBe(true);
    expect(matches(['a', 'x…'], ['a', 'xyz'])).toBe(true);
    expect(matches(['a', 'b'], ['a', 'c'])).toBe(false);
    expect(matches(['a'], ['a', 'extra'])).toBe(false);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  return new Set(
    [...text.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('links between the pages', () => {
  it('every relative link names a file that exists, and a heading in it when it has an anchor', () => {
    const broken: string[] = [];
    for (const { file } of pages) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\]\(([^)#\s]+)(?:#([^)\s]+))?\)/g)) {
        if (/^[a-z]+:/.test(m[1]!)) continue;
        const target = path.resolve(path.dirname(file), m[1]!);
        if (!existsSync(target)) broken.push(`${path.relative(REPO_ROOT, file)}: ${m[0]}`);
        else if (m[2] && target.endsWith('.md') && !anchorsOf(target).has(m[2]))
          broken.push(`${path.relative(REPO_ROOT, file)}: ${m[0]}`);
      }
    }
    expect(broken).toEqual([]);
    expect(pages.length).toBeGreaterThan(10);
  });

  it('a block that shows a `$ ` command and its output is a console block, so the runner below runs it', () => {
    const hidden: string[] = [];
    for (const { file } of pages) {
      const lines = readFileSync(file, 'utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        const fence = /^```(\S*)/.exec(lines[i]!);
        if (!fence) continue;
        const start = i;
        for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) {
          if (fence[1] !== 'console' && lines[i]!.startsWith('$ '))
            hidden.push(`${path.relative(REPO_ROOT, file)}:${start + 1}`);
        }
      }
    }
    expect([...new Set(hidden)]).toEqual([]);
  });

  it('the README stays a tour: at most 15 KB, with the two quick-start commands as they are', () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(15 * 1024);
    expect(readme).toContain('npm ci && npm run demo');
    expect(readme).toContain('npm ci && npm test');
    // .ci/run runs exactly the README's test command, the tests inside a throwaway PostgreSQL server (pg_virtualenv),
    // and fails when they fail (their status handed back through a file, the server's log kept out of the output).
    const ci = readFileSync(path.join(REPO_ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^npm ci --no-audit --no-fund$/m);
    expect(ci).toMatch(/^pg_virtualenv -t bash -c 'npm test; status=\$\?; .*echo "\$status" > \.tmp\/test-status'$/m);
    expect(ci).toMatch(/^if \[ "\$status" != 0 \]; then$/m);
  });
});

// The ports the pages name are held busy by stand-ins for a user's own `dnc listen --port 18787` while the pages
// run: the runner must use free ports instead, and must send nothing to these.
const squatters = await holdPorts([...new Set(pages.flatMap((p) => [...fixedPorts(p.blocks)]))]);
afterAll(() => Promise.all(squatters.map((s) => new Promise((resolve) => s.server.close(resolve)))));

for (const page of pages) {
  const name = path.relative(REPO_ROOT, page.file);
  if (page.blocks.length === 0) continue;
  describe(name, () => {
    // The page's folder is made when its first example runs, not when the suite is collected: a run that selects
    // other tests (-t, a filtered file) skips this page's hooks too, and would leave an empty folder behind.
    let dir: string;
    let ws: Workspace;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-docs-'));
      ws = createWorkspace(dir);
      takePorts(ws, fixedPorts(page.blocks));
    });
    afterAll(() => {
      if (!ws) return;
      stopSandbox(ws);
      if (process.env.DOCS_UPDATE !== '1') rmSync(dir, { recursive: true, force: true });
    });

    for (const block of page.blocks) {
      if (block.notRun !== undefined) {
        it(`line ${block.line} is marked as not run, with a reason`, () => {
          expect(block.notRun!.length).toBeGreaterThan(10);
        });
        continue;
      }
      it(
        `line ${block.line}: ${block.commands
          .map((c) => c.text.split('\n')[0])
          .join(' ; ')
          .slice(0, 100)}`,
        { timeout: 180_000 },
        () => {
          expect(block.commands.length, 'a console block shows at least one $ command').toBeGreaterThan(0);
          const results = runBlock(ws, block);
          const failed = results.filter((r) => !r.ok);
          if (failed.length > 0 && process.env.DOCS_UPDATE === '1') updates.push({ block, results, dir });
          for (const r of failed) {
            expect(r.actual.join('\n'), `${name}:${block.line}: $ ${r.command.text}`).toBe(
              r.command.expected.join('\n'),
            );
          }
        },
      );
    }
  });
}

describe('the ports the pages name', () => {
  it('are held by other listeners while the pages run, and none of them was sent anything', (ctx) => {
    // Both taken already (another run of this suite on the machine, a user's own listeners): nothing to count here,
    // and said as a skip rather than a failure of the pages.
    if (squatters.length === 0) ctx.skip();
    expect(squatters.map((s) => `${s.port}: ${s.requests} request(s)`)).toEqual(
      squatters.map((s) => `${s.port}: 0 request(s)`),
    );
  });
});

/** Listens on each port that is free (one already taken is someone else's), counting the requests that reach it. */
async function holdPorts(ports: number[]): Promise<Array<{ port: number; server: http.Server; requests: number }>> {
  const held = [];
  for (const port of ports) {
    const entry = { port, server: http.createServer((_req, res) => (entry.requests++, res.end())), requests: 0 };
    const ok = await new Promise<boolean>((resolve) => {
      entry.server.once('error', () => resolve(false));
      entry.server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) held.push(entry);
  }
  return held;
}
