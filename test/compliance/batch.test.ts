// dnc batch with the internal list and exemptions: applied before any lookup, rendered, recorded in the manifest, honoured by verify.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { SuppressionStore } from '../../src/stores/suppression-store.js';
import { dnc, lookedUp, world, type World, sameMachine } from '../helpers/world.js';
import { readWorkbookIndependently, type OracleSheet } from '../helpers/xlsx-oracle.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const rows = (file: string) => parse(readFileSync(file), { columns: true }) as Array<Record<string, string>>;
const manifest = (file: string) => JSON.parse(readFileSync(file.replace(/\.csv$/, '.manifest.json'), 'utf8'));
const NOW = new Date();
const iso = (days: number) => new Date(NOW.getTime() + days * 86_400_000).toISOString().slice(0, 10);

describe('dnc batch with the internal list and exemptions', () => {
  it('internal list > exemption > register; suppressed numbers are never sent and cost nothing; the manifest hashes the list', async () => {
    w = await world();
    const env = w.env;
    // Sandbox: odd last digit = on a register. 0101 and 0104 suppressed; 0103 exempt; 0105 suppressed and exempt.
    await dnc(['suppress', 'add', '+12025550101', '+12025550104', '+12025550105', '--reason', 'opt-out'], env);
    await dnc(['exempt', 'add', '+12025550103', '--basis', 'consent', '--until', iso(10), '--evidence', 'form 7'], env);
    await dnc(['exempt', 'add', '+12025550105', '--basis', 'ebr-purchase', '--until', iso(10)], env);
    const input = w.file('calls.csv', [
      'name,phone',
      'a,+12025550100',
      'b,+12025550101',
      'c,+12025550103',
      'd,+12025550104',
      'e,+12025550105',
      'f,+1 202 555 0101',
    ]);
    const out = path.join(w.dir, 'calls.results.csv');
    const callable = path.join(w.dir, 'call-these.csv');
    const r = await dnc(
      [
        '--json',
        'batch',
        input,
        '-o',
        out,
        '--callable-out',
        callable,
        '--seller',
        'Acme <Solar>',
        '--san',
        'SAN-123',
        '--campaign',
        'Q4',
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(lookedUp(w.sb).sort()).toEqual(['+12025550100', '+12025550103']);
    expect(r.stderr).toContain('3 number(s) on the internal do-not-call list (do-not-call): do_not_call, not sent');
    expect(r.stderr).toContain('1 exempt number(s) are also on the internal list: the internal list wins');

    const got = rows(out);
    expect(Object.keys(got[0]!).slice(-4)).toEqual([
      'dnc_exemption',
      'dnc_valid_until',
      'dnc_time_zones',
      'dnc_calling_window',
    ]);
    const by = Object.fromEntries(got.map((x) => [x.name, x]));
    expect([by.a!.dnc_result, by.a!.dnc_exemption]).toEqual(['callable', '']);
    for (const k of ['b', 'd', 'e', 'f']) {
      expect([
        by[k]!.dnc_result,
        by[k]!.dnc_do_not_call,
        by[k]!.dnc_list_source,
        by[k]!.dnc_credits,
        by[k]!.dnc_correlation_id,
        by[k]!.dnc_exemption,
      ]).toEqual(['do_not_call', 'true', 'internal:do-not-call', '0', '', '']);
    }
    // The register verdict is kept; the exemption makes it callable.
    expect(by.c!.dnc_result).toBe('callable');
    expect(by.c!.dnc_do_not_call).toBe('true');
    expect(by.c!.dnc_list_source).toMatch(/^https?:/);
    expect(by.c!.dnc_exemption).toBe(`consent until ${iso(10)}T23:59:59.999Z`);
    // Each row's own valid-until: checked_at + 31 days for a US register verdict, the exemption's end when that is
    // sooner, and nothing for the internal list (no window). Computed here from the cells, apart from dnc's code.
    expect(by.a!.dnc_valid_until).toBe(new Date(Date.parse(by.a!.dnc_checked_at!) + 31 * 86_400_000).toISOString());
    expect(by.c!.dnc_valid_until).toBe(`${iso(10)}T23:59:59.999Z`);
    for (const k of ['b', 'd', 'e', 'f']) expect(by[k]!.dnc_valid_until).toBe('');
    expect(rows(callable).map((x) => x.name)).toEqual(['a', 'c']);
    expect(JSON.parse(r.stdout)).toMatchObject({ callable: 2, do_not_call: 4, credits_used: 2 });

    const m = manifest(out);
    const store = (await SuppressionStore.open(path.join(w.stateDir, 'do-not-call.sqlite'), { create: false }))!;
    const identity = await store.identity();
    await store.close();
    expect(m.compliance.list).toEqual(identity);
    // An oracle apart from dnc's code: the state hash recomputed from the SQLite file, and the audit head read from it.
    {
      const { default: Database } = await import('better-sqlite3');
      const { createHash } = await import('node:crypto');
      const db = new Database(path.join(w.stateDir, 'do-not-call.sqlite'), { readonly: true });
      const h = createHash('sha256');
      for (const r of db.prepare('SELECT e164 FROM suppressions ORDER BY e164').all() as Array<{ e164: string }>)
        h.update(`S ${r.e164}\n`);
      for (const r of db.prepare('SELECT e164, basis, until FROM exemptions ORDER BY e164').all() as Array<{
        e164: string;
        basis: string;
        until: string;
      }>)
        h.update(`E ${r.e164} ${r.basis} ${r.until}\n`);
      const head = db
        .prepare('SELECT hash, (SELECT COUNT(*) FROM audit) AS n FROM audit ORDER BY id DESC LIMIT 1')
        .get() as { hash: string; n: number };
      db.close();
      expect(m.compliance.list).toMatchObject({
        state_sha256: h.digest('hex'),
        audit_head: head.hash,
        audit_entries: 5,
        suppressions: 3,
        exemptions: 2,
        name: 'do-not-call',
      });
    }
    expect(m.compliance).toMatchObject({
      suppressed_numbers: 3,
      exempt_numbers: 1,
      overridden_exemption_numbers: 1,
      parties: { seller: 'Acme <Solar>', san: 'SAN-123', campaign: 'Q4' },
    });
    expect(m.validity.window_days).toMatchObject({ US: 31, CA: 31, GB: 28, AU: 30 });
    // The exemption ends before the 31-day US window does: it bounds the file's validity.
    expect(m.validity.valid_until).toBe(`${iso(10)}T23:59:59.999Z`);
    expect(m.validity.exemption_bound_rows).toBe(1);
    expect([m.validity.row_column, m.format.dnc_columns]).toEqual(['dnc_valid_until', 14]);
    expect(m.register_sources).toContain('internal:do-not-call');

    // A workbook of the same scrub (its verdicts reused: nothing sent): its Summary states the rows' own earliest valid-until (the exemption's end),
    // and the manifest's windows, read back by openpyxl (not by dnc's reader).
    const book = path.join(w.dir, 'book.xlsx');
    expect((await dnc(['batch', input, '-o', book, '--reuse-within', '1d'], env)).code).toBe(0);
    const [sheet, summary] = readWorkbookIndependently(book) as [OracleSheet, OracleSheet];
    const col = sheet.rows[0]!.findIndex((c) => c.v === 'dnc_valid_until');
    const earliest = Math.min(
      ...sheet.rows
        .slice(1)
        .filter((r) => r[sheet.rows[0]!.findIndex((c) => c.v === 'dnc_result')]!.v === 'callable')
        .map((r) => Date.parse(String(r[col]!.v))),
    );
    const said = (label: string) => summary.rows.find((r) => r[0]?.v === label)?.[1]?.v;
    expect(new Date(earliest).toISOString()).toBe(`${iso(10)}T23:59:59.999Z`);
    expect(said('callable rows valid until')).toBe(`${iso(10)}T23:59:59.999Z`);
    expect(String(said('validity window'))).toContain('31 days for US');

    // verify: fit now; not fit once the exemption has ended.
    expect((await dnc(['verify', out], sameMachine(w))).code).toBe(0);
    const after = await dnc(['verify', out, '--as-of', `${iso(11)}T00:00:00Z`], sameMachine(w));
    expect(after.code).toBe(3);
    expect(after.stdout).toContain('the exemption (consent until');

    // A change to the list changes its state hash; taking a number off the list gets it looked up on the next run.
    await dnc(['suppress', 'remove', '+12025550104'], env);
    const again = await dnc(['batch', input, '-o', out, '--callable-out', callable], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('1 number(s) taken off the internal list since the last run');
    expect(lookedUp(w.sb).sort()).toEqual(['+12025550100', '+12025550103', '+12025550104']);
    const m2 = manifest(out);
    expect(m2.compliance.list.state_sha256).not.toBe(identity.state_sha256);
    expect(m2.compliance.list.audit_entries).toBe(identity.audit_entries + 1);
    expect(rows(out).find((x) => x.name === 'd')!.dnc_result).toBe('callable');
    expect((await dnc(['verify', out], sameMachine(w))).code).toBe(0);
  });

  it('a suppression list named explicitly must exist: a mistyped path never scrubs against no list (nothing sent)', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100']);
    const missing = path.join(w.dir, 'tpyo.sqlite');
    const b = await dnc(['batch', input, '--suppression-list', missing], w.env);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('E_LIST_MISSING');
    const c = await dnc(['check', '+12025550100'], { ...w.env, DNC_SUPPRESSION_LIST: missing });
    expect(c.code).toBe(2);
    expect(lookedUp(w.sb)).toEqual([]);
  });

  it('a bare rerun keeps the list the batch was started with; a rerun against another list warns', async () => {
    w = await world();
    const team = path.join(w.dir, 'team.sqlite');
    await dnc(['suppress', 'add', '+12025550101', '--suppression-list', team], w.env);
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550101']);
    const out = path.join(w.dir, 'out.csv');
    // A budget of 0 stops the batch before its first lookup: the resume hint must keep the list.
    const stopped = await dnc(['batch', input, '-o', out, '--suppression-list', team, '--max-credits', '0'], w.env);
    expect(stopped.code).toBe(5);
    // The short resume command is enough: the journal remembers the list (and the budget, lifted here).
    expect(stopped.stderr).toMatch(/Resume .* with: dnc batch \S+ -o \S+ --max-credits <N\|none>\n/);
    const rerun = await dnc(['batch', input, '-o', out, '--max-credits', 'none'], w.env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(
      /Resuming with the options this batch was started with: --suppression-list \S+team\.sqlite/,
    );
    expect(lookedUp(w.sb)).toEqual(['+12025550100']);
    // Named on a rerun, another list is used, with a warning: the numbers only the old list held are looked up.
    const other = path.join(w.dir, 'other.sqlite');
    await dnc(['suppress', 'add', '+12025550199', '--suppression-list', other], w.env);
    const switched = await dnc(['batch', input, '-o', out, '--suppression-list', other], w.env);
    expect(switched.code, switched.stderr).toBe(0);
    expect(switched.stderr).toContain('this batch was scrubbed against the internal list team');
    expect(lookedUp(w.sb).sort()).toEqual(['+12025550100', '+12025550101']);
  });

  it('an expired exemption is ignored and reported; the register verdict stands', async () => {
    w = await world();
    const env = w.env;
    const then = () => new Date(NOW.getTime() - 30 * 86_400_000);
    await dnc(['exempt', 'add', '+12025550103', '--basis', 'consent', '--until', iso(-2)], env, { now: then });
    const input = w.file('calls.csv', ['name,phone', 'c,+12025550103']);
    const out = path.join(w.dir, 'out.csv');
    const r = await dnc(['batch', input, '-o', out], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('1 number(s) have an exemption that has expired: ignored');
    expect(rows(out).map((x) => [x.dnc_result, x.dnc_exemption])).toEqual([['do_not_call', '']]);
    expect(manifest(out).compliance.expired_exemption_numbers).toBe(1);
  });

  it('the state a scrub records is the one it applied, even when a colleague changes the list meanwhile', async () => {
    w = await world();
    const file = path.join(w.dir, 'team.sqlite');
    await dnc(['suppress', 'add', '+12025550101', '--suppression-list', file], w.env);
    const store = (await SuppressionStore.open(file, { create: false }))!;
    // A colleague's process writes between the snapshot's reads (no busy wait: refused at once if locked out).
    const { default: Database } = await import('better-sqlite3');
    const colleague = new Database(file, { timeout: 0 });
    let wrote: boolean | null = null;
    // (The snapshot reads through the store's own synchronous reader, inside its transaction.)
    const inside = store as unknown as { exemptionsNow: () => unknown };
    const exemptions = inside.exemptionsNow.bind(store);
    inside.exemptionsNow = () => {
      try {
        colleague
          .prepare(
            "INSERT INTO suppressions (e164, country, added_at, who) VALUES ('+12025550109', 'US', '2026-11-22T00:00:00.000Z', 'colleague@x')",
          )
          .run();
        wrote = true;
      } catch {
        wrote = false;
      }
      return exemptions();
    };
    const snap = await store.snapshot();
    colleague.close();
    await store.close();
    expect(wrote).toBe(false);
    // The hash recorded is that of the entries read (an oracle apart from identity()).
    const { createHash } = await import('node:crypto');
    const h = createHash('sha256');
    for (const x of snap.suppressions) h.update(`S ${x.e164}\n`);
    expect(snap.suppressions.map((x) => x.e164)).toEqual(['+12025550101']);
    expect(snap.identity.state_sha256).toBe(h.digest('hex'));
  });
});

describe('an exemption that ended before the verdict came (a late webhook push)', () => {
  it('does not make that verdict callable, in the render or in what verify expects', async () => {
    const { withExemption, effectiveResult } = await import('../../src/compliance/batch-compliance.js');
    const verdict = (checkedAt: string) => ({
      id: 1,
      state: 'done' as const,
      result: 'do_not_call',
      do_not_call: 1,
      list_source: 'https://sandbox.dnc.invalid/registers/AU',
      checked_at: checkedAt,
      correlation_id: 'c',
      error_code: null,
      error: null,
      credits: 1,
      exemption_basis: 'consent',
      exemption_until: '2026-11-23T23:59:59.999Z',
    });
    const cells = (v: ReturnType<typeof verdict>) =>
      withExemption(
        ['+61412345001', 'AU', 'do_not_call', 'true', v.list_source, v.checked_at, 'c', '', '', '1'],
        v as never,
      );
    // Made while the exemption held (to its last millisecond): callable, the exemption named.
    const held = verdict('2026-11-23T23:59:59.999000+00:00');
    expect(cells(held).slice(2, 3).concat(cells(held).slice(10))).toEqual([
      'callable',
      'consent until 2026-11-23T23:59:59.999Z',
    ]);
    expect(effectiveResult(held as never)).toBe('callable');
    // Made after it ended: the register's verdict stands.
    const late = verdict('2026-11-25T10:00:00.000000+00:00');
    expect(cells(late).slice(2, 3).concat(cells(late).slice(10))).toEqual(['do_not_call', '']);
    expect(effectiveResult(late as never)).toBe('do_not_call');
  });
});
