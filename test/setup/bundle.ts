// Vitest global setup: spawned tests run bin/dnc.js → dist/bundle/; rebundle when tsc has emitted newer
// files than the bundle (e.g. after `npx tsc` alone), so a spawned test never runs stale code.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

function newestJs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'bundle') newest = Math.max(newest, newestJs(full));
    } else if (entry.name.endsWith('.js')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  const dist = path.join(ROOT, 'dist');
  if (!existsSync(path.join(dist, 'main.js'))) return; // spawned tests say how to build
  const bundle = path.join(dist, 'bundle', 'dnc.js');
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newestJs(dist)) return;
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'bundle.mjs')], { cwd: ROOT, stdio: 'inherit' });
}
