// Files named after an output and kept beside it (its manifest, its report), found the same way by every command.
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The manifest of an output, beside it: leads.results.csv → leads.results.manifest.json, named after the whole
 * output name (leads.results.xlsx.manifest.json) when that short name is the manifest of another output of the
 * folder (leads.results.csv's, written first) or when it already is. The batch that writes it, `dnc listen`,
 * `verify`, `status` and `report` all find it so. (A manifest moved with its output still names its file.)
 */
export function manifestPathFor(outputPath: string): string {
  return sideFilePath(outputPath, '.manifest.json');
}

/**
 * A file named after an output (its manifest, its report: `suffix`), in the form its manifest has: after the
 * output name without its extension, unless that name is taken by another output's manifest (see manifestPathFor).
 */
export function sideFilePath(outputPath: string, suffix: string): string {
  const ext = path.extname(outputPath);
  const stem = ext ? outputPath.slice(0, -ext.length) : outputPath;
  const name = path.basename(outputPath);
  const shortOne = describedOutput(`${stem}.manifest.json`);
  if (!ext || shortOne === name) return `${stem}${suffix}`;
  const whole = shortOne !== undefined || describedOutput(`${outputPath}.manifest.json`) === name;
  return `${whole ? outputPath : stem}${suffix}`;
}

/** The file name of the output a manifest describes, or undefined when it is missing or no manifest. */
function describedOutput(manifest: string): string | undefined {
  try {
    const described = (JSON.parse(readFileSync(manifest, 'utf8')) as { output?: { path?: unknown } }).output?.path;
    return typeof described === 'string' ? path.basename(described) : undefined;
  } catch {
    return undefined;
  }
}
