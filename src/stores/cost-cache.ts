// Credits per lookup seen per country, kept between runs in the user's cache folder for --dry-run estimates.
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../atomic-file.js';
import { ensurePrivateDir, PRIVATE_FILE_MODE, tightenPrivateFile } from '../private-files.js';
import path from 'node:path';

interface CostCacheFile {
  version: 1;
  /** By service origin (costs may differ between services), then by country. */
  services: Record<string, Record<string, { credits: number; seen_at: string }>>;
}

/** $XDG_CACHE_HOME/dnc, else ~/.cache/dnc. */
export function costCachePath(dir: string): string {
  return path.join(dir, 'costs.json');
}

/** The cache; null when a newer dnc wrote it (a version this one does not know: never overwritten). */
async function readCache(file: string): Promise<CostCacheFile | null> {
  try {
    tightenPrivateFile(file);
    const parsed = JSON.parse(await readFile(file, 'utf8')) as CostCacheFile;
    if (parsed && parsed.version === 1 && typeof parsed.services === 'object' && parsed.services) return parsed;
    if (typeof parsed?.version === 'number' && parsed.version > 1) return null;
  } catch {
    // Missing or damaged: a cache can always start empty.
  }
  return { version: 1, services: {} };
}

/** Costs known for a service, by country. */
export async function readCosts(dir: string, origin: string): Promise<Map<string, number>> {
  const cache = await readCache(costCachePath(dir));
  const entries = Object.entries(cache?.services[origin] ?? {}).filter(([, v]) => typeof v?.credits === 'number');
  return new Map(entries.map(([country, v]) => [country, v.credits]));
}

/** Merges costs learned by a run into the cache (best effort: a cache that cannot be written is skipped). */
export async function writeCosts(
  dir: string,
  origin: string,
  costs: ReadonlyMap<string, number>,
  now: Date,
): Promise<boolean> {
  if (costs.size === 0) return true;
  try {
    const file = costCachePath(dir);
    const cache = await readCache(file);
    if (cache === null) return false;
    const service = (cache.services[origin] ??= {});
    for (const [country, credits] of costs) service[country] = { credits, seen_at: now.toISOString() };
    ensurePrivateDir(dir);
    await writeFileAtomic(file, `${JSON.stringify(cache, null, 2)}\n`, PRIVATE_FILE_MODE);
    return true;
  } catch {
    return false;
  }
}
