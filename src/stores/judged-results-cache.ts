// The results cache as the use cases are given it: a verdict read back is judged as an answer of the service before
// it may be reused (src/service/answers.ts, storedVerdictProblem), whichever store holds it. A row written or edited
// by anything but dnc (its result made callable, its kept answer saying otherwise) is never a verdict: the number is
// looked up again.
import { storedVerdictProblem } from '../service/answers.js';
import type { CachedVerdict, JournalVerdictSource, ResultsCache } from './interfaces.js';

class JudgedResultsCache implements ResultsCache {
  constructor(private readonly cache: ResultsCache) {}

  private trusted(v: CachedVerdict): boolean {
    return storedVerdictProblem(v) === null;
  }

  hasVerdictsSince(notBefore: Date): Promise<boolean> {
    return this.cache.hasVerdictsSince(notBefore);
  }

  async get(e164: string, notBefore: Date): Promise<CachedVerdict | null> {
    const v = await this.cache.get(e164, notBefore);
    return v !== null && this.trusted(v) ? v : null;
  }

  async getMany(e164s: readonly string[], notBefore: Date): Promise<Map<string, CachedVerdict>> {
    const found = await this.cache.getMany(e164s, notBefore);
    for (const [e164, v] of found) if (!this.trusted(v)) found.delete(e164);
    return found;
  }

  put(verdicts: readonly CachedVerdict[]): Promise<number> {
    return this.cache.put(verdicts);
  }

  fill(source: JournalVerdictSource): Promise<void> {
    return this.cache.fill(source);
  }

  forget(e164s: readonly string[]): Promise<void> {
    return this.cache.forget(e164s);
  }

  close(): Promise<void> {
    return this.cache.close();
  }
}

/** `cache` with every verdict it gives back judged first; null stays null (no cache). */
export function judgedResultsCache(cache: ResultsCache | null): ResultsCache | null {
  return cache === null ? null : new JudgedResultsCache(cache);
}
