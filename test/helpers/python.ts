// The one way a test reaches Python (its csv, and openpyxl for workbooks): the interpreter scripts/oracles.mjs
// finds, the same one .ci/run checks and installs for. A bare 'python3' may be another Python than the one that has
// openpyxl (test/test-hygiene.test.ts refuses it).
import { findPython, MISSING_OPENPYXL } from '../../scripts/oracles.mjs';

/** The Python that imports openpyxl; throws, saying what to install, when there is none. */
export function pythonWithOpenpyxl(): string {
  const python = findPython();
  if (python === null) throw new Error(MISSING_OPENPYXL);
  return python;
}
