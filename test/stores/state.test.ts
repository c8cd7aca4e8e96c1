// The state and cache stores on real files: journal registry, check history limits, results cache windows.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDuration, parseServiceTime } from '../../src/time.js';
import { CheckHistory, HISTORY_MAX_ROWS } from '../../src/stores/history.js';
import { cacheDir, publicBaseUrl, stateDir } from '../../src/paths.js';
import { registeredJournals, registerJournal } from '../../src/stores/registry.js';
import { SqliteResultsCache } from '../../src/stores/results-cache.js';
import { DncError } from '../../src/errors.js';
import { runDnc } from '../helpers/cli.js';
import { lookedUp, US_LIST, world } from '../helpers/world.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-evidence-state-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('folders and values', () => {
  it('XDG folders first, else under the home folder; base URLs lose credentials', () => {
    expect(stateDir({ XDG_STATE_HOME: '/x/state' }, '/home/u')).toBe('/x/state/dnc');
    expect(stateDir({}, '/home/u')).toBe('/home/u/.local/state/dnc');
    expect(cacheDir({}, '/home/u')).toBe('/home/u/.cache/dnc');
    expect(publicBaseUrl('https://user:secret@api.example/v1?key=abc')).toBe('https://api.example/v1');
    expect(parseDuration('--x', '7d')).toBe(7 * 86_400_000);
    expect(parseDuration('--x', '12h')).toBe(12 * 3_600_000);
    expect(() => parseDuration('--x', '7 days')).toThrow(DncError);
    expect(parseServiceTime('2026-11-21T23:08:03.123456+00:00')).toBe(Date.parse('2026-11-21T23:08:03.123Z'));
  });
});

describe('journal registry', () => {
  it('keeps one entry per journal, newest first, and lists only journals that still exist', async () => {
    const a = path.join(dir, 'a.sqlite');
    const b = path.join(dir, 'b.sqlite');
    writeFileSync(a, '');
    writeFileSync(b, '');
    const state = path.join(dir, 'state');
    await registerJournal(state, a, 'a.csv', new Date('2026-11-01T00:00:00Z'));
    await registerJournal(state, b, 'b.csv', new Date('2026-11-02T00:00:00Z'));
    await registerJournal(state, a, 'a.csv', new Date('2026-11-03T00:00:00Z'));
    expect((await registeredJournals(state)).map((j) => j.journal)).toEqual([a, b]);
    rmSync(b);
    expect((await registeredJournals(state)).map((j) => j.journal)).toEqual([a]);
  });
});

describe('check history', () => {
  it('keeps the latest 1,000 checks and none older than 90 days', async () => {
    const h = await CheckHistory.open(dir);
    try {
      const now = new Date('2026-11-21T00:00:00Z');
      const rec = (id: string, at: Date) => ({
        correlationId: id,
        phoneNumber: '+12025550100',
        country: 'US',
        requestedAt: at.toISOString(),
        answeredAt: at.toISOString(),
        service: 'http://s',
        httpStatus: 200,
        kind: 'succeeded',
        credits: 1,
        body: '{}',
        webhookUrl: null,
      });
      await h.record(rec('old', new Date(now.getTime() - 91 * 86_400_000)), new Date(now.getTime() - 91 * 86_400_000));
      await h.record(rec('recent', now), now);
      expect(await h.find('old')).toHaveLength(0);
      expect(await h.find('recent')).toHaveLength(1);
      for (let i = 0; i < HISTORY_MAX_ROWS; i++) await h.record(rec(`n${i}`, now), now);
      expect(await h.find('recent')).toHaveLength(0);
      expect(await h.find('n0')).toHaveLength(1);
      expect(await h.between('http://s', '2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z')).toHaveLength(
        HISTORY_MAX_ROWS,
      );
    } finally {
      await h.close();
    }
  });
});

