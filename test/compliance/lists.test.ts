// dnc suppress / dnc exempt: the list file, its audit log (append-only, hash-chained), imports refused by line, and `dnc check` applying them.
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { dnc, lookedUp, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const listFile = (w: World) => path.join(w.stateDir, 'do-not-call.sqlite');
const lines = (s: string) => s.trim().split('\n').filter(Boolean);
const T0 = new Date('2026-11-22T10:00:00Z');
const at = (iso: string) => () => new Date(iso);

describe('dnc suppress', () => {
  it('adds, counts, lists and removes numbers (normalised to E.164); the file is 0600 in a 0700 folder', async () => {
    w = await world();
    const env = { ...w.env, USER: 'alice' };
    const add = await dnc(
      [
        'suppress',
        'add',
        '+1 (202) 555-0143',
        '2025550144',
        '--country',
        'US',
        '--reason',
        'asked on a call',
        '--source',
        'agent 17',
      ],
      env,
      { now: () => T0 },
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stderr).toContain('2 number(s) added');
    expect(statSync(listFile(w)).mode & 0o777).toBe(0o600);
    expect(statSync(w.stateDir).mode & 0o777).toBe(0o700);
    // Loosened since (a restore from a backup, a umask): the default list is tightened again when opened.
    chmodSync(listFile(w), 0o644);
    // Adding again changes nothing and adds no audit entry.
    expect((await dnc(['suppress', 'add', '+12025550143'], env)).stderr).toContain('0 number(s) added, 1 already so');
    expect(statSync(listFile(w)).mode & 0o777).toBe(0o600);
    expect((await dnc(['suppress', 'count'], env)).stdout.trim()).toBe('2');
    const list = await dnc(['--json', 'suppress', 'list'], env);
    expect(lines(list.stdout).map((l) => JSON.parse(l))).toEqual([
      {
        phone: '+12025550143',
        country: 'US',
        added_at: T0.toISOString(),
        who: expect.stringMatching(/^alice@/),
        reason: 'asked on a call',
        source: 'agent 17',
      },
      {
        phone: '+12025550144',
        country: 'US',
        added_at: T0.toISOString(),
        who: expect.stringMatching(/^alice@/),
        reason: 'asked on a call',
        source: 'agent 17',
      },
    ]);
    expect(
      (
        await dnc(['suppress', 'remove', '+12025550144', '--reason', 'added by mistake'], env, {
          now: at('2026-11-23T00:00:00Z'),
        })
      ).code,
    ).toBe(0);
    expect((await dnc(['suppress', 'count'], env)).stdout.trim()).toBe('1');
    const log = await dnc(['--json', 'suppress', 'log'], env);
    expect(log.code).toBe(0);
    expect(
      lines(log.stdout)
        .map((l) => JSON.parse(l))
        .map((e) => [e.action, e.e164, e.reason]),
    ).toEqual([
      ['suppress', '+12025550143', 'asked on a call'],
      ['suppress', '+12025550144', 'asked on a call'],
      ['unsuppress', '+12025550144', 'added by mistake'],
    ]);
  });

  it('the audit log is append-only: the database refuses an update or a delete, and an entry edited around that breaks the hash chain', async () => {
    w = await world();
    await dnc(['suppress', 'add', '+12025550143', '+12025550145'], w.env);
    const db = new Database(listFile(w));
    expect(() => db.prepare('DELETE FROM audit').run()).toThrow(/append-only/);
    expect(() => db.prepare("UPDATE audit SET who = 'mallory@x'").run()).toThrow(/append-only/);
    // Someone who drops the trigger to rewrite history is found by the chain.
    db.exec("DROP TRIGGER audit_append_only_update; UPDATE audit SET reason = 'forged' WHERE id = 1");
    db.close();
    const log = await dnc(['suppress', 'log'], w.env);
    expect(log.code).toBe(3);
    expect(log.stderr).toContain('entry 1 does not match the hash chain');
  });

  it("entries changed behind dnc's back (the log untouched) are found: log exits 3, check, batch and verify refuse, nothing is sent", async () => {
    w = await world();
    await dnc(['suppress', 'add', '+12025550143', '+12025550145'], w.env);
    await dnc(['exempt', 'add', '+12025550147', '--basis', 'consent', '--until', '2099-01-01'], w.env);
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550143', 'b,+12025550100']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    const sent = lookedUp(w.sb);
    // The triggers guard the log, not the entries: an opt-out deleted with the sqlite3 shell leaves no trace there.
    let db = new Database(listFile(w));
    db.exec("DELETE FROM suppressions WHERE e164 = '+12025550143'");
    db.close();
    const log = await dnc(['suppress', 'log'], w.env);
    expect(log.code).toBe(3);
    expect(log.stderr).toContain('+12025550143 is not on the list, but no audit entry took it off');
    for (const argv of [
      ['check', '+12025550143'],
      ['batch', input, '-o', out],
      ['verify', out],
    ]) {
      const r = await dnc(argv, w.env);
      expect(r.code, argv[0]).toBe(3);
      expect(r.stderr, argv[0]).toContain('E_LIST_ALTERED');
    }
    expect(lookedUp(w.sb)).toEqual(sent);
    // verify says what the alteration means for it (it sends nothing anyway).
    expect((await dnc(['verify', out], w.env)).stderr).toContain('no results file can be judged fit against it');
    // Its entries are not listed, counted or exported as if the log vouched for them; the log still reads.
    for (const argv of [
      ['suppress', 'list'],
      ['suppress', 'count'],
      ['suppress', 'export'],
      ['exempt', 'list'],
      ['exempt', 'export'],
    ]) {
      const r = await dnc(argv, w.env);
      expect(r.code, argv.join(' ')).toBe(3);
      expect(r.stderr, argv.join(' ')).toContain('its entries are not shown or exported');
      expect(r.stdout, argv.join(' ')).toBe('');
    }
    // `dnc check` verifies the whole list, as batch does: another number's check is refused too (a list
    // altered anywhere vouches for nothing).
    expect((await dnc(['check', '+12025550100'], w.env)).code).toBe(3);
    // An exemption's end moved by hand is found too.
    db = new Database(listFile(w));
    db.exec(
      "INSERT INTO suppressions (e164, country, added_at, who) VALUES ('+12025550143', 'US', '2026-01-01T00:00:00.000Z', 'x'); UPDATE exemptions SET until = '2199-01-01T23:59:59.999Z'",
    );
    db.close();
    const log2 = await dnc(['suppress', 'log'], w.env);
    expect(log2.code).toBe(3);
    expect(log2.stderr).toContain(
      '+12025550147 is exempt as consent until 2199-01-01T23:59:59.999Z, but its audit entry says consent until 2099-01-01T23:59:59.999Z',
    );
    const moved = await dnc(['check', '+12025550147'], w.env);
    expect(moved.code).toBe(3);
    expect(moved.stderr).toContain(
      '+12025550147 is exempt as consent until 2199-01-01T23:59:59.999Z, but its audit entry says',
    );
    // The report is written, says the list is ALTERED and quotes nothing from it; it exits 3: the file is not fit.
    const report = path.join(w.dir, 'r.html');
    expect((await dnc(['report', out, '-o', report, '--include-numbers'], w.env)).code).toBe(3);
    expect(readFileSync(report, 'utf8')).toContain(
      'its entries were altered outside dnc: +12025550147 is exempt as consent until 2199',
    );
  });

  it('import refuses a file with bad rows, naming file, line and value, and changes nothing; a good file is imported with its source', async () => {
    w = await world();
    const bad = w.file('optouts.csv', ['name,Phone', 'a,+12025550143', 'b,not a number', 'c,+1202', 'd,020 7946 0123']);
    const r = await dnc(['suppress', 'import', bad], w.env);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${bad}: line 3: "not a number"`);
    expect(r.stderr).toContain(`${bad}: line 4: "+1202"`);
    expect(r.stderr).toContain(`${bad}: line 5: "020 7946 0123"`);
    expect(r.stderr).toContain('nothing was changed');
    expect((await dnc(['suppress', 'count'], w.env)).stdout.trim()).toBe('0');

    const good = w.file('good.csv', ['name;tel', 'a;+12025550143', 'b;020 7946 0123']);
    const ok = await dnc(['suppress', 'import', good, '--country', 'GB'], w.env);
    expect(ok.code, ok.stderr).toBe(0);
    const exported = await dnc(['suppress', 'export'], w.env);
    const rows = lines(exported.stdout);
    expect(rows[0]).toBe('phone,country,added_at,who,reason,source');
    expect(rows.slice(1).map((l) => l.split(',')[0])).toEqual(['+12025550143', '+442079460123']);
    expect(rows[1]).toContain('import good.csv');
  });

  it('import refuses a malformed CSV file with E_CSV_MALFORMED (exit 3), naming its line, and changes nothing', async () => {
    w = await world();
    const stray = w.file('stray.csv', ['name,phone', 'a,+12025550143', 'The "Best" Co,+12025550144']);
    const r = await dnc(['suppress', 'import', stray], w.env);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(`dnc: error [E_CSV_MALFORMED]: ${stray}: line 3: a stray " inside a field`);
    expect(r.stderr).toContain('nothing was changed');
    const ragged = w.file('ragged.csv', [
      'phone,basis,until',
      '+12025550143,consent,2199-01-01',
      '+12025550144,consent,2199-01-01,x',
    ]);
    const e = await dnc(['exempt', 'import', ragged], w.env);
    expect(e.code, e.stderr).toBe(3);
    expect(e.stderr).toContain(`dnc: error [E_CSV_MALFORMED]: ${ragged}: line 3`);
    expect((await dnc(['suppress', 'count'], w.env)).stdout.trim()).toBe('0');
    expect((await dnc(['exempt', 'list'], w.env)).stdout.trim().split('\n')).toHaveLength(1);
  });

  it('imports an .xlsx list as Excel shows it (a number formatted as text keeps its +), naming bad rows by their Excel row', async () => {
    w = await world();
    const { default: ExcelJS } = await import('exceljs');
    const make = async (name: string, rows: Array<Array<string | number>>) => {
      const book = new ExcelJS.Workbook();
      const sheet = book.addWorksheet('Opt-outs');
      for (const r of rows) sheet.addRow(r);
      const file = path.join(w!.dir, name);
      await book.xlsx.writeFile(file);
      return file;
    };
    const bad = await make('bad.xlsx', [
      ['name', 'phone'],
      ['a', '+12025550143'],
      ['b', 'not a number'],
    ]);
    const r = await dnc(['suppress', 'import', bad], w.env);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('line 3: "not a number"');
    expect((await dnc(['suppress', 'count'], w.env)).stdout.trim()).toBe('0');
    const good = await make('good.xlsx', [['name', 'phone'], ['a', '+12025550143'], [], ['b', '020 7946 0123']]);
    const ok = await dnc(['suppress', 'import', good, '--country', 'GB'], w.env);
    expect(ok.code, ok.stderr).toBe(0);
    const rows = lines((await dnc(['suppress', 'export'], w.env)).stdout);
    expect(rows.slice(1).map((l) => l.split(',')[0])).toEqual(['+12025550143', '+442079460123']);
  });

  it('export cells cannot run as spreadsheet formulas, and the export round-trips through import into another list', async () => {
    w = await world();
    await dnc(['suppress', 'add', '+12025550143', '--reason', '=HYPERLINK("http://evil")', '--source', '@cmd'], w.env);
    const out = path.join(w.dir, 'out.csv');
    expect((await dnc(['suppress', 'export', '-o', out], w.env)).code).toBe(0);
    const text = readFileSync(out, 'utf8');
    expect(text).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(text).toContain(`'@cmd`);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const other = path.join(w.dir, 'shared', 'team.sqlite');
    const missing = await dnc(['suppress', 'import', out, '--suppression-list', other], w.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(path.dirname(other));
    expect((await dnc(['suppress', 'import', out, '--suppression-list', other], w.env)).code).toBe(0);
    expect((await dnc(['suppress', 'count', '--suppression-list', other], w.env)).stdout.trim()).toBe('1');
    // DNC_SUPPRESSION_LIST and the config file name the same list.
    expect((await dnc(['suppress', 'count'], { ...w.env, DNC_SUPPRESSION_LIST: other })).stdout.trim()).toBe('1');
    const cfg = w.file('config.json', [JSON.stringify({ suppression_list: other })]);
    expect((await dnc(['--config', cfg, 'suppress', 'count'], w.env)).stdout.trim()).toBe('1');
  });

  it('lists are read and written by the one table reader and writer: UTF-16 and semicolons read, a formula behind spaces escaped', async () => {
    w = await world();
    // Excel's "Unicode text" is UTF-16LE with a byte-order mark; the shared reader knows it (the lists' own parser did not).
    const utf16 = path.join(w.dir, 'opt-outs.csv');
    writeFileSync(
      utf16,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('name;phone\r\nAnn;+12025550143\r\n', 'utf16le')]),
    );
    const imported = await dnc(['suppress', 'import', utf16], w.env);
    expect(imported.code, imported.stderr).toBe(0);
    await dnc(['suppress', 'add', '+12025550144', '--reason', ' =1+1'], w.env);
    const out = path.join(w.dir, 'out.csv');
    expect((await dnc(['suppress', 'export', '-o', out], w.env)).code).toBe(0);
    // Python's csv module, another reader: the E.164 numbers are data, the reason behind spaces escaped.
    const { readCsvIndependently } = await import('../helpers/csv-oracle.js');
    const rows = readCsvIndependently(out);
    expect(rows.slice(1).map((r) => [r[0], r[4]])).toEqual([
      ['+12025550143', ''],
      ['+12025550144', "' =1+1"],
    ]);
  });

  it('a file that is not a list is refused with exit 3', async () => {
    w = await world();
    const junk = w.file('junk.sqlite', ['this is not sqlite']);
    chmodSync(junk, 0o600);
    const r = await dnc(['suppress', 'count', '--suppression-list', junk], w.env);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('E_LIST_UNREADABLE');
  });
});

