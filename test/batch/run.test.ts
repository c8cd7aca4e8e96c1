// The batch use case without the command: options and injected dependencies in, typed events out, a result back.
// The stop/resume matrix — (429, budget, interrupt, service down) × (bare rerun, rerun with other non-answer options,
// --restart) — asserted on the sandbox's request log: nothing charged is sent twice unless --restart, every row
// finished. dnc reaches the sandbox through a relay that can take the service down (test/helpers/service-proxy.ts).
import { PassThrough } from 'node:stream';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { BatchJournal } from '../../src/journal/journal.js';
import { renderBatchOutput } from '../../src/results/render.js';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runBatchJob } from '../../src/batch/run.js';
import type { BatchEvent, BatchOptions, BatchRunResult } from '../../src/batch/job.js';
import type { GlobalFlags } from '../../src/config.js';
import { createContext } from '../../src/context.js';
import { createTestIO } from '../../src/io.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { readCsvIndependently } from '../helpers/csv-oracle.js';
import { testInterrupts, type TestInterrupts } from '../helpers/interrupts.js';
import { serviceProxy, type ServiceProxy } from '../helpers/service-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { batchDeps, sandbox, scratch, scratchFolders, sha256 } from './helpers.js';
import { scrubRowsOf } from '../../src/compliance/batch-compliance.js';

let sb: Sandbox;
let proxy: ServiceProxy;
let env: Record<string, string>;
const tmp = scratch();
let n = 0;

beforeAll(async () => {
  ({ sb, env } = await sandbox());
  proxy = await serviceProxy(sb.baseUrl);
  env = { ...env, DNC_BASE_URL: proxy.baseUrl, ...scratchFolders(tmp.dir) };
});
beforeEach(async () => {
  sb.reset();
  sb.setCreditLimit(100_000);
  await proxy.up();
});
afterAll(async () => {
  await proxy.close();
  await sb.close();
  tmp.remove();
});

/** The early render's thread (BatchRunDeps.renderThreadFile): none unless a test gives the built one. */
let renderThreadFile: string | null = null;
/** The thread's module as tsc built it (npm test builds first): the sources run here have no bundle beside them. */
const BUILT_RENDER_WORKER = path.join(REPO_ROOT, 'dist', 'batch', 'early-render-worker.js');

const OPTIONS: BatchOptions = {
  concurrency: 4,
  webhookAll: false,
  allowInsecureWebhookUrl: false,
  maxCredits: null,
  dryRun: false,
  restart: false,
  header: true,
};

/** Runs the use case as a command would, recording its events; `interrupts` lets a test press Ctrl-C. */
async function run(
  input: string,
  options: Partial<BatchOptions>,
  interrupts: TestInterrupts = testInterrupts(),
  onEvent?: (e: BatchEvent) => void,
  flags: GlobalFlags = {},
  onOutput?: () => void,
) {
  const io = createTestIO();
  const ctx = createContext({ io, env, cwd: tmp.dir, interrupts }, flags);
  const events: BatchEvent[] = [];
  const stdout = new PassThrough();
  let out = '';
  stdout.setEncoding('utf8').on('data', (d: string) => {
    onOutput?.();
    out += d;
  });
  const given = new Set(Object.keys(options)) as BatchOptions['given'];
  const result = await runBatchJob(
    input,
    { ...OPTIONS, ...options, given },
    batchDeps(tmp.dir, env, ctx, {
      flags,
      interrupts,
      onEvent: (e) => {
        events.push(e);
        onEvent?.(e);
      },
      renderThreadFile,
      stdout,
    }),
  );
  return {
    result,
    events,
    out: () => out,
    text: events
      .filter((e) => 'text' in e)
      .map((e) => (e as { text: string }).text)
      .join('\n'),
  };
}

const finished = (r: BatchRunResult) => {
  if (r.kind !== 'finished') throw new Error(`expected a finished run, got ${r.kind}`);
  return r;
};

