// The commit queue without HTTP, on a real journal: answers count only once committed; a failed commit is rolled
// back whole, keeps its failure, and counts its answers as unstored.
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CommitQueue } from '../../src/batch/commit-queue.js';
import { BatchJournal, localAnswer } from '../../src/journal/journal.js';
import { scratch } from './helpers.js';

const tmp = scratch();
afterAll(() => tmp.remove());

async function journalWith(n: number): Promise<BatchJournal> {
  const j = await BatchJournal.open(path.join(tmp.dir, `j-${Math.random().toString(36).slice(2)}.sqlite`), {
    create: true,
  });
  j.insertNumbers(Array.from({ length: n }, (_, i) => [`+1202555${String(100 + i).padStart(4, '0')}`, 'US'] as const));
  return j;
}

describe('CommitQueue', () => {
  it('claims and answers in one commit; an answer counts once committed', async () => {
    const j = await journalWith(3);
    const q = new CommitQueue(j);
    expect(q.commit([1, 2])).toEqual([1, 2]);
    expect(j.summaryCounts()).toMatchObject({ in_flight: 2, queued: 1 });
    q.push(() => j.recordFinal(1, localAnswer('invalid', 'x', 'y')));
    q.countAnswer();
    expect(q.answered).toBe(0);
    expect(q.commit([3])).toEqual([3]);
    expect(q.answered).toBe(1);
    expect(j.summaryCounts()).toMatchObject({ done: 1, in_flight: 2 });
    j.close();
  });

  it('a failing commit is rolled back whole: no claim, no answer; the failure is kept and the answers are unstored', async () => {
    const j = await journalWith(2);
    const q = new CommitQueue(j);
    q.commit([1]);
    q.push(() => j.recordFinal(1, localAnswer('invalid', 'x', 'y')));
    q.countAnswer();
    q.push(() => {
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    });
    expect(q.commit([2])).toEqual([]);
    expect(q.failure?.message).toMatch(/disk is full|cannot write/);
    expect(q.unstored).toBe(1);
    expect(q.answered).toBe(0);
    expect(j.summaryCounts()).toMatchObject({ in_flight: 1, queued: 1, done: 0 });
    j.close();
  });
});