describe('dnc exempt', () => {
  it('adds with basis and expiry, lists expired ones as such, refuses bad input, and shares the audit log', async () => {
    w = await world();
    const now = () => T0;
    const add = await dnc(
      ['exempt', 'add', '+12025550143', '--basis', 'consent', '--until', '2026-12-31', '--evidence', 'form #4411'],
      w.env,
      { now },
    );
    expect(add.code, add.stderr).toBe(0);
    expect(
      (await dnc(['exempt', 'add', '+12025550145', '--basis', 'ebr-purchase', '--until', '2026-11-30'], w.env, { now }))
        .code,
    ).toBe(0);
    expect(
      (await dnc(['exempt', 'add', '+12025550145', '--basis', 'friendship', '--until', '2026-12-01'], w.env, { now }))
        .code,
    ).toBe(2);
    expect(
      (await dnc(['exempt', 'add', '+12025550145', '--basis', 'consent', '--until', '31/12/2026'], w.env, { now }))
        .code,
    ).toBe(2);
    expect(
      (await dnc(['exempt', 'add', '+12025550145', '--basis', 'consent', '--until', '2026-11-01'], w.env, { now }))
        .stderr,
    ).toContain('in the past');
    const later = await dnc(['--json', 'exempt', 'list'], w.env, { now: at('2026-12-01T00:00:00Z') });
    expect(
      lines(later.stdout)
        .map((l) => JSON.parse(l))
        .map((x) => [x.phone, x.basis, x.until, x.valid]),
    ).toEqual([
      ['+12025550143', 'consent', '2026-12-31T23:59:59.999Z', true],
      ['+12025550145', 'ebr-purchase', '2026-11-30T23:59:59.999Z', false],
    ]);
    expect(later.stderr).toContain('1 exemption(s) have expired and are ignored');
    const imp = w.file('consents.csv', [
      'phone,basis,until,evidence',
      '+12025550147,consent,2027-01-01,crm 1',
      '+12025550149,ebr,2027-01-01,',
      '+12025550151,consent,tomorrow,',
    ]);
    const bad = await dnc(['exempt', 'import', imp], w.env, { now });
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/line 3: basis "ebr" is not a basis/);
    expect(bad.stderr).toMatch(/line 4: until "tomorrow" is not a date/);
    writeFileSync(imp, 'phone,basis,until,evidence\n+12025550147,consent,2027-01-01,crm 1\n');
    expect((await dnc(['exempt', 'import', imp], w.env, { now })).code).toBe(0);
    expect((await dnc(['exempt', 'remove', '+12025550145'], w.env, { now })).code).toBe(0);
    const log = await dnc(['--json', 'suppress', 'log'], w.env);
    expect(lines(log.stdout).map((l) => JSON.parse(l).action)).toEqual(['exempt', 'exempt', 'exempt', 'unexempt']);
  });
});

