// Validity windows per country (US/CA 31 days, GB 28, AU 30, others 30, configurable): the manifest, dnc verify and dnc status at the edges, with an injected clock.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_VALIDITY_DAYS,
  validityRules,
  ValidityBuilder,
  VALIDITY_DAYS,
  validUntilMs,
  windowDays,
} from '../../src/compliance/validity.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { parseServiceTime } from '../../src/time.js';
import { DAY, dnc, world, type World, sameMachine } from '../helpers/world.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const rows = (file: string) => parse(readFileSync(file), { columns: true }) as Array<Record<string, string>>;
const iso = (ms: number) => new Date(ms).toISOString();

describe('validity rules', () => {
  it('built-in windows, config overrides, and the earliest valid-until bounded by an exemption', () => {
    const r = validityRules(undefined);
    expect(['US', 'CA', 'GB', 'AU', 'DE', 'FR'].map((c) => windowDays(r, c))).toEqual([31, 31, 28, 30, 30, 30]);
    const o = validityRules({ default: 14, GB: 21 });
    expect(['US', 'GB', 'DE'].map((c) => windowDays(o, c))).toEqual([31, 21, 14]);
    const at = '2026-11-01T10:00:00.123456+00:00';
    expect(iso(validUntilMs(r, 'GB', at))).toBe('2026-11-29T10:00:00.123Z');
    const b = new ValidityBuilder(r);
    b.add('US', 'callable', at, null);
    b.add('US', 'do_not_call', '2026-10-01T00:00:00Z', null); // never dialled: its age does not matter
    b.add('GB', 'callable', at, '2026-11-20T23:59:59.999Z');
    const v = b.done();
    expect(v.valid_until_by_country).toEqual({ GB: '2026-11-20T23:59:59.999Z', US: '2026-12-02T10:00:00.123Z' });
    expect(v.valid_until).toBe('2026-11-20T23:59:59.999Z');
    expect(v.exemption_bound_rows).toBe(1);
  });
});

