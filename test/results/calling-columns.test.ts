// dnc batch's calling columns (dnc_time_zones, dnc_calling_window; dnc_N_* with several phone columns) against the
// sandbox: read back with Python's csv module and openpyxl, compared with a table written here (not computed by
// src/calling); the team's policy recorded when a batch starts and kept on resume; verify checks every cell; a
// webhook batch's cells written by listen's render.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runListenJob } from '../../src/listen/run.js';
import { processLockDeps } from '../../src/context.js';
import { openStores } from '../../src/stores/owner.js';
import { sandbox, sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { readWorkbookIndependently } from '../helpers/xlsx-oracle.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { PUSH_PATH, freePort, testInterrupts } from '../listen/helpers.js';

const file = sandboxForFile();
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(() => {
  sb = file.sb;
  env = { ...file.env, ...scratchFolders(file.dir) };
});
beforeEach(() => sb.setCreditLimit(1_000_000));

const US = 'Mon-Sun 08:00-21:00';
/**
 * Each number's zones and weekly window as docs/calling.md's rules table gives them (written by hand from the table
 * and libphonenumber's zone map: this file does not ask src/calling).
 */
const TABLE: Record<string, readonly [string, string]> = {
  '+12125550100': ['America/New_York', US], // New York
  '+12125550101': ['America/New_York', US], // do_not_call in the sandbox: its zones all the same
  '+14155550102': ['America/Los_Angeles', US], // San Francisco
  '+16025550104': ['America/Phoenix', US], // Arizona: no daylight saving, its own zone
  '+16055550106': ['America/Denver America/North_Dakota/Center', US], // South Dakota: one code, two zones
  '+13055550108': ['America/New_York', 'Mon-Sun 08:00-20:00'], // Florida's stricter rule
  '+14165550110': ['America/Toronto', 'Mon-Fri 09:00-21:30; Sat-Sun 10:00-18:00'], // Canada
  '+61291234568': ['Australia/Sydney', 'Mon-Fri 09:00-20:00; Sat 09:00-17:00; not on public holidays (AU)'], // not_checked
  '+34912345678': ['Europe/Madrid', 'Mon-Fri 09:00-21:00; not on public holidays (ES)'],
  '+442079460102': ['Europe/London', 'Mon-Fri 08:00-21:00; Sat-Sun 09:00-21:00'],
  // DE: no published hours rule, so the default, closed on public holidays (docs/calling.md)
  '+493012345100': ['Europe/Berlin', 'Mon-Fri 09:00-20:00; not on public holidays (DE)'],
};
/** The same numbers under the policy below: Monday to Friday, 09:00 to 19:00, on top of the law. */
const POLICY = { policy: { name: 'Acme', hours: { 'mon-fri': '09:00-19:00' } } };
const UNDER_POLICY: Record<string, string> = {
  '+12125550100': 'Mon-Fri 09:00-19:00',
  '+13055550108': 'Mon-Fri 09:00-19:00',
  '+14165550110': 'Mon-Fri 09:00-19:00',
  '+61291234568': 'Mon-Fri 09:00-19:00; not on public holidays (AU)',
  '+34912345678': 'Mon-Fri 09:00-19:00; not on public holidays (ES)',
  '+442079460102': 'Mon-Fri 09:00-19:00',
  '+493012345100': 'Mon-Fri 09:00-19:00; not on public holidays (DE)',
};
const NUMBERS = Object.keys(TABLE);
/** The AU number is webhook-only: not_checked without --webhook-url, so the batch exits 7 (unfinished). */
const UNFINISHED = 7;

function write(name: string, lines: string[]): string {
  const p = path.join(file.dir, name);
  writeFileSync(p, lines.join('\n') + '\n');
  return p;
}

function settingsFile(name: string, settings: unknown): string {
  const p = path.join(file.dir, name);
  writeFileSync(p, JSON.stringify(settings), { mode: 0o600 });
  return p;
}

const batch = (args: string[], extraEnv: Record<string, string> = {}) =>
  runDnc(['batch', ...args], { env: { ...env, ...extraEnv }, homedir: file.dir, cwd: file.dir });

/** Rows of a CSV as objects, read by Python's csv module. */
function rowsOf(out: string): Array<Record<string, string>> {
  const [header, ...rows] = readCsvIndependently(out);
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

const manifestOf = (out: string) => JSON.parse(readFileSync(out.replace(/\.(csv|xlsx)$/, '.manifest.json'), 'utf8'));

describe('the calling columns of dnc batch', () => {
  it('one phone column: every readable number gets its zones and window, whatever its verdict', async () => {
    const input = write('one.csv', ['name,phone', ...NUMBERS.map((n, i) => `r${i},${n}`), 'bad,12', 'empty,']);
    const out = path.join(file.dir, 'one.results.csv');
    const r = await batch([input, '-o', out, '--country', 'US']);
    expect(r.code, r.stderr).toBe(UNFINISHED);
    const [header] = readCsvIndependently(out);
    expect(header!.slice(-4)).toEqual(['dnc_exemption', 'dnc_valid_until', 'dnc_time_zones', 'dnc_calling_window']);
    const rows = rowsOf(out);
    expect(rows.map((row) => row.dnc_result)).toContain('do_not_call');
    expect(rows.map((row) => row.dnc_result)).toContain('not_checked');
    NUMBERS.forEach((n, i) => {
      expect(rows[i]!.dnc_phone_e164).toBe(n);
      expect([rows[i]!.dnc_time_zones, rows[i]!.dnc_calling_window], n).toEqual(TABLE[n]);
    });
    // No number read: nothing to place.
    for (const row of rows.slice(-2))
      expect([row.dnc_result, row.dnc_time_zones, row.dnc_calling_window]).toEqual(['invalid', '', '']);
    const m = manifestOf(out);
    expect(m.format.dnc_columns).toBe(14);
    expect(m.calling_rules_version).toMatch(/^dnc-rules\/\S+ tzdata\/\S+ date-holidays\/\S+ libphonenumber\/\S+$/);
    const v = await runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir });
    expect(JSON.parse(v.stdout)).toMatchObject({ tampered: false, calling_unchecked: null });
  });

  it('three phone columns: each number its own cells, the row the cells of the number dnc_phone_e164 names', async () => {
    // Columns Phone, Mobile, Work: rows mixing zones, a blank cell, a number repeated across rows and columns.
    const rows = [
      ['+12125550101', '+16025550104', '+442079460102'], // first is do_not_call: the row's number is the second
      ['', '+16055550106', '+61291234568'],
      ['+34912345678', '12', '+12125550101'],
      ['+493012345100', '+14165550110', '+13055550108'],
      ['+14155550102', '', ''],
    ];
    const input = write('three.csv', ['Name,Phone,Mobile,Work', ...rows.map((r, i) => [`c${i}`, ...r].join(','))]);
    const out = path.join(file.dir, 'three.results.csv');
    const r = await batch([input, '-o', out, '--column', 'Phone,Mobile,Work', '--country', 'US']);
    // The AU number left not_checked leaves its row not_checked (the row rule): the batch is unfinished.
    expect(r.code, r.stderr).toBe(UNFINISHED);
    const [header] = readCsvIndependently(out);
    const per = (n: number) =>
      [
        'e164',
        'result',
        'error_code',
        'correlation_id',
        'checked_at',
        'valid_until',
        'time_zones',
        'calling_window',
      ].map((c) => `dnc_${n}_${c}`);
    expect(header!.slice(4 + 12)).toEqual([
      'dnc_time_zones',
      'dnc_calling_window',
      ...per(1),
      ...per(2),
      ...per(3),
      'dnc_callable_numbers',
    ]);
    const got = rowsOf(out);
    rows.forEach((cells, i) => {
      const row = got[i]!;
      cells.forEach((n, k) => {
        const own = [row[`dnc_${k + 1}_time_zones`], row[`dnc_${k + 1}_calling_window`]];
        expect(own, `row ${i} column ${k + 1}`).toEqual(TABLE[n] ? [...TABLE[n]] : ['', '']);
      });
      const named = row.dnc_phone_e164!;
      expect([row.dnc_time_zones, row.dnc_calling_window], `row ${i}`).toEqual(named ? [...TABLE[named]!] : ['', '']);
    });
    expect(got[0]!.dnc_phone_e164).toBe('+16025550104');
    expect(manifestOf(out).format.dnc_columns).toBe(14 + 3 * 8 + 1);
    const v = await runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir });
    expect(JSON.parse(v.stdout)).toMatchObject({ tampered: false, calling_unchecked: null });
  });

  it("a company policy narrows the window, and the manifest's rules version carries its fingerprint", async () => {
    const input = write('policy.csv', ['name,phone', ...Object.keys(UNDER_POLICY).map((n, i) => `p${i},${n}`)]);
    const out = path.join(file.dir, 'policy.results.csv');
    const r = await batch([input, '-o', out, '--calling-settings', settingsFile('acme.json', POLICY)]);
    expect(r.code, r.stderr).toBe(UNFINISHED);
    for (const row of rowsOf(out)) {
      expect(row.dnc_calling_window, row.dnc_phone_e164).toBe(UNDER_POLICY[row.dnc_phone_e164!]);
      expect(row.dnc_time_zones).toBe(TABLE[row.dnc_phone_e164!]![0]);
    }
    // The fingerprint: SHA-256 of the settings as canonical JSON (keys sorted), its first 12 hex digits.
    const canonical = '{"policy":{"hours":{"mon-fri":"09:00-19:00"},"name":"Acme"}}';
    const fingerprint = createHash('sha256').update(canonical).digest('hex').slice(0, 12);
    expect(manifestOf(out).calling_rules_version).toMatch(new RegExp(` settings/${fingerprint}$`));
  });

  it('a bad settings file is refused before anything is sent or a journal made', async () => {
    const input = write('refused.csv', ['name,phone', 'a,+12125550100']);
    const out = path.join(file.dir, 'refused.results.csv');
    const bad = settingsFile('bad.json', { policy: { hours: { 'mon-fri': '9-19' } } });
    const before = sb.lookups().length;
    const r = await batch([input, '-o', out, '--calling-settings', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("'9-19' is not a window HH:MM-HH:MM");
    expect(sb.lookups().length).toBe(before);
    expect(() => readFileSync(`${out}.journal.sqlite`)).toThrow();
  });

  it('a resumed batch keeps the settings it was started with, and says the ones now in effect differ', async () => {
    const input = write('resume.csv', ['name,phone', ...Object.keys(UNDER_POLICY).map((n, i) => `q${i},${n}`)]);
    const out = path.join(file.dir, 'resume.results.csv');
    // Stopped by its budget: a rerun finishes it.
    const first = await batch([
      input,
      '-o',
      out,
      '--max-credits',
      '2',
      '--calling-settings',
      settingsFile('acme2.json', POLICY),
    ]);
    expect(first.code, first.stderr).not.toBe(0);
    expect(rowsOf(out).map((row) => row.dnc_result)).toContain('not_checked');
    const other = settingsFile('other.json', { policy: { name: 'Other', hours: { 'mon-sun': '10:00-17:00' } } });
    const again = await batch([input, '-o', out, '--max-credits', 'none'], { DNC_CALLING_SETTINGS: other });
    expect(again.code, again.stderr).toBe(UNFINISHED);
    expect(again.stderr).toContain('this batch keeps the calling settings it was started with');
    const rows = rowsOf(out);
    expect(rows.filter((row) => row.dnc_result === 'not_checked').map((row) => row.dnc_phone_e164)).toEqual([
      '+61291234568',
    ]);
    for (const row of rows) expect(row.dnc_calling_window, row.dnc_phone_e164).toBe(UNDER_POLICY[row.dnc_phone_e164!]);
    // The same settings again: nothing to say.
    const same = await batch([input, '-o', out, '--calling-settings', path.join(file.dir, 'acme2.json')]);
    expect(same.code, same.stderr).toBe(UNFINISHED);
    expect(same.stderr).not.toContain('calling settings');
  });

  it('verify finds one edited dnc_calling_window cell, the manifest rewritten to match', async () => {
    const input = write('tamper.csv', ['name,phone', 'a,+12125550100', 'b,+13055550108', 'c,+442079460102']);
    const out = path.join(file.dir, 'tamper.results.csv');
    expect((await batch([input, '-o', out])).code).toBe(0);
    const verify = () => runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir });
    expect(JSON.parse((await verify()).stdout)).toMatchObject({ fit: true, tampered: false });
    // Florida's 20:00 made 21:00: the file and its manifest (and the state folder's anchor) rewritten to agree.
    const text = readFileSync(out, 'utf8').replace(',Mon-Sun 08:00-20:00', ',Mon-Sun 08:00-21:00');
    expect(text).not.toBe(readFileSync(out, 'utf8'));
    rewriteOutputAndManifest(out, text, () => {}, path.join(file.dir, 'state', 'dnc'));
    const report = JSON.parse((await verify()).stdout);
    expect(report).toMatchObject({ fit: false, tampered: true, recheck_by_reason: { edited: 1 } });
    expect(report.recheck[0]).toMatchObject({ number: '+13055550108', reason: 'edited' });
    expect(report.recheck[0].detail).toContain(
      'dnc_calling_window "Mon-Sun 08:00-21:00" is not what the calling rules give ("Mon-Sun 08:00-20:00")',
    );
  });

  it('files written before the calling columns still verify, one phone column or three', async () => {
    const input = write('old.csv', [
      'Name,Phone,Mobile,Work',
      'a,+12125550100,+13055550108,',
      'b,+442079460102,+12125550101,+12125550100',
    ]);
    const q = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
    for (const columns of [['Phone'], ['Phone', 'Mobile', 'Work']]) {
      const out = path.join(file.dir, `old-${columns.length}.results.csv`);
      expect((await batch([input, '-o', out, '--column', columns.join(',')])).code).toBe(0);
      // As an earlier dnc wrote it: no calling cells (the row's two, and each phone column's last two), no rules version.
      const [header, ...rows] = readCsvIndependently(out);
      const calling = new Set(
        header!.flatMap((h, i) => (/^dnc_((\d+_)?(time_zones|calling_window)|callable_numbers)$/.test(h) ? [i] : [])),
      );
      expect(calling.size).toBe(columns.length > 1 ? 9 : 2);
      const text =
        [header!, ...rows]
          .map((r) =>
            r
              .filter((_, i) => !calling.has(i))
              .map(q)
              .join(','),
          )
          .join('\n') + '\n';
      rewriteOutputAndManifest(
        out,
        text,
        (m) => {
          m.format.dnc_columns = 12 + (columns.length > 1 ? 6 * columns.length : 0);
          delete m.calling_rules_version;
        },
        path.join(file.dir, 'state', 'dnc'),
      );
      const report = JSON.parse(
        (await runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir })).stdout,
      );
      expect(report, JSON.stringify(report.differences)).toMatchObject({
        fit: true,
        tampered: false,
        differences: [],
        calling_rules_version: null,
      });
    }
  });

  it('a file written under other calling rules is said to be unchecked, not called edited', async () => {
    const input = write('rules.csv', ['name,phone', 'a,+12125550100']);
    const out = path.join(file.dir, 'rules.results.csv');
    expect((await batch([input, '-o', out])).code).toBe(0);
    rewriteOutputAndManifest(
      out,
      readFileSync(out, 'utf8'),
      (m) => {
        m.calling_rules_version = m.calling_rules_version.replace(/^dnc-rules\/\S+/, 'dnc-rules/2099.1.1');
      },
      path.join(file.dir, 'state', 'dnc'),
    );
    const v = await runDnc(['verify', out], { env, homedir: file.dir, cwd: file.dir });
    expect(v.code, v.stdout).toBe(0);
    expect(v.stdout).toContain('the calling columns were written under calling rules dnc-rules/2099.1.1');
    expect(v.stdout).toContain('they are not checked');
  });

  it('a workbook output has the columns, read back with openpyxl', async () => {
    const input = write('book.csv', ['name,phone', ...NUMBERS.map((n, i) => `w${i},${n}`)]);
    const out = path.join(file.dir, 'book.results.xlsx');
    const r = await batch([input, '-o', out]);
    expect(r.code, r.stderr).toBe(UNFINISHED);
    const [sheet] = readWorkbookIndependently(out);
    const header = sheet!.rows[0]!.map((c) => String(c.v ?? ''));
    const at = (name: string) => header.indexOf(name);
    expect(header.slice(-2)).toEqual(['dnc_time_zones', 'dnc_calling_window']);
    NUMBERS.forEach((n, i) => {
      const row = sheet!.rows[i + 1]!;
      expect(row[at('dnc_phone_e164')]!.v).toBe(n);
      expect([row[at('dnc_time_zones')]!.v, row[at('dnc_calling_window')]!.v], n).toEqual([...TABLE[n]!]);
    });
    const v = await runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir });
    expect(JSON.parse(v.stdout)).toMatchObject({ tampered: false, calling_unchecked: null });
  });
});