describe('dnc check with the internal list and exemptions', () => {
  it('precedence: internal list > exemption > register; a suppressed number never reaches the service', async () => {
    w = await world();
    const now = () => T0;
    // 0143: on the register (odd), suppressed and exempt: the internal list wins, nothing sent.
    // 0145: on the register, exempt: looked up, then callable. 0147: on the register, exemption expired.
    await dnc(['suppress', 'add', '+12025550143'], w.env, { now });
    const both = await dnc(['exempt', 'add', '+12025550143', '--basis', 'consent', '--until', '2027-01-01'], w.env, {
      now,
    });
    expect(both.stderr).toContain('is on the internal do-not-call list, which wins over any exemption');
    await dnc(
      ['exempt', 'add', '+12025550145', '--basis', 'ebr-inquiry', '--until', '2027-01-01', '--evidence', 'ticket 9'],
      w.env,
      { now },
    );
    await dnc(['exempt', 'add', '+12025550147', '--basis', 'consent', '--until', '2026-11-25'], w.env, { now });
    const r = await dnc(['--json', 'check', '+12025550143', '+12025550145', '+12025550147', '--fail-on-dnc'], w.env, {
      now: at('2026-12-01T00:00:00Z'),
    });
    expect(lookedUp(w.sb)).toEqual(['+12025550145', '+12025550147']);
    const out = lines(r.stdout).map((l) => JSON.parse(l));
    expect(out[0]).toMatchObject({
      phone_number: '+12025550143',
      do_not_call: true,
      dnc_list_source: 'internal:do-not-call',
      credit_cost: 0,
      http_status: null,
    });
    expect(out[1]).toMatchObject({
      phone_number: '+12025550145',
      do_not_call: true,
      callable: true,
      dnc_exemption: { basis: 'ebr-inquiry', until: '2027-01-01T23:59:59.999Z', evidence: 'ticket 9' },
    });
    expect(out[1].dnc_list_source).toMatch(/^https?:/);
    expect(out[2]).toMatchObject({
      phone_number: '+12025550147',
      do_not_call: true,
      dnc_exemption_expired: { basis: 'consent' },
    });
    expect(out[2].callable).toBeUndefined();
    expect(r.stderr).toContain('expired 2026-11-25T23:59:59.999Z and was ignored');
    expect(r.code).toBe(10);

    // Human output; an exempt number alone does not fail --fail-on-dnc.
    const human = await dnc(['check', '+12025550145', '--fail-on-dnc'], w.env, { now });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(
      '→ CALLABLE      exempt: ebr-inquiry until 2027-01-01T23:59:59.999Z (evidence: ticket 9)',
    );
    const sup = await dnc(['check', '+1 202 555 0143'], w.env, { now });
    expect(sup.code).toBe(0);
    expect(sup.stdout).toContain('on the internal do-not-call list');
    expect(lookedUp(w.sb)).not.toContain('+12025550143');

    // A register verdict reused with --reuse-within is exempted as a fresh one is (and an ended exemption reported).
    const sent = lookedUp(w.sb).length;
    const reused = await dnc(
      ['check', '+12025550143', '+12025550145', '+12025550147', '--reuse-within', '30d', '--fail-on-dnc'],
      w.env,
      { now: at('2026-12-01T00:00:00Z') },
    );
    expect(lookedUp(w.sb).length).toBe(sent);
    expect(reused.stdout).toContain('on the US do-not-call register (reused)');
    expect(reused.stdout).toContain(
      '  → CALLABLE      exempt: ebr-inquiry until 2027-01-01T23:59:59.999Z (evidence: ticket 9)',
    );
    expect(reused.stdout).toMatch(
      /\n {2}exemption {7}consent until 2026-11-25T23:59:59\.999Z has EXPIRED and was ignored/,
    );
    expect(reused.stderr).toContain('expired 2026-11-25T23:59:59.999Z and was ignored');
    // The summary tells the user's own list from the register.
    expect(reused.stderr).toContain(
      '3 numbers: 1 callable, 1 on a register, 1 on the internal list; 0 credit(s) charged',
    );
    expect(reused.code).toBe(10);
    const reusedOne = await dnc(['--json', 'check', '+12025550145', '--reuse-within', '30d', '--fail-on-dnc'], w.env, {
      now: at('2026-12-01T00:00:00Z'),
    });
    expect(reusedOne.code).toBe(0);
    expect(JSON.parse(reusedOne.stdout)).toMatchObject({
      reused: true,
      do_not_call: true,
      callable: true,
      dnc_exemption: { basis: 'ebr-inquiry' },
    });

    // An AU number on the internal list needs no --webhook-url: it is never sent.
    await dnc(['suppress', 'add', '+61412345603'], w.env);
    const au = await dnc(['check', '+61412345603', '+61412345605'], w.env);
    expect(au.code).toBe(2);
    expect(au.stderr).toContain('+61 412 345 605 is an AU number');
    expect(au.stderr).not.toContain('+61 412 345 603');
    const auOnly = await dnc(['check', '+61412345603', '--fail-on-dnc'], w.env);
    expect(auOnly.code).toBe(10);
    expect(auOnly.stdout).toContain('on the internal do-not-call list');
    expect(lookedUp(w.sb).filter((n) => n.startsWith('+61'))).toEqual([]);
  });
});

