// Prints vitest's totals as one plain closing line ("vitest: N passed, N failed, N skipped"), a form CI recognises
// whatever the runner, from the JSON report vitest writes.
//
//   node scripts/test-summary.mjs run [vitest arguments]   `npm test`: runs vitest, then the line, whatever vitest's
//                                                           exit (npm skips a posttest script after a failure); exits
//                                                           with vitest's status (1 in CI when the PostgreSQL half
//                                                           was skipped)
//   node scripts/test-summary.mjs                          the line of the last report; exit 1 if any test failed
//
// DNC_TEST_REPORT names another report file (this script's own test runs vitest on a scratch suite).
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const reportFile = process.env.DNC_TEST_REPORT
  ? path.resolve(process.env.DNC_TEST_REPORT)
  : path.join(root, '.tmp', 'vitest-report.json');

/** The summary line of the report, and whether it shows a failure (or no test passed); null when it cannot be read. */
function summary() {
  let report;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
  } catch (err) {
    console.error(`test-summary: cannot read ${reportFile}: ${err.message}`);
    return null;
  }
  const passed = report.numPassedTests ?? 0;
  const failed = report.numFailedTests ?? 0;
  const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  const line = `vitest: ${passed} passed, ${failed} failed, ${skipped} skipped`;
  // The team store's tests need a PostgreSQL server (test/helpers/postgres.ts): each file without one leaves a
  // skipped "[postgres] …" test. Said plainly; in CI (CI=true) a skip is a failure.
  const pgSkipped = (report.testResults ?? [])
    .flatMap((f) => f.assertionResults ?? [])
    .filter((t) => /^\[postgres\]/.test(t.title ?? '') && t.status !== 'passed' && t.status !== 'failed').length;
  const pgLine = pgSkipped
    ? `vitest: the PostgreSQL half was SKIPPED (${pgSkipped} file(s)): no server; set PGHOST/PGPORT/PGUSER/PGPASSWORD ` +
      '(or DNC_TEST_POSTGRES), e.g. `pg_virtualenv npm test`'
    : null;
  const pgFailing = pgSkipped > 0 && process.env.CI === 'true';
  return { line: pgLine ? `${line}\n${pgLine}` : line, failing: failed > 0 || passed === 0 || pgFailing, pgFailing };
}

if (process.argv[2] === 'run') {
  const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
  const reporters = ['--reporter=default', '--reporter=json', `--outputFile.json=${reportFile}`];
  const args = ['run', ...reporters, ...process.argv.slice(3)];
  // A report left by an earlier run must not stand for this one when vitest dies before writing its own.
  rmSync(reportFile, { force: true });
  const run = spawnSync(process.execPath, [vitest, ...args], { stdio: 'inherit' });
  const s = summary();
  if (s) console.log(s.line);
  // vitest's status: a signal that stopped it counts as a failure too; in CI, so does a skipped PostgreSQL half.
  process.exit(run.status === 0 && s?.pgFailing ? 1 : (run.status ?? 1));
}
const s = summary();
if (s) console.log(s.line);
process.exit(!s || s.failing ? 1 : 0);
