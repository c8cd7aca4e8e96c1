// An independent CSV reader for checking what dnc writes: Python's csv module (another implementation
// than csv-parse, which dnc reads with), strict, taking CR, LF and CRLF as line ends outside quotes.
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { pythonWithOpenpyxl } from './python.js';

const READER = String.raw`
import csv, json, sys
csv.field_size_limit(sys.maxsize)
def read(path, delimiter, encoding='utf-8-sig'):
    with open(path, newline='', encoding=encoding, errors='strict') as f:
        return list(csv.reader(f, delimiter=delimiter, strict=True))
if len(sys.argv) > 1:
    json.dump(read(sys.argv[1], sys.argv[2], *sys.argv[3:]), sys.stdout)
else:
    for line in sys.stdin:
        req = json.loads(line)
        try:
            out = {'rows': read(req['path'], req['delimiter'])}
        except Exception as e:
            out = {'error': repr(e)}
        sys.stdout.write(json.dumps(out) + '\n')
        sys.stdout.flush()
`;

/**
 * The records of a CSV file as Python's csv module reads them (a blank line is an empty record), decoded
 * strictly as `encoding` (Python's names: utf-8-sig, cp1252, latin-1, utf-16 …).
 */
export function readCsvIndependently(file: string, delimiter = ',', encoding = 'utf-8-sig'): string[][] {
  return JSON.parse(
    execFileSync(pythonWithOpenpyxl(), ['-c', READER, file, delimiter, encoding], {
      maxBuffer: 1 << 30,
      encoding: 'utf8',
    }),
  ) as string[][];
}

/** One Python process reading many files (for property tests that read thousands). */
export class CsvOracle {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: Array<(line: string) => void> = [];
  constructor() {
    this.child = spawn(pythonWithOpenpyxl(), ['-c', READER]);
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on('line', (line) => this.waiting.shift()?.(line));
  }
  read(file: string, delimiter = ','): Promise<string[][]> {
    return new Promise((resolve, reject) => {
      this.waiting.push((line) => {
        const r = JSON.parse(line) as { rows?: string[][]; error?: string };
        if (r.error !== undefined) reject(new Error(`python csv: ${r.error}`));
        else resolve(r.rows!);
      });
      this.child.stdin.write(`${JSON.stringify({ path: file, delimiter })}\n`);
    });
  }
  close(): void {
    this.child.stdin.end();
    this.lines.close();
  }
}