describe('exempt --basis', () => {
  it('offers, in help and completion, exactly the bases the store accepts', async () => {
    const { BASES } = await import('../../src/commands/exempt.js');
    const { EXEMPTION_BASES } = await import('../../src/stores/suppression-types.js');
    expect([...BASES]).toEqual([...EXEMPTION_BASES]);
  });
});

describe('a list another process keeps locked', () => {
  it('is a typed error (E_LIST_BUSY, exit 3) once the busy timeout has passed, and nothing is changed', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const { SuppressionStore } = await import('../../src/stores/suppression-store.js');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-busy-'));
    const file = path.join(dir, 'list.sqlite');
    try {
      const store = (await SuppressionStore.open(file, { create: true, busyTimeoutMs: 200 }))!;
      const actor = { who: 'alice@test', reason: null, source: null };
      await store.suppress([{ e164: '+12025550143', country: 'US' }], actor, T0);
      // Another program holds the write lock (as a long import, or a sqlite3 shell in a transaction, would).
      const other = new Database(file);
      other.exec('BEGIN IMMEDIATE');
      try {
        let err: unknown;
        try {
          await store.suppress([{ e164: '+12025550145', country: 'US' }], actor, T0);
        } catch (e) {
          err = e;
        }
        expect(err).toMatchObject({ code: 'E_LIST_BUSY', exitCode: 3 });
        expect(String((err as Error).message)).toContain('nothing was changed');
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect(await store.suppression('+12025550145')).toBeNull();
      expect(await store.suppression('+12025550143')).not.toBeNull();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('verify and report against the list a scrub recorded', () => {
  it('leave a shared list and its folder with the modes its team gave them; the default list behind a link is not chmod-ed through it', async () => {
    const { mkdirSync, symlinkSync, lstatSync } = await import('node:fs');
    w = await world();
    const team = path.join(w.dir, 'team');
    mkdirSync(team);
    chmodSync(team, 0o775);
    const shared = path.join(team, 'shared.sqlite');
    expect((await dnc(['suppress', 'add', '+12025550143', '--suppression-list', shared], w.env)).code).toBe(0);
    chmodSync(shared, 0o664);
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550143']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out, '--suppression-list', shared], w.env)).code).toBe(0);
    expect((await dnc(['verify', out], w.env)).code).toBe(0);
    expect((await dnc(['report', out, '-o', path.join(w.dir, 'r.html')], w.env)).code).toBe(0);
    expect([statSync(team).mode & 0o777, statSync(shared).mode & 0o777]).toEqual([0o775, 0o664]);
    // The default path made a link to the shared list: reading through it changes nothing of the target.
    mkdirSync(w.stateDir, { recursive: true });
    symlinkSync(shared, listFile(w));
    expect((await dnc(['suppress', 'count'], w.env)).stdout.trim()).toBe('1');
    expect(lstatSync(listFile(w)).isSymbolicLink()).toBe(true);
    expect(statSync(shared).mode & 0o777).toBe(0o664);
  });

  it('verify refuses (E_LIST_BUSY, exit 3) rather than judging rows fit without a list another process keeps locked', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    // Added after the scrub: verify must find the row not fit, or say it could not look.
    expect((await dnc(['suppress', 'add', '+12025550100'], w.env)).code).toBe(0);
    const other = new Database(listFile(w));
    other.exec('BEGIN EXCLUSIVE');
    try {
      const r = await dnc(['verify', out], w.env);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('E_LIST_BUSY');
      expect(r.stdout).not.toContain('fit to dial');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    const after = await dnc(['verify', out], w.env);
    expect(after.code).toBe(3);
    expect(after.stdout).toContain('suppressed');
  }, 60_000);
});
