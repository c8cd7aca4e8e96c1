// An output edited after dnc wrote it, with its manifest rewritten to match (hash and size): what an earlier dnc
// wrote, or what a forger would leave. Only what the rows themselves say can then tell the difference.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

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
