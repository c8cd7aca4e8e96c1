// A service (or a push) that echoes the API key back: the key is masked where the answer enters dnc, so it is found in
// no file dnc writes (results, lists, journal, manifest, results cache, check history, report) under the results
// folder, HOME, the state and cache folders. Issue 25, item 1.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { startHostileService } from '../../bench/hostile-service.mjs';
import { scratch } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { filesUnder, listen, post, readCsv, succeededPush, webhookBatch, type WebhookBatch } from './helpers.js';

interface Hostile {
  baseUrl: string;
  apiKey: string;
  setBehaviour(b: string): void;
  close(): Promise<void>;
}

const tmp = scratch();
let svc: Hostile;

beforeAll(async () => {
  svc = (await startHostileService()) as Hostile;
});
afterAll(async () => {
  await svc.close();
  tmp.remove();
});

/** The files under `dir` holding `key` in any case, or percent-encoded. */
function holding(dir: string, key: string): string[] {
  const forms = [key, key.toUpperCase(), encodeURIComponent(key)].map((f) => Buffer.from(f));
  return filesUnder(dir).filter((f) => {
    const bytes = readFileSync(f);
    return forms.some((form) => bytes.includes(form));
  });
}

/** `dnc listen` on a webhook batch's results, in a home of its own, with `env` only. */
function listenOn(b: WebhookBatch, env: Record<string, string>) {
  const home = path.join(b.dir, 'home');
  mkdirSync(home);
  return listen(['--results', b.output, '--port', String(b.port)], { cwd: b.dir, home, env });
}

describe('a key the service echoes is in no file dnc writes', () => {
  it('check and batch (CSV, workbook, every list), verify, status and report, against an echoing service', async () => {
    const home = path.join(tmp.dir, 'home');
    const work = path.join(tmp.dir, 'work');
    mkdirSync(home);
    mkdirSync(work);
    const env = { DNC_BASE_URL: svc.baseUrl, DNC_API_KEY: svc.apiKey, HOME: home };
    const input = path.join(work, 'calls.csv');
    writeFileSync(input, 'name,phone\na,+12025550160\nb,+12025550161\nc,+12025550163\n');
    for (const behaviour of ['echo-key', 'echo-key-error']) {
      svc.setBehaviour(behaviour);
      const out = path.join(work, `${behaviour}.results.csv`);
      const lists = [
        '--callable-out',
        `${behaviour}.callable.csv`,
        '--review-out',
        `${behaviour}.review.csv`,
        '--dial-out',
        `${behaviour}.dial.txt`,
      ];
      const r = await runDnc(['batch', input, '-o', out, ...lists], { env, homedir: home, cwd: work });
      expect([0, 7], r.stderr).toContain(r.code);
      const book = await runDnc(['batch', input, '-o', path.join(work, `${behaviour}.book.xlsx`)], {
        env,
        homedir: home,
        cwd: work,
      });
      expect([0, 7], book.stderr).toContain(book.code);
      const check = await runDnc(['check', '+12025550164', '--json'], { env, homedir: home, cwd: work });
      expect(check.stdout).not.toContain(svc.apiKey);
      await runDnc(['verify', out], { env, homedir: home, cwd: work });
      await runDnc(['report', out, '-o', path.join(work, `${behaviour}.report.html`)], {
        env,
        homedir: home,
        cwd: work,
      });
    }
    // It was there to find: the service did echo it, and dnc kept the answer, masked.
    const journal = readFileSync(path.join(work, 'echo-key.results.csv.journal.sqlite'));
    expect(journal.includes(Buffer.from('registers.hostile.example/***'))).toBe(true);
    expect(holding(tmp.dir, svc.apiKey)).toEqual([]);
    // The manifest is private like the rest.
    expect(statSync(path.join(work, 'echo-key.results.manifest.json')).mode & 0o777).toBe(0o600);
  });

  it('a push that echoes the key is kept, masked, in the journal and the results', async () => {
    const b = await webhookBatch([['au', '+61412345001']]);
    try {
      const key = String(b.env.DNC_API_KEY);
      const l = listenOn(b, b.env as Record<string, string>);
      const url = await l.url;
      const row = readCsv(b.output)[0]!;
      const push = succeededPush(row, { dnc_list_source: `https://registers.example/${key}`, do_not_call: true });
      expect((await post(url, push)).status).toBe(200);
      l.interrupts.fire();
      await l.exit;
      expect(holding(b.dir, key)).toEqual([]);
      expect(readCsv(b.output)[0]!.dnc_list_source).toBe('https://registers.example/***');
    } finally {
      await b.cleanup();
    }
  });

  it('a listener started without the key masks it by the trace the batch kept: raw, upper-case, encoded, base64', async () => {
    const b = await webhookBatch([['au', '+61412345002']]);
    try {
      const key = String(b.env.DNC_API_KEY);
      // The journal holds the key's trace, never the key.
      expect(holding(b.dir, key)).toEqual([]);
      const l = listenOn(b, { DNC_BASE_URL: String(b.env.DNC_BASE_URL) });
      const url = await l.url;
      const row = readCsv(b.output)[0]!;
      const echoes = [key, key.toUpperCase(), encodeURIComponent(key), Buffer.from(`x${key}`).toString('base64')];
      const push = succeededPush(row, {
        dnc_list_source: `https://registers.example/${key}`,
        do_not_call: true,
        note: echoes.join(' '),
      });
      expect((await post(url, push, { 'x-echo': key })).status).toBe(200);
      // Refused, the key quoted in its reason and kept as evidence: masked there too.
      await post(url, succeededPush(row), { 'x-service-correlation-id': key });
      l.interrupts.fire();
      await l.exit;
      expect(holding(b.dir, key)).toEqual([]);
      // Kept masked (the sandbox's own push for the number may come first: which verdict the row shows is a race).
      const journal = readFileSync(b.journal);
      expect(journal.includes(Buffer.from(echoes[3]!.slice(4, -4)))).toBe(false);
      expect(journal.includes(Buffer.from('"dnc_list_source":"https://registers.example/***"'))).toBe(true);
      expect(l.io.err() + l.io.out()).not.toContain(key);
    } finally {
      await b.cleanup();
    }
  });
});
