// The state and cache stores on real files: journal registry, check history limits, results cache windows.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDuration, parseServiceTime } from '../../src/evidence/duration.js';
import { CheckHistory, HISTORY_MAX_ROWS } from '../../src/evidence/history.js';
import { cacheDir, publicBaseUrl, stateDir } from '../../src/evidence/paths.js';
import { registeredJournals, registerJournal } from '../../src/evidence/registry.js';
import { ResultsCache } from '../../src/evidence/results-cache.js';
import { DncError } from '../../src/errors.js';

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
      h.record(rec('old', new Date(now.getTime() - 91 * 86_400_000)), new Date(now.getTime() - 91 * 86_400_000));
      h.record(rec('recent', now), now);
      expect(h.find('old')).toHaveLength(0);
      expect(h.find('recent')).toHaveLength(1);
      for (let i = 0; i < HISTORY_MAX_ROWS; i++) h.record(rec(`n${i}`, now), now);
      expect(h.find('recent')).toHaveLength(0);
      expect(h.find('n0')).toHaveLength(1);
      expect(h.between('http://s', '2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z')).toHaveLength(HISTORY_MAX_ROWS);
    } finally {
      h.close();
    }
  });
});

describe('results cache', () => {
  it('answers within the window and for the same service only; a newer verdict replaces an older one', async () => {
    const c = await ResultsCache.open(dir);
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
      c.put('http://a', [v('2026-11-20T00:00:00.000001+00:00', 'callable', 'one')]);
      c.put('http://a', [v('2026-11-10T00:00:00.000001+00:00', 'do_not_call', 'older')]);
      expect(c.get('http://a', '+12025550100', new Date('2026-11-19T00:00:00Z'))?.correlationId).toBe('one');
      expect(c.get('http://a', '+12025550100', new Date('2026-11-21T00:00:00Z'))).toBeNull();
      expect(c.get('http://b', '+12025550100', new Date('2026-11-01T00:00:00Z'))).toBeNull();
      c.put('http://a', [v('2026-11-21T00:00:00.000001+00:00', 'do_not_call', 'two')]);
      expect(c.get('http://a', '+12025550100', new Date('2026-11-01T00:00:00Z'))).toMatchObject({ correlationId: 'two', result: 'do_not_call' });
    } finally {
      c.close();
    }
  });
});
