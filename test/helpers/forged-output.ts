// An output edited after dnc wrote it, with its manifest rewritten to match (hash and size): what an earlier dnc
// wrote, or what a forger would leave. Only what the rows themselves say can then tell the difference.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pythonWithOpenpyxl } from './python.js';

/**
 * Writes `text` (a workbook's bytes) as the output at `outputPath` and makes OUTPUT.manifest.json describe it; `edit` changes the rest of
 * the manifest. `asDncWroteIn` (a state folder): the anchor there is rewritten too, as the dnc that wrote such a file
 * would have left it; without it the anchor stays as it was, as a forger who cannot write the state folder leaves it.
 */
export function rewriteOutputAndManifest(
  outputPath: string,
  text: string | Buffer,
  edit: (manifest: Record<string, any>) => void = () => {},
  asDncWroteIn?: string,
): void {
  writeFileSync(outputPath, text);
  const manifestPath = outputPath.replace(/\.(csv|xlsx)$/, '.manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, any>;
  manifest.output.sha256 = createHash('sha256').update(text).digest('hex');
  manifest.output.bytes = Buffer.byteLength(text);
  edit(manifest);
  const manifestText = JSON.stringify(manifest, null, 2);
  writeFileSync(manifestPath, manifestText);
  if (asDncWroteIn !== undefined) {
    const db = new Database(path.join(asDncWroteIn, 'anchors.sqlite'));
    db.prepare('UPDATE outputs SET sha256 = ?, bytes = ?, manifest_sha256 = ? WHERE output = ?').run(
      manifest.output.sha256,
      manifest.output.bytes,
      createHash('sha256').update(manifestText).digest('hex'),
      path.resolve(outputPath),
    );
    db.close();
  }
}

/** Recomputes a chain as a forger who read its format (docs/compliance-evidence.md) would: Python's hashlib. */
const RECHAIN = `
import hashlib, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
sha = lambda text: hashlib.sha256(text.encode()).hexdigest()
for row in db.execute("""SELECT n.id, n.e164, n.country,
    CASE WHEN n.state IN ('done','pending') THEN n.state ELSE 'open' END, n.result, n.correlation_id, n.credits,
    n.do_not_call, n.list_source, n.error_code, n.error, n.checked_at, a.body
    FROM numbers n LEFT JOIN answers a ON a.number_id = n.id""").fetchall():
    digest = sha(json.dumps(['n', *row[1:]], separators=(',', ':'), ensure_ascii=False))
    db.execute("UPDATE chain SET digest = ? WHERE seq = (SELECT MAX(seq) FROM chain WHERE kind = 'n' AND ref = ?)",
               (digest, row[0]))
head, entries = '0' * 64, 0
for seq, digest in db.execute("SELECT seq, digest FROM chain ORDER BY seq").fetchall():
    head, entries = sha(f'{head}:{digest}'), seq
    db.execute("UPDATE chain SET head = ? WHERE seq = ?", (head, seq))
db.commit()
print(json.dumps({'entries': entries, 'head': head}))
`;

/**
 * A journal edited outside dnc, its chain recomputed to agree with the edit (the numbers' last entries and every
 * head): the chain then holds together, and only an anchor of its head (the state folder's, a manifest's) tells it.
 * Returns the new head, as a forger would write it into the manifest.
 */
export function rechainJournal(journal: string): { entries: number; head: string } {
  return JSON.parse(execFileSync(pythonWithOpenpyxl(), ['-c', RECHAIN, journal], { encoding: 'utf8' })) as {
    entries: number;
    head: string;
  };
}