function list(count: number): { input: string; output: string } {
  const base = path.join(tmp.dir, `list-${++n}`);
  const rows = [
    'name,phone',
    ...Array.from({ length: count }, (_, i) => `c${i},+1202555${String(100 + i).padStart(4, '0')}`),
  ];
  writeFileSync(`${base}.csv`, `${rows.join('\n')}\n`);
  return { input: `${base}.csv`, output: `${base}.out.csv` };
}

const charged = () =>
  sb
    .lookups()
    .filter((l) => l.charged)
    .map((l) => l.phoneNumber);

describe('runBatchJob', () => {
  it('emits typed events (lines, lookups started, progress, ended) and returns the summary; it prints nothing itself', async () => {
    const { input, output } = list(6);
    const { result, events } = await run(input, { output });
    const r = finished(result);
    expect(r.summary.rows).toBe(6);
    expect(r.stopped).toBeNull();
    expect(r.resume).toBe(`dnc batch ${input} -o ${path.relative(tmp.dir, output)}`);
    const types = events.map((e) => e.type);
    expect(types).toContain('lookups-started');
    // A progress event after each commit of answers (and one more when reading ends after the first lookups went out).
    const progress = events
      .filter((e) => e.type === 'progress')
      .map((e) => (e as { progress: { answered: number } }).progress.answered);
    expect(progress.length).toBeGreaterThanOrEqual(6);
    expect(progress.at(-1)).toBe(6);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(types.indexOf('lookups-ended')).toBeGreaterThan(types.lastIndexOf('progress'));
    expect(events.find((e) => e.type === 'info')).toMatchObject({ text: expect.stringMatching(/^Reading /) });
  });

  it('reads on when the first numbers need no lookup (webhook-only, no URL): lookups for later ones still go out', async () => {
    // Reading waits for the first lookup to be on the wire; when the first rows are all answered locally none is
    // sent in the first turn, and reading must not wait for one (it would wait for ever).
    const base = path.join(tmp.dir, `list-${++n}`);
    const au = Array.from({ length: 40 }, (_, i) => `a${i},+6141234${String(5000 + i)}`);
    const us = Array.from({ length: 20 }, (_, i) => `u${i},+1202555${String(100 + i).padStart(4, '0')}`);
    writeFileSync(`${base}.csv`, `${['name,phone', ...au, ...us].join('\n')}\n`);
    const r = finished((await run(`${base}.csv`, { output: `${base}.out.csv` })).result);
    expect(r.summary.byResult.not_checked).toBe(40);
    expect(r.summary.byResult.callable + r.summary.byResult.do_not_call).toBe(20);
    expect(sb.lookups()).toHaveLength(20);
  });

  it('the credit guard weighs the list read so far, at least its first thousand numbers, though lookups begin after a few rows', async () => {
    const numbers = (count: number, from = 0) =>
      Array.from({ length: count }, (_, i) => `c${i},+1202${String(5550000 + from + i)}`);
    // Short: the whole list is read before the guard weighs it (no "so far").
    let base = path.join(tmp.dir, `guard-${++n}`);
    writeFileSync(`${base}.csv`, `${['name,phone', ...numbers(60)].join('\n')}\n`);
    sb.setCreditLimit(25);
    let warnings = (await run(`${base}.csv`, { output: `${base}.out.csv`, concurrency: 1 })).events
      .filter((e) => e.type === 'warning')
      .map((e) => (e as { text: string }).text);
    // ("about" once a run has learned what a US lookup costs, "at least" before.)
    expect(warnings.join('\n')).toMatch(
      /credits are short: 60 number\(s\) to look up need (at least|about) 60 credit\(s\)/,
    );
    expect(warnings.join('\n')).not.toContain('read so far');
    // Long: weighed once a thousand numbers or more are read, and said to be so far. (With no answer of the last day in
    // the results cache: one would have the list read whole first, to decide on paying again over all of it.)
    rmSync(path.join(env.XDG_CACHE_HOME!, 'dnc', 'results.sqlite'), { force: true });
    sb.reset();
    sb.setCreditLimit(500);
    base = path.join(tmp.dir, `guard-${++n}`);
    writeFileSync(`${base}.csv`, `${['name,phone', ...numbers(60_000, 100_000)].join('\n')}\n`);
    warnings = (await run(`${base}.csv`, { output: `${base}.out.csv`, maxCredits: 10 })).events
      .filter((e) => e.type === 'warning')
      .map((e) => (e as { text: string }).text);
    const weighed = Number(/credits are short: ([\d,]+) number\(s\)/.exec(warnings.join('\n'))?.[1]?.replace(/,/g, ''));
    expect(weighed).toBeGreaterThanOrEqual(1024);
    expect(warnings).toContain('dnc: (an estimate over the numbers read so far: the list is still being read)');
  });

  const stops: Array<{
    name: string;
    stop: (input: string, output: string) => Promise<BatchRunResult | null>;
    reason: string;
  }> = [
    {
      name: '429',
      reason: 'credit_limit',
      stop: async (input, output) => {
        sb.setCreditLimit(5);
        const r = (await run(input, { output })).result;
        sb.setCreditLimit(100_000);
        return r;
      },
    },
    {
      name: 'budget',
      reason: 'budget_reached',
      stop: async (input, output) => (await run(input, { output, maxCredits: 5 })).result,
    },
    {
      name: 'interrupt',
      reason: 'interrupted',
      stop: async (input, output) => {
        const interrupts = testInterrupts();
        let answered = 0;
        return (
          await run(
            input,
            { output, concurrency: 1 },
            interrupts,
            (e) => e.type === 'progress' && ++answered === 5 && interrupts.fire(),
          )
        ).result;
      },
    },
    {
      // The service goes away after five answers: lookups in progress are answered, later connections refused
      // (nothing of them reached the service), retried, then the run ends on the failure; it comes back for the rerun.
      name: 'service down',
      reason: 'service_failure',
      stop: async (input, output) => {
        proxy.downAfter(proxy.lookupsAnswered() + 5);
        // A fatal service error comes with the output written (the command prints the summary, then exits 6 with a resume hint).
        const stopped = finished((await run(input, { output }, testInterrupts(), undefined, { retries: 1 })).result);
        expect(stopped.stopped).toBe('service_failure');
        const err = stopped.fatal!;
        expect(err.code).toBe('E_NETWORK');
        expect(err.hint).toMatch(/to resume \(answered numbers are not sent again\)/);
        expect(proxy.isDown()).toBe(true);
        expect(
          readCsvIndependently(output)
            .slice(1)
            .filter((x) => x[4] === 'not_checked').length,
        ).toBeGreaterThan(0);
        await proxy.up();
        return null;
      },
    },
  ];
  const reruns: Array<{ name: string; options: Partial<BatchOptions>; paysAgain: boolean }> = [
    { name: 'bare rerun', options: {}, paysAgain: false },
    {
      name: 'rerun with other non-answer options',
      options: { concurrency: 2, maxCredits: null, callableOut: 'CALLABLE' },
      paysAgain: false,
    },
    { name: '--restart', options: { restart: true, maxCredits: null }, paysAgain: true },
  ];
  for (const s of stops) {
    for (const again of reruns) {
      it(`${s.name} × ${again.name}: ${again.paysAgain ? 'everything is looked up again, as asked' : 'no charged number is sent twice'}; every row finished`, async () => {
        const { input, output } = list(12);
        const stopped = await s.stop(input, output);
        if (stopped) expect(finished(stopped).stopped).toBe(s.reason);
        const paid = new Set(charged());
        expect(paid.size).toBeGreaterThan(0);
        expect(paid.size).toBeLessThan(12);
        const options = { ...again.options, output };
        if (options.callableOut) options.callableOut = `${output}.callable.csv`;
        const second = finished((await run(input, options)).result);
        if (s.name === 'budget' && again.name === 'bare rerun') {
          // The journal remembers the budget: a bare rerun keeps it, and spends nothing more.
          expect(second.stopped).toBe('budget_reached');
          expect(charged()).toHaveLength(paid.size);
          return;
        }
        expect(second.stopped).toBeNull();
        const all = charged();
        if (again.paysAgain) expect(all).toHaveLength(paid.size + 12);
        else {
          expect(all).toHaveLength(12);
          expect(new Set(all).size).toBe(12);
        }
        const rows = readCsvIndependently(output);
        expect(rows.slice(1).every((x) => x[4] === 'callable' || x[4] === 'do_not_call')).toBe(true);
        if (options.callableOut)
          expect(readCsvIndependently(options.callableOut).length).toBe(
            1 + rows.filter((x) => x[4] === 'callable').length,
          );
      });
    }
  }

  // A dry run of a stopped batch says what a rerun would cost: only the numbers without a final verdict, with the
  // options the journal remembers, reading the journal without changing it (or anything beside it).
  for (const s of stops.filter((x) => x.name !== 'interrupt')) {
    it(`--dry-run after a ${s.name} stop estimates only what a rerun sends, with the remembered options, and changes nothing`, async () => {
      const { input, output } = list(12);
      const stopped = await s.stop(input, output);
      if (stopped) expect(finished(stopped).stopped).toBe(s.reason);
      const paid = new Set(charged());
      const lookupsBefore = sb.lookups().length;
      const journal = `${output}.journal.sqlite`;
      const folder = () =>
        readdirSync(tmp.dir)
          .filter((f) => f.startsWith(path.basename(output)) || f.includes(path.basename(output, '.csv')))
          .sort();
      const filesBefore = folder();
      const journalBefore = sha256(journal);

      const dry = await run(input, { output, dryRun: true });
      if (dry.result.kind !== 'dry-run') throw new Error(`expected a dry run, got ${dry.result.kind}`);
      const { result } = dry.result.report;
      const toLookUp = 12 - paid.size;
      expect(result.resuming).toMatchObject({
        journal,
        numbers: 12,
        with_verdict: paid.size,
        pending: 0,
        to_look_up: toLookUp,
        not_sent: 0,
        unanswered: 0,
        credits_spent: paid.size,
      });
      // US costs 1 credit (learned by the stopped run): the estimate is exact.
      expect(result).toMatchObject({
        unique_numbers: 12,
        by_country: { US: toLookUp },
        estimated_credits: toLookUp,
        estimate_complete: true,
      });
      if (s.name === 'budget') {
        expect(dry.text).toContain(
          'Resuming with the options this batch was started with: --concurrency 4 --max-credits 5',
        );
        expect(dry.result.report.maxCredits).toBe(5);
      }
      expect(sb.lookups()).toHaveLength(lookupsBefore);
      expect(folder()).toEqual(filesBefore);
      expect(sha256(journal)).toBe(journalBefore);

      // The rerun sends exactly what the dry run counted, and spends what it estimated.
      const again = finished((await run(input, { output, maxCredits: null })).result);
      expect(again.stopped).toBeNull();
      expect(
        sb
          .lookups()
          .slice(lookupsBefore)
          .filter((l) => l.charged),
      ).toHaveLength(toLookUp);
      expect(again.creditsThisRun).toBe(result.estimated_credits);
      expect(again.unansweredSends).toBe(0);
    });
  }
});

