// What the internal list costs a batch: writing a large list (audited), applying it to a journal before any lookup, its state hash.
// Run after `npm run build`: node bench/compliance-bench.mjs [journal-numbers] [list-entries]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BatchJournal } from '../dist/journal/journal.js';
import { applyToJournal } from '../dist/compliance/batch-compliance.js';
import { SuppressionStore } from '../dist/stores/suppression-store.js';
import { validityRules } from '../dist/compliance/validity.js';

const N = Number(process.argv[2] ?? 200_000);
const L = Number(process.argv[3] ?? 100_000);
const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-compliance-bench-'));
const parties = { seller: null, san: null, campaign: null, operator: 'bench@local', profile: null };
const time = (what, fn) => {
  const t = performance.now();
  const r = fn();
  console.log(`${what}: ${Math.round(performance.now() - t)} ms`);
  return r;
};
try {
  const numbers = Array.from({ length: N }, (_, i) => [`+1202${String(1_000_000 + i).slice(1)}`, 'US']);
  const journal = await BatchJournal.open(path.join(dir, 'journal.sqlite'), { create: true });
  journal.insertNumbers(numbers);
  const store = await SuppressionStore.open(path.join(dir, 'list.sqlite'), { create: true });
  const half = numbers.slice(0, L);
  time(`suppress ${L / 2} numbers (one transaction, audited)`, () =>
    store.suppress(half.filter((_, i) => i % 2 === 0).map(([e164]) => ({ e164, country: 'US' })), { who: 'bench@local' }, new Date()),
  );
  time(`exempt ${L / 2} numbers`, () =>
    store.exempt(half.filter((_, i) => i % 2 === 1).map(([e164]) => ({ e164, country: 'US', basis: 'consent', until: '2099-01-01T00:00:00.000Z', evidence: null })), { who: 'bench@local' }, new Date()),
  );
  time(`apply a ${L}-entry list to a ${N}-number journal (first run)`, () => applyToJournal(journal, store, new Date(), parties, validityRules()));
  time('apply again (a rerun: nothing new to suppress)', () => applyToJournal(journal, store, new Date(), parties, validityRules()));
  time('list identity (state SHA-256 over every entry)', () => store.identity());
  time('audit chain check', () => store.brokenAuditEntry());
  const empty = await BatchJournal.open(path.join(dir, 'journal2.sqlite'), { create: true });
  empty.insertNumbers(numbers);
  time(`no list, ${N}-number journal`, () => applyToJournal(empty, null, new Date(), parties, validityRules()));
  journal.close();
  empty.close();
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
