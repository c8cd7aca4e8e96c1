// The independent readers the tests check dnc's outputs with, found one way for every test and for .ci/run: the
// Python that can import openpyxl (Python's csv comes with it), and psql. `.ci/run` asks this file what is missing
// and installs it, so what CI checks and what the tests then run are the same program.
//
//   node scripts/oracles.mjs python   prints the interpreter's path; exits 1, saying what to install, when none has
//                                     openpyxl
//
// The candidates, in order: DNC_TEST_PYTHON when set (a machine with openpyxl elsewhere), the python3 on PATH (a
// pyenv one, say), then Debian's /usr/bin/python3 (python3-openpyxl). PATH's python3 is often not Debian's, so
// finding openpyxl in one says nothing of the other: each candidate is asked itself.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PYTHON_CANDIDATES = [process.env.DNC_TEST_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean);

export const MISSING_OPENPYXL =
  'no Python here can import openpyxl (tried ' +
  PYTHON_CANDIDATES.join(', ') +
  '): apt-get install -y python3-openpyxl (.ci/run does), or set DNC_TEST_PYTHON to one that can';

let found;

/** The first candidate that imports openpyxl, or null. Asked once per process. */
export function findPython() {
  if (found !== undefined) return found;
  found = null;
  for (const candidate of PYTHON_CANDIDATES) {
    const r = spawnSync(candidate, ['-c', 'import openpyxl, csv, json'], { stdio: 'ignore' });
    if (r.status === 0) return (found = candidate);
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const what = process.argv[2];
  if (what !== 'python') {
    console.error('usage: node scripts/oracles.mjs python');
    process.exit(2);
  }
  const python = findPython();
  if (python === null) {
    console.error(MISSING_OPENPYXL);
    process.exit(1);
  }
  console.log(python);
}