// The outputs are rendered while the lookups run (src/batch/render.ts renderEarly): each row once its number is
// done, on the batch's thread or in a worker thread of its own (src/batch/early-render-thread.ts, as the installed
// dnc does). The oracle is the render after the lookups, which the journal can always be given again: the files
// must be the same, byte for byte.
describe.each([
  ["on the batch's thread", null],
  ['in a worker thread', BUILT_RENDER_WORKER],
])('the render while the lookups run, %s', (_, threadFile) => {
  beforeEach(() => {
    renderThreadFile = threadFile;
    // A thread is started only while the batch's thread mostly waits for answers, and for lookups that will take
    // a second more (it takes ≈ 0.1–0.2 s to be ready): answers held 60 ms make these runs so.
    proxy.delay(threadFile ? 60 : 0);
  });
  afterAll(() => {
    renderThreadFile = null;
    proxy.delay(0);
  });
  const debugLines = (events: BatchEvent[]) =>
    events.filter((e) => e.type === 'debug').map((e) => (e as { text: string }).text);
  const rendered = (output: string) =>
    [output, `${output}.callable.csv`, `${output}.suppressed.csv`].map((f) => readFileSync(f).toString('base64'));
  async function renderAgain(output: string): Promise<void> {
    const journal = await BatchJournal.open(`${output}.journal.sqlite`, { create: false });
    try {
      await renderBatchOutput(journal, { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
    } finally {
      journal.close();
    }
  }
  /** A list with repeated numbers, rows that cannot be valid and a blank line, in a shuffled order. */
  function mixedList(rows: number): { input: string; output: string } {
    const base = path.join(tmp.dir, `mixed-${++n}`);
    const lines = ['name,phone'];
    for (let i = 0; i < rows; i++) {
      if (i % 17 === 5) lines.push(`bad${i},12`);
      else if (i % 23 === 7) lines.push('');
      else lines.push(`c${i},+1202555${String(100 + ((i * 7) % Math.ceil(rows / 2))).padStart(4, '0')}`);
    }
    writeFileSync(`${base}.csv`, `${lines.join('\r\n')}\r\n`);
    return { input: `${base}.csv`, output: `${base}.out.csv` };
  }
  const temps = (output: string) =>
    readdirSync(path.dirname(output)).filter((f) => f.startsWith(`.${path.basename(output)}`) && f.endsWith('.tmp'));

  it('writes the same files as a render after the lookups, byte for byte (repeats, invalid rows, a blank line)', async () => {
    const { input, output } = mixedList(300);
    const { result, events } = await run(
      input,
      { output, callableOut: `${output}.callable.csv`, suppressedOut: `${output}.suppressed.csv` },
      testInterrupts(),
      undefined,
      { verbose: true },
    );
    finished(result);
    expect(debugLines(events)).toContain('the outputs were rendered while the lookups ran');
    expect(debugLines(events).includes('the outputs are rendered in a thread of their own while the lookups run')).toBe(
      threadFile !== null,
    );
    const early = rendered(output);
    await renderAgain(output);
    expect(rendered(output)).toEqual(early);
    expect(readCsvIndependently(output)).toHaveLength(301);
    expect(temps(output)).toEqual([]);
  });

  it('stopped by a 429: the rows not checked come out as a render after the lookups writes them', async () => {
    const { input, output } = mixedList(400);
    sb.setCreditLimit(120);
    const { result, events } = await run(
      input,
      { output, callableOut: `${output}.callable.csv`, suppressedOut: `${output}.suppressed.csv` },
      testInterrupts(),
      undefined,
      { verbose: true },
    );
    expect(finished(result).stopped).toBe('credit_limit');
    expect(debugLines(events)).toContain('the outputs were rendered while the lookups ran');
    expect(debugLines(events).includes('the outputs are rendered in a thread of their own while the lookups run')).toBe(
      threadFile !== null,
    );
    const early = rendered(output);
    expect(readCsvIndependently(output).filter((r) => r[4] === 'not_checked').length).toBeGreaterThan(0);
    await renderAgain(output);
    expect(rendered(output)).toEqual(early);
  });

  it('another process changes a verdict already written (as dnc listen does with a conflicting push): finish() gives up, and the render after shows the change', async () => {
    const { input, output } = list(40);
    finished((await run(input, { output })).result);
    const journal = await BatchJournal.open(`${output}.journal.sqlite`, { create: false });
    try {
      const { renderEarly } = await import('../../src/results/render.js');
      const { renderEarlyInThread } = await import('../../src/batch/early-render-thread.js');
      const begin = () =>
        threadFile
          ? renderEarlyInThread(journal, threadFile, 'test')
          : renderEarly(journal, Promise.resolve(), { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
      /** Until the render has begun (its temporary file is there): the journal is changed after that. */
      const begun = () =>
        waitFor(() => temps(output).length > 0, { ms: 30_000, everyMs: 20, what: 'the early render to begin' });
      // Unchanged meanwhile: the early render is the render.
      let early = begin();
      await begun();
      expect(await early.finish()).not.toBeNull();
      const written = readFileSync(output, 'utf8');
      await renderBatchOutput(journal, { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
      expect(readFileSync(output, 'utf8')).toBe(written);
      // Changed meanwhile: the rows written early may be stale.
      early = begin();
      await begun();
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); // it writes every row, then waits
      const other = new Database(`${output}.journal.sqlite`);
      const was = (other.prepare('SELECT result FROM numbers WHERE id = 1').get() as { result: string }).result;
      const flippedTo = was === 'callable' ? 'do_not_call' : 'callable';
      other
        .prepare('UPDATE numbers SET result = ?, do_not_call = ? WHERE id = 1')
        .run(flippedTo, flippedTo === 'do_not_call' ? 1 : 0);
      other.close();
      expect(await early.finish()).toBeNull();
      expect(early.droppedBecause).toBe('another process wrote to the journal meanwhile');
      expect(temps(output)).toEqual([]);
      await renderBatchOutput(journal, { scrubRows: scrubRowsOf, tzdataVersion: 'test' });
      const rows = readCsvIndependently(output);
      expect(rows).toHaveLength(41);
      expect(rows[1]![4]).toBe(flippedTo);
    } finally {
      journal.close();
    }
  });

  it('standard output as the output: written at the end only (a stream cannot take back rows when the run stops)', async () => {
    const { input } = list(8);
    // (--restart: the same 8 numbers' journal, kept by name of the list's content, may be there from another test.)
    let seen = 0;
    let endedAt = -1;
    let firstRowAt = -1;
    const { result, events, out } = await run(
      input,
      { output: '-', restart: true },
      testInterrupts(),
      (e) => {
        seen++;
        if (e.type === 'lookups-ended' && endedAt < 0) endedAt = seen;
      },
      { verbose: true },
      () => {
        if (firstRowAt < 0) firstRowAt = seen;
      },
    );
    finished(result);
    // Nothing reached standard output before the lookups ended (whether an early render was tried and dropped,
    // or the lookups ended before one could begin).
    expect(endedAt).toBeGreaterThan(0);
    expect(firstRowAt).toBeGreaterThanOrEqual(endedAt);
    const dropped = debugLines(events).filter((l) => l.startsWith('the outputs are rendered after the lookups'));
    expect(dropped.every((l) => /not a regular file/.test(l))).toBe(true);
    expect(out().trim().split('\n')).toHaveLength(9);
  });

  it('an .xlsx output: written after the lookups, whether they end before the render could begin or after', async () => {
    for (const rows of [2, 60]) {
      const { input, output } = list(rows);
      const xlsx = output.replace(/\.csv$/, '.xlsx');
      const { result, events } = await run(input, { output: xlsx }, testInterrupts(), undefined, { verbose: true });
      expect(finished(result).summary.rows).toBe(rows);
      const lines = debugLines(events);
      expect(
        lines.includes('the outputs were rendered while the lookups ran') ||
          lines.some((l) => /is a workbook: it is written after the lookups$/.test(l)),
      ).toBe(true);
      expect(temps(xlsx)).toEqual([]);
    }
  });

  it('a second Ctrl-C: nothing rendered, and no temporary file left behind', async () => {
    const { input, output } = list(40);
    const interrupts = testInterrupts();
    let answers = 0;
    const { result } = await run(input, { output, concurrency: 2 }, interrupts, (e) => {
      if (e.type === 'progress' && ++answers === 6) {
        interrupts.fire();
        interrupts.fire();
      }
    });
    expect(result.kind).toBe('abandoned');
    expect(temps(output)).toEqual([]);
  });
});
