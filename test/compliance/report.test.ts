// dnc report: one self-contained HTML file, hostile input escaped, rendered in headless Chromium with no console error and no request.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { REPO_ROOT } from '../helpers/cli.js';
import { dnc, world, type World, sameMachine } from '../helpers/world.js';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';

// Runs in the browser page (Playwright's evaluate), where the DOM's getComputedStyle exists.
declare const getComputedStyle: (element: unknown) => { gridTemplateColumns: string };

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const HOSTILE_CELL = '"><img src=x onerror="alert(1)"><script>alert(2)</script>';
const HOSTILE_SELLER = 'Acme </title><script>alert(3)</script>';

/** A scrub with hostile cells, a hostile seller and a hostile file name, using the internal list and an exemption. */
async function scrub(w: World): Promise<string> {
  // A list whose file name is markup: its name becomes a plain token, its path is escaped.
  const list = ['--suppression-list', path.join(w.dir, 'team<b onmouseover=alert(4)>.sqlite')];
  expect((await dnc(['suppress', 'add', '+12025550101', '--source', '<b>web</b>', ...list], w.env)).code).toBe(0);
  await dnc(
    [
      'exempt',
      'add',
      '+12025550103',
      '--basis',
      'consent',
      '--until',
      '2099-12-31',
      '--evidence',
      '<i>form</i>',
      ...list,
    ],
    w.env,
  );
  // 0101 is exempt too, after its opt-out (the list overrides that); 0105's exemption ended before the scrub.
  await dnc(['exempt', 'add', '+12025550101', '--basis', 'ebr-purchase', '--until', '2099-06-30', ...list], w.env);
  const ended = w.file('ended.csv', ['phone,basis,until,evidence', '+12025550105,consent,2020-01-31,old form']);
  expect((await dnc(['exempt', 'import', ended, ...list], w.env)).code).toBe(0);
  const input = w.file('leads <img src=x>.csv', [
    'name,phone',
    `"${HOSTILE_CELL.replace(/"/g, '""')}",+12025550100`,
    'b,+12025550101',
    'c,+12025550103',
    'c2,+12025550105',
    'd,+442079460122',
    'e,+442079460123',
    'f,+4930123456',
    'g,nope',
  ]);
  const out = path.join(w.dir, 'leads <img src=x>.results.csv');
  const r = await dnc(
    ['batch', input, '-o', out, '--seller', HOSTILE_SELLER, '--san', 'SAN-1', '--campaign', "Q4 'x'\u200F", ...list],
    { ...w.env, USER: 'Agency \u202Ed.tL' },
  );
  expect(r.code, r.stderr).toBe(0);
  return out;
}

