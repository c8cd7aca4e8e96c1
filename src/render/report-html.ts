// The auditor's report of one scrub: a single self-contained HTML page (inline CSS and SVG, no script, no external
// request), printable to PDF.
import { shellWord } from '../text/shell.js';
import type { Manifest } from '../evidence/manifest.js';
import { formatInteger } from '../text/numbers.js';
import { windowDays } from '../compliance/validity.js';
import { rulesOf, type ListCheck } from '../compliance/batch-compliance.js';
import { validUntilOf } from '../status/status.js';
import type { ReportData } from '../report/data.js';

/** What each list a scrub wrote is called. */
const LIST_LABELS: Record<Manifest['lists'][number]['kind'], string> = {
  callable: 'Callable list',
  suppressed: 'Suppressed list',
  review: 'Review list',
  dial: 'Dial list',
};

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Everything that came from outside (CSV cells, list names, paths, config values) passes through here. */
export function esc(value: unknown): string {
  // Control characters could hide text from a reader; they have no place in a report. Nor have the
  // bidirectional overrides and isolates, which show text in another order than it is written
  // (a seller "Acme\u202Ed.tL" reads "AcmeLt.d").
  // eslint-disable-next-line no-control-regex
  return String(value ?? '')
    .replace(
      /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
      '\uFFFD',
    )
    .replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const int = (n: number) => formatInteger(n);

const RESULT_COLOURS: Record<string, string> = {
  callable: '#1f9d55',
  do_not_call: '#c53030',
  invalid: '#8a6d3b',
  unsupported_country: '#6b7280',
  pending: '#d69e2e',
  not_checked: '#a0aec0',
  failed: '#805ad5',
};
const RESULT_LABELS: Record<string, string> = {
  callable: 'Callable',
  do_not_call: 'Do not call',
  invalid: 'Invalid',
  unsupported_country: 'Unsupported country',
  pending: 'Pending',
  not_checked: 'Not checked',
  failed: 'Failed',
};

function when(iso: string | null | undefined): string {
  if (!iso) return '<span class="muted">not recorded</span>';
  const ms = Date.parse(iso.replace(/(\.\d{3})\d+/, '$1'));
  if (!Number.isFinite(ms)) return esc(iso);
  const d = new Date(ms);
  return `<time datetime="${esc(d.toISOString())}">${esc(
    d
      .toISOString()
      .replace('T', ' ')
      .replace(/\.\d+Z$/, ' UTC'),
  )}</time>`;
}

/** Horizontal bars, one per result, labelled with count and share. */
function resultsChart(byResult: Record<string, number>, total: number): string {
  const entries = Object.entries(byResult).filter(([, n]) => n > 0);
  if (entries.length === 0) return '<p class="muted">No rows.</p>';
  const max = Math.max(...entries.map(([, n]) => n));
  const rowH = 30;
  const labelW = 140;
  const barW = 200;
  const h = entries.length * rowH + 6;
  const bars = entries
    .map(([result, n], i) => {
      const w = Math.max(2, Math.round((n / max) * barW));
      const y = i * rowH + 4;
      const pct = total ? ((n / total) * 100).toFixed(1) : '0.0';
      return (
        `<text x="${labelW - 10}" y="${y + 17}" text-anchor="end" ` +
        `class="lbl">${esc(RESULT_LABELS[result] ?? result)}</text>` +
        `<rect x="${labelW}" y="${y}" width="${w}" height="${rowH - 10}" rx="3" ` +
        `fill="${RESULT_COLOURS[result] ?? '#4a5568'}"><title>${esc(result)}: ${n}</title></rect>` +
        `<text x="${labelW + w + 8}" y="${y + 17}" class="val">${int(n)} (${pct}%)</text>`
      );
    })
    .join('');
  return (
    `<svg class="chart" role="img" aria-label="Rows by result" viewBox="0 0 ${labelW + barW + 100} ${h}" ` +
    `width="${labelW + barW + 100}" height="${h}">${bars}</svg>`
  );
}

/** One stacked bar per country (rows by result), with a legend. */
function countriesChart(byCountry: Record<string, Record<string, number>>): string {
  const countries = Object.entries(byCountry)
    .map(([c, counts]) => [c, counts, Object.values(counts).reduce((a, b) => a + b, 0)] as const)
    .filter(([, , total]) => total > 0)
    .sort((a, b) => b[2] - a[2] || a[0].localeCompare(b[0]));
  if (countries.length === 0) return '<p class="muted">No rows.</p>';
  const max = Math.max(...countries.map(([, , t]) => t));
  const rowH = 28;
  const labelW = 64;
  const barW = 300;
  const present = new Set<string>();
  const bars = countries
    .map(([country, counts, total], i) => {
      const y = i * rowH + 4;
      let x = labelW;
      const segs = Object.entries(counts)
        .filter(([, n]) => n > 0)
        .map(([result, n]) => {
          present.add(result);
          const w = Math.max(1, (n / max) * barW);
          const seg =
            `<rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${rowH - 10}" ` +
            `fill="${RESULT_COLOURS[result] ?? '#4a5568'}"><title>${esc(country || 'unreadable')} ${esc(result)}: ` +
            `${n}</title></rect>`;
          x += w;
          return seg;
        })
        .join('');
      return (
        `<text x="${labelW - 10}" y="${y + 15}" text-anchor="end" ` +
        `class="lbl">${esc(country || 'unreadable')}</text>${segs}<text x="${(x + 8).toFixed(1)}" y="${y + 15}" ` +
        `class="val">${int(total)}</text>`
      );
    })
    .join('');
  // The legend wraps onto a new line when the next entry would not fit.
  const width = labelW + barW + 70;
  let lx = labelW;
  let ly = countries.length * rowH + 14;
  const legend = [...present]
    .map((r) => {
      const label = RESULT_LABELS[r] ?? r;
      const w = 26 + label.length * 6.2;
      if (lx + w > width && lx > labelW) {
        lx = labelW;
        ly += 18;
      }
      const item =
        `<rect x="${lx}" y="${ly}" width="12" height="12" rx="2" ` +
        `fill="${RESULT_COLOURS[r] ?? '#4a5568'}"/><text x="${lx + 17}" y="${ly + 10}" ` +
        `class="leg">${esc(label)}</text>`;
      lx += w;
      return item;
    })
    .join('');
  const h = ly + 18;
  return (
    `<svg class="chart" role="img" aria-label="Rows by country and result" viewBox="0 0 ${width} ${h}" ` +
    `width="${width}" height="${h}">${bars}${legend}</svg>`
  );
}

function dl(items: Array<[string, string]>): string {
  return `<dl>${items.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

const orNone = (v: string | null | undefined) => (v ? esc(v) : '<span class="muted">not recorded</span>');
const code = (v: string | null | undefined) => (v ? `<code>${esc(v)}</code>` : '<span class="muted">—</span>');

const CSS = `
:root { --ink:#1a202c; --muted:#6b7280; --line:#e2e8f0; --soft:#f7fafc; --accent:#2b6cb0; --ok:#1f9d55;
--bad:#c53030; --warn:#b7791f; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
color:var(--ink); background:#edf2f7; }
main { max-width: 980px; margin: 24px auto; background:#fff; padding: 36px 44px; border-radius: 10px;
box-shadow: 0 1px 3px rgba(0,0,0,.08); }
header { display:flex; justify-content:space-between; align-items:flex-start; gap:24px;
border-bottom: 3px solid var(--accent); padding-bottom: 16px; margin-bottom: 20px; }
h1 { font-size: 24px; margin: 0 0 4px; letter-spacing: -0.01em; }
h2 { font-size: 16px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line);
color: var(--accent); text-transform: uppercase; letter-spacing: .04em; }
.sub { color: var(--muted); margin: 0; word-break: break-all; }
.pill { display:inline-block; padding: 6px 12px; border-radius: 999px; font-weight: 600; white-space: nowrap; }
.pill.ok { background:#e6f6ec; color: var(--ok); } .pill.bad { background:#fde8e8; color: var(--bad); }
.pill.warn { background:#fdf6e3; color: var(--warn); }
.cards { display:grid; grid-template-columns: repeat(6, 1fr); gap: 10px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .k { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
.card .v { font-size: 22px; font-weight: 650; margin-top: 2px; }
.card.ok .v { color: var(--ok); } .card.bad .v { color: var(--bad); }
.cols { display:grid; grid-template-columns: 1fr 1fr; gap: 28px; }
dl { display:grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-word; }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--soft);
padding: 1px 4px; border-radius: 3px; word-break: break-all; }
pre { font: 12px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #1a202c;
color: #e2e8f0; padding: 12px 14px; border-radius: 6px; overflow-x: auto; white-space: pre-wrap;
word-break: break-all; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); font-weight: 600; color: #4a5568; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.chart { max-width: 100%; height: auto; display: block; }
.chart .lbl { font-size: 13px; fill: #2d3748; } .chart .val { font-size: 12px; fill: #4a5568; }
.chart .leg { font-size: 11px; fill: #4a5568; }
.muted { color: var(--muted); }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
table.numbers { font-size: 12px; } table.numbers td { word-break: break-word; overflow-wrap: anywhere; }
table.numbers td.num { overflow-wrap: normal; }
table.numbers td[class^="r-"] { overflow-wrap: normal; word-break: normal; }
table.numbers td:last-child { min-width: 14em; }
.note { background: var(--soft); border-left: 3px solid var(--accent); padding: 8px 12px; margin: 10px 0; }
.alert { background: #fde8e8; border-left: 3px solid var(--bad); padding: 8px 12px; margin: 10px 0; color: #742a2a; }
footer { margin-top: 28px; padding-top: 10px; border-top: 1px solid var(--line); color: var(--muted); font-size: 12px; }
.r-callable { color: var(--ok); font-weight: 600; } .r-do_not_call { color: var(--bad); font-weight: 600; }
@media screen and (max-width: 760px) { .cards { grid-template-columns: repeat(2, 1fr); }
.cols { grid-template-columns: 1fr; } main { padding: 20px; } }
@page { size: A4; margin: 14mm; }
@media print {
  body { background: #fff; } main { box-shadow: none; margin: 0; padding: 0; max-width: none; }
  h2 { break-after: avoid; } section, .cards, table, svg { break-inside: avoid; } tr { break-inside: avoid; }
  pre { background: #f7fafc; color: #1a202c; border: 1px solid var(--line); }
  table.numbers { font-size: 10px; }
  /* The verdict and any warning keep their colours on paper (browsers drop backgrounds by default). */
  .pill, .alert { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}`;

export function renderReportHtml(d: ReportData): string {
  const m = d.manifest;
  const c = m.compliance ?? null;
  const parties = c?.parties;
  const rules = rulesOf(c);
  const byResult = m.rows.by_result;
  // Manifests written before validity was recorded are judged as `dnc status` judges them.
  const validUntil = validUntilOf(m).at;
  const now = d.generatedAt.getTime();
  const expired = validUntil !== null && Date.parse(validUntil) < now;
  const pill = pillOf(d, validUntil, expired);
  const file = m.output.path.split(/[\\/]/).pop() ?? m.output.path;
  // Countries are each number's own with several phone columns, each row's with one.
  const byCountry = (m.format.phone_columns?.length ?? 1) > 1 ? m.numbers.by_country : m.rows.by_country;

  const cards = [
    ['Rows', int(m.rows.total), ''],
    ['Distinct numbers', int(m.numbers.distinct), ''],
    ['Callable', int(byResult.callable ?? 0), 'ok'],
    ['Do not call', int(byResult.do_not_call ?? 0), 'bad'],
    ['Credits used', int(m.credits_used), ''],
    ['Countries', int(Object.keys(byCountry).filter((k) => k).length), ''],
  ]
    .map(([k, v, cls]) => `<div class="card ${cls}"><div class="k">${esc(k)}</div><div class="v">${v}</div></div>`)
    .join('');

  const registers = m.register_sources.filter((s) => !s.startsWith('internal:'));
  const internals = m.register_sources.filter((s) => s.startsWith('internal:'));

  const validityRows = validityRowsOf(m, rules, now);

  const hashes: Array<[string, string, string]> = [
    ['Input', m.input.path, m.input.sha256],
    ['Output', m.output.path, m.output.sha256],
    ...m.lists.map((l) => [LIST_LABELS[l.kind] ?? `${l.kind} list`, l.path, l.sha256] as [string, string, string]),
    ['Manifest', d.manifestPath, d.manifestSha256],
  ];

  const applied = appliedTable(d, c);

  const listSection = listSectionOf(d, c);

  const rowsSection = rowsSectionOf(d);

  const outputRel = m.output.path;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="referrer" content="no-referrer">
<title>Do-not-call scrub report — ${esc(file)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<header>
  <div>
    <h1>Do-not-call scrub report</h1>
    <p class="sub">${esc(file)}</p>
    <p class="sub">Scrubbed
    ${when(m.finished_at ?? m.updated_at)}${parties?.seller ? ` for ${esc(parties.seller)}` : ''}</p>
  </div>
  <div>${pill}</div>
</header>
${
  d.outputMatches
    ? ''
    : '<div class="alert"><strong>The results file is not what dnc wrote:</strong> its ' +
      'SHA-256 differs from the manifest. Nothing in it should be dialled until the scrub is run again.</div>'
}
<section class="cards">${cards}</section>

${overviewSections({ d, byResult, byCountry, registers, internals, listSection })}
<section>
<h2>Suppressions and exemptions applied</h2>
${applied}
</section>

<section>
<h2>Validity</h2>
<p>A verdict may be relied on for its country's window;
a row callable by an exemption only while the exemption holds. The file must be scrubbed again after
<strong>${validUntil ? when(validUntil) : 'any row is dialled (no row is callable)'}</strong>.</p>
<table><thead><tr><th>Country</th><th class="n">Window</th><th class="n">Callable rows</th><th>Valid until</th>
</tr></thead><tbody>${validityRows || '<tr><td colspan="4" class="muted">No rows.</td></tr>'}</tbody></table>
</section>

<section>
<h2>Evidence</h2>
<table><thead><tr><th>File</th><th>Path</th><th>SHA-256</th></tr></thead>
<tbody>${hashes.map(([k, p, h]) => `<tr><td>${esc(k)}</td><td>${code(p)}</td><td>${code(h)}</td></tr>`).join('')}
</tbody></table>
<p class="note">Output integrity when this report was made: ${
    d.outputMatches
      ? '<strong>the file matches its ' + 'manifest</strong>'
      : '<strong style="color:var(--bad)">the file does NOT match its manifest</strong>'
  }. To check it yourself, with the results file and its manifest side by side:</p>
<pre>dnc verify ${esc(shellWord(outputRel))}
sha256sum ${esc(shellWord(outputRel))}   # must print ${esc(m.output.sha256)}</pre>
<p class="muted">dnc verify recomputes the hash and every count above from the file, compares each row with the
batch journal and the input, and fails when a callable row is older than its window.</p>
</section>

<section>
<h2 id="numbers">Numbers</h2>
${rowsSection}
</section>

<footer>Generated by dnc ${esc(m.dnc_version)} from ${esc(d.manifestPath)} — manifest version
${esc(m.manifest_version)}. This report contains no scripts and loads nothing from the network.</footer>
</main>
</body>
</html>
`;
}

/** Each country's window and how long its callable rows stand. */
function validityRowsOf(m: ReportData['manifest'], rules: ReturnType<typeof rulesOf>, now: number): string {
  return Object.keys({ ...m.rows.by_country })
    .filter((k) => k)
    .sort()
    .map((country) => {
      const until = m.validity?.valid_until_by_country[country];
      const cls = until && Date.parse(until) < now ? ' class="r-do_not_call"' : '';
      const none = m.validity ? 'nothing callable' : 'not recorded';
      const untilCell = until ? when(until) : `<span class="muted">${none}</span>`;
      return (
        `<tr><td>${esc(country)}</td><td class="n">${windowDays(rules, country)} days</td><td ` +
        `class="n">${int(m.rows.by_country[country]?.callable ?? 0)}</td>
        <td${cls}>${untilCell}</td></tr>`
      );
    })
    .join('');
}

/** The verdict on the file at the top of the report. */
function pillOf(d: ReportData, validUntil: string | null, expired: boolean): string {
  return !d.outputMatches
    ? '<span class="pill bad">Output changed after the scrub</span>'
    : !d.fit.fit
      ? `<span class="pill bad">Not fit to dial${d.fit.why ? `: ${esc(d.fit.why)}` : ''}</span>`
      : validUntil === null
        ? '<span class="pill warn">No callable rows</span>'
        : expired
          ? `<span class="pill bad">Expired ${when(validUntil)}</span>`
          : `<span class="pill ok">Valid until ${when(validUntil)}</span>`;
}

/** What the internal list and exemptions did to the rows. */
function appliedTable(d: ReportData, c: ReportData['manifest']['compliance'] | null): string {
  const internalRows = Object.entries(d.internalRows);
  const exemptRows = Object.entries(d.exemptRows);
  const applied = `
    <table><thead><tr><th>What</th><th class="n">Rows</th><th class="n">Distinct numbers</th></tr></thead><tbody>
      ${
        internalRows.length
          ? internalRows
              .map(
                ([src, n]) =>
                  `<tr><td>On the internal list ` +
                  `<code>${esc(src)}</code>: do not call, never sent, no credit</td><td ` +
                  `class="n">${int(n)}</td><td class="n">${c ? int(c.suppressed_numbers) : '—'}</td></tr>`,
              )
              .join('')
          : '<tr><td>On the internal list</td><td class="n">0</td><td class="n">0</td></tr>'
      }
      ${
        exemptRows.length
          ? exemptRows
              .map(
                ([basis, n]) =>
                  `<tr><td>Callable by exemption: ` +
                  `<strong>${esc(basis)}</strong> (register verdict kept in the file)</td><td ` +
                  `class="n">${int(n)}</td><td class="n">—</td></tr>`,
              )
              .join('')
          : '<tr><td>Callable by exemption</td><td class="n">0</td><td class="n">0</td></tr>'
      }
      <tr><td>Exempt numbers at scrub time (valid exemption)</td><td class="n">—</td>
      <td class="n">${c ? int(c.exempt_numbers) : '—'}</td></tr>
      <tr><td>Exemptions expired at scrub time (ignored)</td><td class="n">—</td>
      <td class="n">${c ? int(c.expired_exemption_numbers) : '—'}</td></tr>
      <tr><td>Exemptions overridden by the internal list (an opt-out revokes consent)</td><td class="n">—</td>
      <td class="n">${c ? int(c.overridden_exemption_numbers) : '—'}</td></tr>
    </tbody></table>`;
  return applied;
}

/** The internal list as it stood at scrub time, and its history now. */
function listSectionOf(d: ReportData, c: ReportData['manifest']['compliance'] | null): string {
  const list = c?.list;
  return list
    ? dl([
        ['List name', `<code>internal:${esc(list.name)}</code>`],
        ['List id', code(list.id)],
        ['File', code(list.path)],
        ['Entries at scrub time', `${int(list.suppressions)} suppressed, ${int(list.exemptions)} exempt`],
        ['Audit log', `${int(list.audit_entries)} entries; head ${code(list.audit_head)}`],
        ['State SHA-256', code(list.state_sha256)],
        ['History now', listCheckText(d.listCheck)],
      ])
    : `<p class="muted">${
        c
          ? 'No internal do-not-call list existed when this scrub ran.'
          : 'This scrub was made before dnc recorded internal lists.'
      }</p>`;
}

/** The rows themselves (--include-numbers), or a note that they are left out. */
function rowsSectionOf(d: ReportData): string {
  return d.rows === null
    ? '<p class="muted">Phone numbers are not included in this report. Run <code>dnc report RESULTS ' +
        '--include-numbers</code> for a copy that lists them.</p>'
    : `<table class="numbers"><thead><tr><th class="n">Line</th><th>Number</th><th>Country</th><th>Result</th>
      <th>Register or list</th><th>Checked at</th><th>Exemption</th><th>Why (audit log)</th></tr></thead><tbody>${d.rows
        .map(
          (r) =>
            // One row per line of HTML: a reader (or a test) takes a row as one line.
            `<tr><td class="n">${r.line}</td>` +
            `<td class="num">${r.number ? esc(r.number) : '<span class="muted">—</span>'}</td>` +
            `<td>${esc(r.country)}</td>` +
            `<td class="r-${esc(r.result)}">${esc(RESULT_LABELS[r.result] ?? r.result)}</td>` +
            `<td>${esc(r.source)}</td><td class="num">${r.checkedAt ? when(r.checkedAt) : ''}</td>` +
            `<td>${esc(r.exemption.replace(/T23:59:59\.999Z$/, ''))}</td><td>${esc(r.why)}</td></tr>`,
        )
        .join('')}</tbody></table>${
        d.rowsOmitted
          ? `<p class="muted">${int(d.rowsOmitted)} more rows are not shown; the results file holds them all.</p>`
          : ''
      }`;
}

/** Who and when, the rows by result and country, the registers consulted and the internal list. */
function overviewSections(o: {
  d: ReportData;
  byResult: ReportData['manifest']['rows']['by_result'];
  byCountry: Parameters<typeof countriesChart>[0];
  registers: string[];
  internals: string[];
  listSection: string;
}): string {
  const { d, byResult, byCountry, registers, internals, listSection } = o;
  const m = d.manifest;
  const parties = m.compliance?.parties;
  return `<div class="cols">
<section>
<h2>Who, for whom</h2>
${dl([
  ['Seller', orNone(parties?.seller)],
  ['Seller account (SAN)', orNone(parties?.san)],
  ['Campaign', orNone(parties?.campaign)],
  ['Scrubbed by', orNone(parties?.operator)],
  ['Profile', orNone(parties?.profile)],
])}
</section>
<section>
<h2>When</h2>
${dl([
  ['Started', when(m.started_at)],
  ['Finished', when(m.finished_at)],
  ['Oldest verdict', when(m.checked_at.oldest)],
  ['Newest verdict', when(m.checked_at.newest)],
  ['Report generated', when(d.generatedAt.toISOString())],
])}
</section>
</div>

<div class="cols">
<section>
<h2>Rows by result</h2>
${resultsChart(byResult, m.rows.total)}
</section>
<section>
<h2>${(m.format.phone_columns?.length ?? 1) > 1 ? 'Numbers' : 'Rows'} by country</h2>
${countriesChart(byCountry)}
</section>
</div>

<div class="cols">
<section>
<h2>Registers consulted</h2>
${dl([
  ['Service', code(m.service_base_url)],
  ['Interface', esc(m.interface_version)],
  ['Calling rules', m.calling_rules_version ? code(m.calling_rules_version) : orNone(null)],
  [
    'Register sources',
    registers.length ? registers.map((s) => code(s)).join('<br>') : '<span class="muted">none matched</span>',
  ],
  [
    'Internal lists',
    internals.length ? internals.map((s) => code(s)).join('<br>') : '<span class="muted">none matched</span>',
  ],
  [
    'Credits',
    `${int(m.credits_used)} used by distinct ` +
      `lookups${m.reused_rows ? `; ${int(m.reused_rows)} rows reused earlier verdicts (no credits)` : ''}`,
  ],
])}
</section>
<section>
<h2>Internal do-not-call list</h2>
${listSection}
</section>
</div>
`;
}

function listCheckText(c: ListCheck | null): string {
  if (!c) return '<span class="muted">not checked</span>';
  if (c.state === 'verified') {
    return (
      `<span class="r-callable">intact</span>: the state recorded at scrub time is ` +
      `${c.entry ? `entry ${int(c.entry)} of ${int(c.entries)}` : 'the start'} of the list's hash-chained audit log`
    );
  }
  const what = {
    missing: 'not available',
    other_list: 'another list',
    broken: 'ALTERED',
    head_not_found: 'history rewritten',
  }[c.state];
  return `<span class="r-do_not_call">${esc(what)}</span>: ${esc(c.detail)}`;
}
