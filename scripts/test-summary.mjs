// Prints vitest's totals as one plain closing line ("vitest: N passed, N failed, N skipped"),
// a form CI recognises whatever the runner. Reads the JSON report that `npm test` writes.
import { readFileSync } from 'node:fs';

const file = new URL('../.tmp/vitest-report.json', import.meta.url);
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.error(`test-summary: cannot read ${file.pathname}: ${err.message}`);
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`vitest: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
