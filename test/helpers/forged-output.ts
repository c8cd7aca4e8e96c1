// An output edited after dnc wrote it, with its manifest rewritten to match (hash and size): what an earlier dnc
// wrote, or what a forger would leave. Only what the rows themselves say can then tell the difference.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

/** Writes `text` as the output at `outputPath` and makes OUTPUT.manifest.json describe it; `edit` changes the rest of the manifest. */
export function rewriteOutputAndManifest(outputPath: string, text: string, edit: (manifest: Record<string, any>) => void = () => {}): void {
  writeFileSync(outputPath, text);
  const manifestPath = outputPath.replace(/\.(csv|xlsx)$/, '.manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, any>;
  manifest.output.sha256 = createHash('sha256').update(text).digest('hex');
  manifest.output.bytes = Buffer.byteLength(text);
  edit(manifest);
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
}
