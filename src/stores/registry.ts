// The registry of batch journals on this machine (state folder), so `dnc trace` and `dnc usage --reconcile` can find
// them.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../atomic-file.js';
import { ensurePrivateDir, PRIVATE_FILE_MODE, tightenPrivateFile } from '../private-files.js';
import path from 'node:path';

/** Journals remembered at most (the oldest registrations are forgotten first). */
export const REGISTRY_LIMIT = 1_000;

export interface RegisteredJournal {
  journal: string;
  output: string;
  registered_at: string;
}

interface RegistryFile {
  version: 1;
  journals: RegisteredJournal[];
}

export function registryPath(stateDir: string): string {
  return path.join(stateDir, 'journals.json');
}

/** The registry; null when a newer dnc wrote it (a version this one does not know: never overwritten). */
async function readRegistry(file: string): Promise<RegistryFile | null> {
  try {
    tightenPrivateFile(file);
    const parsed = JSON.parse(await readFile(file, 'utf8')) as RegistryFile;
    if (parsed?.version === 1 && Array.isArray(parsed.journals)) return parsed;
    if (typeof parsed?.version === 'number' && parsed.version > 1) return null;
  } catch {
    // Missing or damaged: the registry is a convenience and starts empty.
  }
  return { version: 1, journals: [] };
}

/** Adds (or refreshes) a journal; best effort: false when the state folder cannot be written. */
export async function registerJournal(stateDir: string, journal: string, output: string, now: Date): Promise<boolean> {
  try {
    const file = registryPath(stateDir);
    const reg = await readRegistry(file);
    if (reg === null) return false;
    const journals = reg.journals.filter((j) => j.journal !== journal);
    journals.push({ journal, output, registered_at: now.toISOString() });
    reg.journals = journals.slice(-REGISTRY_LIMIT);
    ensurePrivateDir(stateDir);
    await writeFileAtomic(file, `${JSON.stringify(reg, null, 2)}\n`, PRIVATE_FILE_MODE);
    return true;
  } catch {
    return false;
  }
}

/** Registered journals that still exist, newest registration first. */
export async function registeredJournals(stateDir: string): Promise<RegisteredJournal[]> {
  const reg = await readRegistry(registryPath(stateDir));
  return (reg?.journals ?? []).filter((j) => existsSync(j.journal)).reverse();
}
