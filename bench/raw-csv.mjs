// The floor for item 4: a raw csv-parse → csv-stringify pass over a file, output discarded.
//   node bench/raw-csv.mjs FILE   → prints one JSON line {rows, ms}
import { createReadStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import { stringify } from 'csv-stringify';

const started = performance.now();
const parser = parse({ bom: true });
await pipeline(createReadStream(process.argv[2]), parser, stringify(), new Writable({ write: (_chunk, _enc, cb) => cb() }));
process.stdout.write(`${JSON.stringify({ rows: parser.info.records - 1, ms: performance.now() - started })}\n`);