describe('the calling columns of a webhook batch', () => {
  it("listen's renders write them under the settings the batch recorded", async () => {
    const own = await sandbox({ allowInsecureWebhooks: true, timeScale: 0.01 });
    try {
      await listenedBatch({ ...own.env, ...scratchFolders(file.dir) });
    } finally {
      await own.sb.close();
    }
  });
});

async function listenedBatch(env: Record<string, string>): Promise<void> {
  {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}${PUSH_PATH}`;
    const numbers = ['+61291234568', '+12125550100', '+442079460102'];
    const input = write('hooks.csv', ['name,phone', ...numbers.map((n, i) => `h${i},${n}`)]);
    const out = path.join(file.dir, 'hooks.results.csv');
    const settings = settingsFile('acme3.json', POLICY);
    const b = await runDnc(
      [
        'batch',
        input,
        '-o',
        out,
        '--webhook-url',
        url,
        '--allow-insecure-webhook-url',
        '--webhook-all',
        '--calling-settings',
        settings,
      ],
      { env, homedir: file.dir, cwd: file.dir },
    );
    expect(b.code, b.stderr).toBe(8);
    expect(rowsOf(out).map((row) => row.dnc_result)).toEqual(['pending', 'pending', 'pending']);
    const events: string[] = [];
    // listen is given no settings: it renders with the journal's.
    const result = await runListenJob(
      { results: out, port, host: '127.0.0.1', path: PUSH_PATH, exitWhenDone: true, tls: undefined, skewMs: 300_000 },
      {
        env,
        homedir: file.dir,
        now: () => new Date(),
        tzdataVersion: process.versions.tz ?? 'unknown',
        // The local files; listen is given no key (its results cache is scoped by the account the batch recorded).
        stores: () => openStores({ url: null, from: 'the default' }, env, file.dir),
        serviceConfig: () => Promise.reject(new Error('no API key is configured')),
        interrupts: testInterrupts(),
        lockDeps: processLockDeps(),
        onEvent: (e) => events.push(e.type),
      },
    );
    expect(result.kind).toBe('done');
    expect(events).toContain('rendered');
    const rows = rowsOf(out);
    expect(rows.map((row) => row.dnc_result)).toEqual(['callable', 'callable', 'callable']);
    for (const row of rows) {
      expect([row.dnc_time_zones, row.dnc_calling_window], row.dnc_phone_e164).toEqual([
        TABLE[row.dnc_phone_e164!]![0],
        UNDER_POLICY[row.dnc_phone_e164!],
      ]);
    }
    // listen's manifest names the rules the batch recorded (the policy's fingerprint), and verify agrees.
    expect(manifestOf(out).calling_rules_version).toMatch(/ settings\/[0-9a-f]{12}$/);
    const v = await runDnc(['verify', out, '--json'], { env, homedir: file.dir, cwd: file.dir });
    expect(JSON.parse(v.stdout)).toMatchObject({ fit: true, calling_unchecked: null });
  }
}
