// The rules pack as the Markdown table of docs/calling.md: one row per rule, its source, dates and note.
import { parseHours, weekText } from './policy.js';
import { CALLING_RULES, type RuleRecord, type RulesFile } from './rules.js';

const HEADER = ['rule', 'applies to', 'permitted (local time)', 'closed on', 'in force', 'source', 'note'];

function cells(r: RuleRecord, appliesTo: string): string[] {
  const permitted = r.hours === null ? 'none of its own' : weekText(parseHours(r.hours, r.id));
  const from = r.effective_from === null ? 'long-standing' : `from ${r.effective_from}`;
  const inForce = r.until === undefined ? from : `${from}, until ${r.until}`;
  const source = r.source.url.startsWith('http') ? `[${r.source.law}](${r.source.url})` : r.source.law;
  const closed = r.closed_on?.length ? 'public holidays' : '—';
  return [r.id, appliesTo, permitted, closed, inForce, source, r.note ?? '—'];
}

/** The table's lines: header, separator, the countries' rules, the states' and provinces', then the default. */
export function rulesTable(rules: RulesFile = CALLING_RULES): string[] {
  const rows = [
    ...rules.countries.map((r) => cells(r, r.countries.join(' '))),
    ...rules.states.map((r) => cells(r, `${r.country}, ${r.country === 'US' ? 'state' : 'province'} ${r.state}`)),
    cells(rules.default, 'every other country'),
  ];
  const line = (c: readonly string[]): string => `| ${c.map((x) => x.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(HEADER), `|${HEADER.map(() => '---').join('|')}|`, ...rows.map(line)];
}