describe('dnc report', () => {
  it('writes one self-contained file: hostile cells, names and paths escaped; no script, no external reference; numbers only when asked', async () => {
    w = await world();
    const out = await scrub(w);
    const report = path.join(w.dir, 'report.html');
    const r = await dnc(['report', out, '-o', report], w.env);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(report).mode & 0o777).toBe(0o600);
    const html = readFileSync(report, 'utf8');
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<img/i);
    // Every "<" from outside is escaped, so any tag is the report's own: none of them loads anything.
    expect(html).not.toMatch(/<[^>]*\b(src|href)\s*=/i);
    expect(html).not.toMatch(/url\(/i);
    expect(html).toContain("default-src 'none'");
    expect(html).toContain('Acme &lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;');
    expect(html).toContain('leads &lt;img src=x&gt;.results.csv');
    expect(html).toContain('Q4 &#39;x&#39;\uFFFD');
    // A bidirectional override cannot reorder what the auditor reads.
    expect(html).toContain('Agency \uFFFDd.tL');
    expect(html).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    // Without --include-numbers, no number appears.
    for (const n of ['+12025550100', '+12025550101', '+12025550103', '+442079460122']) expect(html).not.toContain(n);
    expect(html).toContain('internal:team_b_onmouseover_alert_4_');
    expect(html).toContain('team&lt;b onmouseover=alert(4)&gt;.sqlite');
    expect(html).toMatch(/Callable by exemption: <strong>consent<\/strong>/);

    const withNumbers = path.join(w.dir, 'with-numbers.html');
    expect((await dnc(['report', out, '-o', withNumbers, '--include-numbers'], w.env)).code).toBe(0);
    const full = readFileSync(withNumbers, 'utf8');
    for (const n of ['+12025550100', '+12025550101', '+12025550103', '+442079460122']) expect(full).toContain(n);
    expect(full).not.toMatch(/<script|<img/i);
    // Why each number was suppressed or exempt, from the list's audit log, escaped.
    expect(full).toMatch(/added \S+ \S+ UTC by [^<]+@[^<]+ \(&lt;b&gt;web&lt;\/b&gt;\)/);
    expect(full).toMatch(/exempted \S+ \S+ UTC by [^<]+ \[evidence: &lt;i&gt;form&lt;\/i&gt;\]/);
    expect(full).toContain('<td>consent until 2099-12-31</td>');
    expect(full).toMatch(/intact<\/span>: the state recorded at scrub time is entry 4 of 4/);
    // A row's reason is the entry that decided it: 0101 is do_not_call for its opt-out, not for its later (overridden) exemption.
    const row = (n: string) =>
      full.match(new RegExp(`<tr><td class="n">\\d+</td><td class="num">\\${n}</td>.*?</tr>`))?.[0] ?? '';
    expect(row('+12025550101')).toMatch(
      /<td>added \S+ \S+ UTC by [^<]+ \(&lt;b&gt;web&lt;\/b&gt;\); its exemption \(ebr-purchase until 2099-06-30\) is overridden: an opt-out revokes consent<\/td><\/tr>$/,
    );
    expect(row('+12025550103')).toMatch(
      /<td>exempted \S+ \S+ UTC by [^<]+ \[evidence: &lt;i&gt;form&lt;\/i&gt;\]<\/td><\/tr>$/,
    );
    // An exemption that had ended is reported on its row, and did not make it callable.
    expect(row('+12025550105')).toContain('Do not call');
    expect(row('+12025550105')).toMatch(
      /<td>exemption consent until 2020-01-31 had expired: ignored \(exempted \S+ \S+ UTC by [^<]+ \(import ended\.csv\) \[evidence: old form\]\)<\/td><\/tr>$/,
    );

    // The list's history altered after the scrub: the report says so, and no longer quotes it.
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(path.join(w.dir, 'team<b onmouseover=alert(4)>.sqlite'));
    db.exec("DROP TRIGGER audit_append_only_update; UPDATE audit SET reason = 'forged' WHERE id = 1");
    db.close();
    // Written all the same (the auditor should see it), and the exit status says the file is not fit: its list is altered.
    expect((await dnc(['report', out, '-o', withNumbers, '--include-numbers'], w.env)).code).toBe(3);
    const altered = readFileSync(withNumbers, 'utf8');
    expect(altered).toContain('ALTERED</span>: audit entry 1 was altered outside dnc');
    expect(altered).not.toContain('forged');
  });

  it('refuses to overwrite the results or manifest, and needs a manifest', async () => {
    w = await world();
    const out = await scrub(w);
    expect((await dnc(['report', out, '-o', out], w.env)).code).toBe(2);
    expect((await dnc(['report', out, '-o', out.replace(/\.csv$/, '.manifest.json')], w.env)).code).toBe(2);
    const lone = w.file('lone.csv', ['a,b']);
    const r = await dnc(['report', lone], w.env);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('E_NO_MANIFEST');
  });

  it('says so when the results file changed after the scrub', async () => {
    w = await world();
    const out = await scrub(w);
    writeFileSync(out, readFileSync(out, 'utf8').replace('do_not_call', 'callable'));
    const report = path.join(w.dir, 'r.html');
    const r = await dnc(['report', out, '-o', report], w.env);
    // Written, and exit 3: the file is not fit to dial (issue 38: it exited 0).
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('changed after dnc wrote it');
    expect(r.stderr).toContain('is not fit to dial: the file is not what dnc wrote');
    expect(readFileSync(report, 'utf8')).toContain('the file does NOT match its manifest');
  });

  it('reads manifests written before compliance and validity were recorded (10 dnc_* columns)', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+442079460123']);
    const out = path.join(w.dir, 'calls.results.csv');
    expect((await dnc(['batch', input, '-o', out], w.env)).code).toBe(0);
    // Rewrite the output and manifest as an earlier dnc wrote them: no dnc_exemption, dnc_valid_until or calling column,
    // no compliance, no validity, no calling rules.
    const text = readFileSync(out, 'utf8')
      .split('\n')
      .map((l) => l.replace(/(,[^,]*){4}$/, ''))
      .join('\n');
    let m: Record<string, any> = {};
    rewriteOutputAndManifest(
      out,
      text,
      (manifest) => {
        delete manifest.compliance;
        delete manifest.validity;
        delete manifest.format.dnc_columns;
        delete manifest.calling_rules_version;
        m = manifest;
      },
      w.stateDir,
    );
    const report = path.join(w.dir, 'old.html');
    const r = await dnc(['report', out, '-o', report], w.env);
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('made before dnc recorded internal lists');
    expect(html).toContain('the file matches its manifest');
    expect(html).toMatch(/pill ok">Valid until/);
    // status judges it with the shortest window (28 days) from its oldest verdict.
    const st = await dnc(['--json', 'status', out], sameMachine(w!));
    expect(st.code).toBe(0);
    const oldest = Date.parse(m.checked_at.oldest.replace(/(\.\d{3})\d+/, '$1'));
    expect(JSON.parse(st.stdout).files[0].valid_until).toBe(new Date(oldest + 28 * 86_400_000).toISOString());
    expect((await dnc(['verify', out], w.env)).code).toBe(0);
  });

  it('renders in headless Chromium: no console error, no dialog, no request but the page, both charts drawn; screenshot under .tmp/', async () => {
    w = await world();
    const out = await scrub(w);
    const report = path.join(w.dir, 'report.html');
    expect((await dnc(['report', out, '-o', report, '--include-numbers'], w.env)).code).toBe(0);
    const profile = mkdtempSync(path.join(os.tmpdir(), 'dnc-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1100, height: 900 },
    });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      const requests: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('dialog', (d) => {
        problems.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      page.on('request', (req) => requests.push(req.url()));
      await page.goto(`file://${report}`, { waitUntil: 'load' });
      expect(problems).toEqual([]);
      expect(requests).toEqual([`file://${encodeURI(report).replace(/#/g, '%23')}`]);
      expect(await page.locator('svg.chart').count()).toBe(2);
      expect(await page.locator('svg.chart rect').count()).toBeGreaterThanOrEqual(6);
      expect(await page.locator('h1').textContent()).toBe('Do-not-call scrub report');
      expect(await page.title()).toContain('leads <img src=x>.results.csv');
      const dir = path.join(REPO_ROOT, '.tmp');
      mkdirSync(dir, { recursive: true });
      const shot = path.join(dir, 'report-chromium.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(20_000);
      // Printing to PDF (what an auditor does) works too.
      const pdf = await page.pdf({ format: 'A4' });
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
      // On A4 paper (182 mm between the margins, under 700 CSS px) the page keeps its two columns:
      // the narrow-screen layout would stack every pair and leave half of each page blank.
      await page.setViewportSize({ width: 688, height: 1040 });
      await page.emulateMedia({ media: 'print' });
      expect(
        await page
          .locator('.cols')
          .first()
          .evaluate((e) => getComputedStyle(e).gridTemplateColumns.split(' ').length),
      ).toBe(2);
      expect(
        await page.locator('.cards').evaluate((e) => getComputedStyle(e).gridTemplateColumns.split(' ').length),
      ).toBe(6);
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 60_000);
});

/** The PNG's width and height (its IHDR chunk). */
const pngSize = (file: string) => {
  const b = readFileSync(file);
  expect(b.subarray(1, 4).toString()).toBe('PNG');
  return [b.readUInt32BE(16), b.readUInt32BE(20)];
};

describe("the README's screenshot", () => {
  it("is this test's rendering of a realistic scrub (DOCS_UPDATE=1 writes it to docs/report-screenshot.png)", async () => {
    w = await world();
    const env = { ...w.env, USER: 'alice' };
    const day = 86_400_000;
    const date = (days: number) => new Date(Date.now() + days * day).toISOString().slice(0, 10);
    // 122 rows: US, GB and DE numbers (some on a register, some twice), FR (not covered) and two that are no numbers.
    const us = Array.from({ length: 70 }, (_, i) => `+1202555${String(100 + i).padStart(4, '0')}`);
    const gb = Array.from({ length: 25 }, (_, i) => `+4420794600${String(10 + i)}`);
    const de = Array.from({ length: 8 }, (_, i) => `+4930123456${i}`);
    const fr = Array.from({ length: 5 }, (_, i) => `+3361234567${i}`);
    const phones = [...us, ...gb, ...de, ...fr, 'n/a', '12', us[0]!, us[1]!, gb[0]!, ...us.slice(60, 68), gb[1]!];
    const input = w.file('leads-november.csv', ['name,phone', ...phones.map((p, i) => `lead ${i + 1},${p}`)]);
    await dnc(
      [
        'suppress',
        'add',
        us[3]!,
        us[5]!,
        us[7]!,
        gb[3]!,
        '--reason',
        'asked not to be called',
        '--source',
        'call centre',
      ],
      env,
    );
    await dnc(
      ['exempt', 'add', us[9]!, '--basis', 'consent', '--until', date(90), '--evidence', 'signed form #4411'],
      env,
    );
    await dnc(['exempt', 'add', us[11]!, '--basis', 'ebr-purchase', '--until', date(200)], env);
    // One exemption the list overrides (an opt-out revokes consent), one that has ended.
    await dnc(['exempt', 'add', us[3]!, '--basis', 'ebr-inquiry', '--until', date(30)], env);
    const ended = w.file('ended.csv', ['phone,basis,until', `${us[13]!},consent,${date(-3)}`]);
    expect((await dnc(['exempt', 'import', ended], env)).code).toBe(0);
    const out = path.join(w.dir, 'leads-november.results.csv');
    const r = await dnc(
      [
        'batch',
        input,
        '-o',
        out,
        '--seller',
        'Acme Solar Ltd',
        '--san',
        'SAN-0042-7781',
        '--campaign',
        'Winter 2026 outbound',
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = path.join(w.dir, 'leads-november.results.report.html');
    expect((await dnc(['report', out], env)).code).toBe(0);
    const profile = mkdtempSync(path.join(os.tmpdir(), 'dnc-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1100, height: 1500 },
    });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => problems.push(`${m.type()}: ${m.text()}`));
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      await page.goto(`file://${report}`, { waitUntil: 'load' });
      expect(problems).toEqual([]);
      expect(await page.locator('svg.chart').count()).toBe(2);
      const dir = path.join(REPO_ROOT, '.tmp');
      mkdirSync(dir, { recursive: true });
      const shot = path.join(dir, 'report-screenshot.png');
      await page.screenshot({ path: shot });
      expect(pngSize(shot)).toEqual([1100, 1500]);
      const docs = path.join(REPO_ROOT, 'docs', 'report-screenshot.png');
      if (process.env.DOCS_UPDATE === '1') copyFileSync(shot, docs);
      // The README and the compliance page show this file, and it is one this test wrote (same frame).
      expect(readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8')).toContain('](docs/report-screenshot.png)');
      expect(readFileSync(path.join(REPO_ROOT, 'docs', 'compliance.md'), 'utf8')).toContain('](report-screenshot.png)');
      expect(pngSize(docs)).toEqual([1100, 1500]);
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 60_000);
});