describe('validity of a scrub: manifest, verify, status', () => {
  it('each country expires at its own window; verify and status agree at the edges; status exit codes', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'us,+12025550100', 'gb,+442079460122', 'de,+4930123456']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    const at = Object.fromEntries(rows(out).map((x) => [x.name, parseServiceTime(x.dnc_checked_at)]));
    const m = JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8'));
    expect(m.validity.valid_until_by_country).toEqual({
      DE: iso(at.de! + 30 * DAY),
      GB: iso(at.gb! + 28 * DAY),
      US: iso(at.us! + 31 * DAY),
    });
    const gbEnd = at.gb! + 28 * DAY;
    expect(m.validity.valid_until).toBe(iso(Math.min(gbEnd, at.de! + 30 * DAY, at.us! + 31 * DAY)));
    // Each row's own valid-until is in the output (dnc_valid_until), which the manifest names and its hash pins.
    expect(Object.fromEntries(rows(out).map((x) => [x.name, x.dnc_valid_until]))).toEqual({
      us: iso(at.us! + 31 * DAY),
      gb: iso(gbEnd),
      de: iso(at.de! + 30 * DAY),
    });
    expect(m.validity.row_column).toBe('dnc_valid_until');

    // verify: the GB row is fit through its 28th day, and stale one millisecond later; the US row is then still fine.
    const fit = await dnc(['--json', 'verify', out], sameMachine(w!), { now: () => new Date(gbEnd) });
    expect(fit.code, fit.stdout).toBe(0);
    const stale = await dnc(['--json', 'verify', out], sameMachine(w!), { now: () => new Date(gbEnd + 1) });
    expect(stale.code).toBe(3);
    const recheck = JSON.parse(stale.stdout).recheck;
    expect(recheck.map((r: { country: string; reason: string }) => [r.country, r.reason])).toEqual([['GB', 'stale']]);

    // Every country at its own edge: fit through checked_at + its window, stale one millisecond later.
    const ends = (['gb', 'de', 'us'] as const).map(
      (k) => [k.toUpperCase(), at[k]! + { gb: 28, de: 30, us: 31 }[k] * DAY] as const,
    );
    for (const [country, end] of ends) {
      const recheckAt = async (ms: number) =>
        (
          (JSON.parse((await dnc(['--json', 'verify', out], sameMachine(w!), { now: () => new Date(ms) })).stdout)
            .recheck ?? []) as Array<{ country: string }>
        ).map((r) => r.country);
      expect(await recheckAt(end), `${country} at its edge`).not.toContain(country);
      expect(await recheckAt(end + 1), `${country} past its edge`).toContain(country);
    }

    // status: the same edge, with the injected clock.
    const status = async (nowMs: number, ...args: string[]) =>
      dnc(['--json', 'status', out, ...args], sameMachine(w!), { now: () => new Date(nowMs) });
    const atEdge = await status(gbEnd);
    expect(atEdge.code).toBe(0);
    expect(JSON.parse(atEdge.stdout).files[0]).toMatchObject({
      state: 'valid',
      valid_until: iso(gbEnd),
      days_left: 0,
      rows: 3,
      callable: 3,
    });
    const past = await status(gbEnd + 1);
    expect(past.code).toBe(3);
    expect(JSON.parse(past.stdout).files[0].state).toBe('expired');
    // --expiring 7d: exit 3 once less than 7 days are left.
    expect((await status(gbEnd - 7 * DAY, '--expiring', '7d')).code).toBe(0);
    const soon = await status(gbEnd - 7 * DAY + 1, '--expiring', '7d');
    expect(soon.code).toBe(3);
    expect(JSON.parse(soon.stdout)).toMatchObject({ expiring_within: '7d', files: [{ state: 'expiring' }] });
    expect((await status(gbEnd - 7 * DAY + 1)).code).toBe(0);
    // A folder: every manifest in it; human output.
    const human = await dnc(['status', w.dir, '--expiring', '7d'], sameMachine(w!), {
      now: () => new Date(gbEnd - 3 * DAY),
    });
    expect(human.code).toBe(3);
    expect(human.stdout).toContain('calls.results.csv\tEXPIRING');
    expect(human.stderr).toContain('1 scrub(s) expired, expiring or not fit to dial within 7d');
  });

  it('CA has 31 days, as the US: a scrub of Canadian numbers records it and verify holds to it', async () => {
    w = await world({ supportedCountries: ['US', 'CA'] });
    const input = w.file('calls.csv', ['name,phone', 'ca,+14165550122']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    const checked = parseServiceTime(rows(out)[0]!.dnc_checked_at!);
    const m = JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8'));
    expect(m.validity.valid_until_by_country).toEqual({ CA: iso(checked + 31 * DAY) });
    expect((await dnc(['verify', out], sameMachine(w!), { now: () => new Date(checked + 31 * DAY) })).code).toBe(0);
    expect((await dnc(['verify', out], sameMachine(w!), { now: () => new Date(checked + 31 * DAY + 1) })).code).toBe(3);
  });

  it('validity_days in the config file changes the windows the scrub records and verify uses', async () => {
    w = await world();
    const cfg = w.file('config.json', [JSON.stringify({ validity_days: { default: 7, GB: 14 } })]);
    const input = w.file('calls.csv', ['name,phone', 'gb,+442079460122', 'de,+4930123456']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['--config', cfg, 'batch', input, '-o', out], w.env)).code).toBe(0);
    const at = Object.fromEntries(rows(out).map((x) => [x.name, parseServiceTime(x.dnc_checked_at)]));
    const m = JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8'));
    expect(m.validity).toMatchObject({ default_window_days: 7, window_days: { GB: 14, US: 31 } });
    expect(m.validity.valid_until_by_country).toEqual({ DE: iso(at.de! + 7 * DAY), GB: iso(at.gb! + 14 * DAY) });
    // verify reads the windows from the manifest (no config needed).
    expect((await dnc(['verify', out], sameMachine(w!), { now: () => new Date(at.de! + 7 * DAY + 1) })).code).toBe(3);
    const bad = w.file('bad.json', [JSON.stringify({ validity_days: { default: 0 } })]);
    expect((await dnc(['--config', bad, 'batch', input, '-o', out], w.env)).code).toBe(2);
  });

  it('verify finds a dnc_valid_until edited to last longer, even with the manifest rewritten to match the file', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'gb,+442079460122']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    const checked = parseServiceTime(rows(out)[0]!.dnc_checked_at!);
    const text = readFileSync(out, 'utf8');
    const longer = text.replace(iso(checked + 28 * DAY), iso(checked + 90 * DAY));
    expect(longer).not.toBe(text);
    // The manifest rewritten to match, so that only the row itself can tell.
    rewriteOutputAndManifest(out, longer);
    const r = await dnc(['--json', 'verify', out], sameMachine(w!), { now: () => new Date(checked + DAY) });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).recheck).toMatchObject([
      { country: 'GB', reason: 'edited', detail: expect.stringContaining(`(${iso(checked + 28 * DAY)})`) },
    ]);
  });

  it('status refuses a results file without a manifest, and a hand-edited manifest', async () => {
    w = await world();
    const lone = w.file('lone.csv', ['a,b']);
    const r = await dnc(['status', lone], {});
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('E_NO_MANIFEST');
    const fake = path.join(w.dir, 'x.manifest.json');
    writeFileSync(fake, '{"manifest_version": 99}');
    expect((await dnc(['status', fake], {})).code).toBe(3);
    expect((await dnc(['status', w.dir, '--expiring', 'soon'], {})).code).toBe(2);
  });
});

describe("docs/verify.md's --max-age defaults (issue 48: the prose said 31 days for all but AU)", () => {
  it('name the days each country gets, and the default, as validity.ts has them', () => {
    const doc = readFileSync(path.join(REPO_ROOT, 'docs', 'verify.md'), 'utf8');
    const bullet = doc.split('\n- ').find((b) => b.startsWith('`--max-age` default'))!;
    const said = new Map<string, number>();
    for (const [, days, whom] of bullet.matchAll(/\*\*(\d+) days for ([^*]+)\*\*/g)) {
      for (const code of whom!.match(/\b[A-Z]{2}\b/g) ?? []) said.set(code, Number(days));
      if (/every other country/.test(whom!)) said.set('other', Number(days));
    }
    expect(Object.fromEntries(said)).toEqual({ ...VALIDITY_DAYS, other: DEFAULT_VALIDITY_DAYS });
  });
});
