// A batch run over its journal, as explicit stages: read → plan → look up → write, then settle whatever happened.
// Each stage is a function of one typed context (./context.ts) with its own error path; the journal's lock is held
// from before the journal opens to after it closes.
import { existsSync } from 'node:fs';
import { DncError, ExitCode, usageError } from '../../errors.js';
import { deleteJournalFiles } from '../../journal/files.js';
import { acquireJournalLock } from '../../journal/journal.js';
import { lockHolder } from '../../journal/lock.js';
import { isBatchJournalFile } from '../../journal/views.js';
import type { BatchRunResult, RunContext } from '../job.js';
import { startRun, type BatchJob, type BatchRun } from './context.js';
import { lookUpStage } from './look-up.js';
import { planStage } from './plan.js';
import { openStage, readStage } from './read.js';
import { settleStage } from './settle.js';
import { writeStage, writeStoppedStage } from './write.js';

export async function runBatchJournal(job: BatchJob): Promise<BatchRunResult> {
  await readyJournalPath(job.ctx, job.journalPath, job);
  // A list refused at its first read (malformed, a workbook bomb) must not leave an empty journal made by this run.
  const journalIsNew = !existsSync(job.journalPath);
  const lock = acquireJournalLock(job.journalPath, job.ctx.lockDeps);
  const run = startRun(job);
  let discardJournal = false;
  try {
    const open = await openStage(run);
    const read = await readStage(open);
    const plan = await planStage(open, read);
    const looked = await lookUpStage(open, plan);
    if (looked.kind === 'abandoned') return { kind: 'abandoned' };
    if (looked.kind === 'stopped') return await writeStoppedStage(open, plan, looked);
    return await writeStage(open, plan, looked);
  } catch (err) {
    discardJournal = journalIsNew && leftEmpty(run, err);
    throw err;
  } finally {
    await settleStage(run);
    lock.release();
    if (discardJournal) deleteJournalFiles(job.journalPath);
  }
}

/** An input refused (exit 3) before anything was read into a journal this run made, or sent from it. */
function leftEmpty(run: BatchRun, err: unknown): boolean {
  const refusedInput = err instanceof DncError && err.exitCode === ExitCode.INPUT;
  const c = refusedInput ? run.journal?.summaryCounts() : undefined;
  return c !== undefined && c.in_flight + c.done + c.pending === 0 && c.credits === 0;
}

/**
 * Before the journal is opened: a file at its path that is not a dnc journal (a list given as --journal, say) is never
 * deleted or written over; --restart removes the journal, unless a batch or a listener holds it.
 */
async function readyJournalPath(
  ctx: RunContext,
  journalPath: string,
  { options }: Pick<BatchJob, 'options'>,
): Promise<void> {
  if (existsSync(journalPath) && !(await isBatchJournalFile(journalPath))) {
    throw usageError(
      'E_PATH_COLLISION',
      `${journalPath} is not a dnc batch journal: dnc will not write over it${options.restart ? ' or delete it' : ''}`,
      {
        hint:
          options.journal !== undefined
            ? 'give --journal a new file name'
            : 'move that file away, or give -o another name',
      },
    );
  }
  if (options.restart && existsSync(journalPath)) {
    const holder = lockHolder(journalPath, ctx.lockDeps);
    if (holder !== null) {
      throw usageError('E_JOURNAL_BUSY', `cannot restart: another dnc batch (pid ${holder}) is using ${journalPath}`, {
        hint: 'stop it first (Ctrl-C), then run with --restart again',
      });
    }
    // A listener would go on acknowledging pushes into the removed journal: those results would be lost.
    const listener = lockHolder(journalPath, ctx.lockDeps, 'listen');
    if (listener !== null) {
      throw usageError(
        'E_JOURNAL_BUSY',
        `cannot restart: dnc listen (pid ${listener}) is storing pushes in ${journalPath}`,
        {
          hint: 'stop it first (Ctrl-C; the pushes it has are kept until then), then run with --restart again',
        },
      );
    }
    deleteJournalFiles(journalPath);
    ctx.info(`--restart: removed the journal ${journalPath}`);
  }
}
