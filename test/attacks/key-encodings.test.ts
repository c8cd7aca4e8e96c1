// Issue 38: a service (and a forger of pushes) that echoes the API key and the store password in 27 encodings each
// (percent-encoding of every kind, Python's quote, JSON and HTML escapes, base64 at every alignment, hex, reversed):
// no file under HOME, the state, cache, results or temp folders, and no output stream, holds any of them.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { echoForms, startHostileService } from '../../bench/hostile-service.mjs';
import { scratch } from '../batch/helpers.js';
import { spawnDnc } from '../helpers/cli.js';
import { filesUnder, listen, post, readCsv, succeededPush, webhookBatch } from './helpers.js';

interface Hostile {
  baseUrl: string;
  apiKey: string;
  setBehaviour(b: string): void;
  close(): Promise<void>;
}

const KEY = 'S3cr3t+K3y/Zq=9_h0st1le_4f1d0c9e';
const STORE_PASSWORD = 'pg-Pa55/w0rd+team=42';
const tmp = scratch();
let svc: Hostile;

beforeAll(async () => {
  svc = (await startHostileService({ apiKey: KEY, alsoEcho: [STORE_PASSWORD] })) as Hostile;
  svc.setBehaviour('echo-key-encoded');
});
afterAll(async () => {
  await svc.close();
  tmp.remove();
});

/** Each echo form of each secret, as written and as a JSON string holds it (the journal keeps JSON). */
function needles(secrets: string[]): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (const s of secrets)
    for (const [name, form] of Object.entries(echoForms(s) as Record<string, string>)) {
      // A base64 echo is longer than the secret (bytes around it): its middle is what only the secret decides.
      const core = /^base(64|32)/.test(name) ? form.slice(4, -4) : form;
      for (const f of new Set([core, JSON.stringify(core).slice(1, -1)]))
        out.push([`${s.slice(0, 4)}… ${name}`, Buffer.from(f)]);
    }
  return out;
}

/** Where a secret is: files under `dir` and texts, by name and the form found. */
function found(dir: string, texts: Record<string, string>, secrets: string[]): string[] {
  const hits: string[] = [];
  const all = needles(secrets);
  for (const file of filesUnder(dir)) {
    const bytes = readFileSync(file);
    for (const [name, needle] of all) if (bytes.includes(needle)) hits.push(`${path.relative(dir, file)}: ${name}`);
  }
  for (const [where, text] of Object.entries(texts))
    for (const [name, needle] of all) if (text.includes(needle.toString())) hits.push(`${where}: ${name}`);
  return hits;
}

describe('a secret echoed in any encoding is in no file and no output stream', () => {
  it('batch (every list, and to stdout), check (--json, --verbose), verify, status, report, trace', async () => {
    const home = path.join(tmp.dir, 'home');
    const work = path.join(tmp.dir, 'work');
    const temp = path.join(tmp.dir, 'temp');
    for (const d of [home, work, temp]) mkdirSync(d);
    const env = {
      DNC_BASE_URL: svc.baseUrl,
      DNC_API_KEY: KEY,
      PGPASSWORD: STORE_PASSWORD,
      HOME: home,
      XDG_STATE_HOME: path.join(tmp.dir, 'state'),
      XDG_CACHE_HOME: path.join(tmp.dir, 'cache'),
      TMPDIR: temp,
    };
    writeFileSync(
      path.join(work, 'calls.csv'),
      'name,phone\na,+12025550160\nb,+12025550161\nc,+12025550162\nd,+12025550163\n',
    );
    const streams: Record<string, string> = {};
    const run = async (name: string, argv: string[]) => {
      const r = await spawnDnc(argv, { env, cwd: work, timeoutMs: 60_000 });
      streams[`${name} stdout`] = r.stdout;
      streams[`${name} stderr`] = r.stderr;
      return r;
    };
    const lists = [
      '--callable-out',
      'call.csv',
      '--review-out',
      'review.csv',
      '--dial-out',
      'dial.txt',
      '--suppressed-out',
      'sup.csv',
    ];
    const batch = await run('batch', ['batch', 'calls.csv', '-o', 'out.csv', ...lists, '--json']);
    expect([0, 7], batch.stderr).toContain(batch.code);
    await run('batch -o -', ['batch', 'calls.csv', '-o', '-', '--verbose']);
    await run('check', ['check', '+12025550164', '--json']);
    await run('check --verbose', ['check', '+12025550165', '--verbose']);
    await run('verify', ['verify', 'out.csv']);
    await run('status', ['status', 'out.csv']);
    await run('report', ['report', 'out.csv', '-o', 'report.html']);
    const rows = readCsv(path.join(work, 'out.csv'));
    await run('trace', ['trace', rows[0]!.dnc_correlation_id!, '--journal', 'out.csv.journal.sqlite']);
    // The echoes were there to find: dnc kept what the service said, masked.
    expect(rows.map((r) => r.dnc_error || r.dnc_list_source).join(' ')).toContain('***');
    expect(streams['check --verbose stderr']).toContain('x-echo');
    expect(found(tmp.dir, streams, [KEY, STORE_PASSWORD])).toEqual([]);
  });

  it('a forger of pushes: the key in the body (escaped, not JSON), in X-Service-Correlation-Id, in headers', async () => {
    const b = await webhookBatch([['au', '+61412345093']]);
    try {
      const key = String(b.env.DNC_API_KEY);
      const home = path.join(b.dir, 'home');
      mkdirSync(home);
      const l = listen(['--results', b.output, '--port', '0'], {
        cwd: b.dir,
        home,
        env: b.env as Record<string, string>,
      });
      const url = await l.url;
      const row = readCsv(b.output)[0]!;
      const forms = Object.values(echoForms(key) as Record<string, string>).join(' ');
      // Refused, and kept with its reason: the header differs from the body's correlation id.
      await post(url, succeededPush(row), { 'x-service-correlation-id': key });
      await post(url, succeededPush(row), { 'x-service-correlation-id': encodeURIComponent(key).replace(/%2F/g, '/') });
      // Not JSON, carrying the key JSON-escaped: kept as received, masked.
      await post(url, `{"error": "${(echoForms(key) as Record<string, string>).jsonUnicodeLower}", oops`);
      await post(url, succeededPush(row, { dnc_list_source: `https://registers.example/?${forms}` }), {
        'x-echo': encodeURIComponent(forms),
      });
      l.interrupts.fire();
      await l.exit;
      expect(found(b.dir, { 'listen stderr': l.io.err(), 'listen stdout': l.io.out() }, [key])).toEqual([]);
    } finally {
      await b.cleanup();
    }
  });
});