describe('results cache', () => {
  it('answers within the window and for the same service and account only; a newer verdict replaces an older one', async () => {
    const c = await SqliteResultsCache.open(dir, { service: 'http://a', apiKey: 'key-one' });
    const otherService = await SqliteResultsCache.open(dir, { service: 'http://b', apiKey: 'key-one' });
    const otherAccount = await SqliteResultsCache.open(dir, { service: 'http://a', apiKey: 'key-two' });
    try {
      const v = (checkedAt: string, result: 'callable' | 'do_not_call', correlationId: string) => ({
        e164: '+12025550100',
        country: 'US',
        result,
        listSource: 'https://r/US',
        checkedAt,
        correlationId,
        body: null,
      });
      await c.put([v('2026-11-20T00:00:00.000001+00:00', 'callable', 'one')]);
      await c.put([v('2026-11-10T00:00:00.000001+00:00', 'do_not_call', 'older')]);
      expect((await c.get('+12025550100', new Date('2026-11-19T00:00:00Z')))?.correlationId).toBe('one');
      expect(await c.get('+12025550100', new Date('2026-11-21T00:00:00Z'))).toBeNull();
      expect(await otherService.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toBeNull();
      expect(await otherAccount.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toBeNull();
      await c.put([v('2026-11-21T00:00:00.000001+00:00', 'do_not_call', 'two')]);
      expect(await c.get('+12025550100', new Date('2026-11-01T00:00:00Z'))).toMatchObject({
        correlationId: 'two',
        result: 'do_not_call',
      });
      // The key itself is in no row: the account column holds its salted HMAC.
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(path.join(dir, 'results.sqlite'), { readonly: true });
      const raw = JSON.stringify(db.prepare('SELECT * FROM verdicts').all());
      db.close();
      expect(raw).not.toContain('key-one');
      expect(raw).toMatch(/"account":"[0-9a-f]{64}"/);
    } finally {
      await c.close();
      await otherService.close();
      await otherAccount.close();
    }
  });
});

describe('a home folder that does not exist (HOME=/nonexistent, as system accounts have it)', () => {
  it('is never created: batch and check still work, and say where state could not be kept and what is not kept', async () => {
    const w = await world();
    try {
      const home = path.join(w.dir, 'nonexistent');
      const env = { DNC_BASE_URL: w.sb.baseUrl, DNC_API_KEY: w.sb.apiKey };
      const input = w.file('calls.csv', US_LIST);
      const batch = await runDnc(['batch', input], { env, homedir: home });
      expect(batch.code, batch.stderr).toBe(0);
      const note = `dnc: note: the home folder ${home} does not exist and dnc does not create it: not kept between runs: the check history and the journal registry (dnc trace, usage --reconcile), the anchors of what it writes (dnc verify then calls those files unproven); the results cache (--reuse-within) and learned costs (--dry-run estimates) (set HOME to a folder that exists, or XDG_STATE_HOME and XDG_CACHE_HOME)`;
      expect(batch.stderr).toContain(note);
      expect(readFileSync(path.join(w.dir, 'calls.results.csv'), 'utf8')).toContain('callable');
      const check = await runDnc(['check', '+12025550104'], { env, homedir: home });
      expect(check.code, check.stderr).toBe(0);
      expect(check.stderr).toContain(note);
      // --reuse-within cannot be honoured: said as a warning, and every number is looked up.
      const reuse = await runDnc(['batch', input, '-o', path.join(w.dir, 'again.csv'), '--reuse-within', '1d'], {
        env,
        homedir: home,
      });
      expect(reuse.code).toBe(0);
      expect(reuse.stderr).toContain(
        `--reuse-within: the results cache cannot be read (the home folder ${home} does not exist (dnc does not create it)); every number is looked up`,
      );
      // What needs the state folder says so and sends nothing: a journal for -o -, a default internal list.
      const before = lookedUp(w.sb).length;
      const stream = await runDnc(['batch', '-', '-o', '-'], { env, homedir: home, stdin: US_LIST.join('\n') });
      expect(stream.code).toBe(3);
      expect(stream.stderr).toContain(
        `[E_OUTPUT_UNWRITABLE]: cannot keep the list read from standard input in the state folder: the home folder ${home} does not exist`,
      );
      const suppress = await runDnc(['suppress', 'add', '+12025550100'], { env, homedir: home });
      expect(suppress.code).toBe(3);
      expect(suppress.stderr).toContain('give --suppression-list PATH');
      expect(lookedUp(w.sb).length).toBe(before);
      expect(existsSync(home)).toBe(false);
      // With XDG folders of its own the same runs keep their state, and say nothing about it.
      const xdg = { ...env, XDG_STATE_HOME: path.join(w.dir, 'state'), XDG_CACHE_HOME: path.join(w.dir, 'cache') };
      const kept = await runDnc(['check', '+12025550104'], { env: xdg, homedir: home });
      expect(kept.stderr).not.toContain('note: the home folder');
      expect(existsSync(path.join(w.dir, 'state', 'dnc', 'checks.sqlite'))).toBe(true);
      expect(existsSync(home)).toBe(false);
    } finally {
      await w.cleanup();
    }
  });
});
