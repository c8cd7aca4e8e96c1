// The options a batch run reads come from its journal (optionsOfJournal): what the journal remembers, each option kept
// once in the meta, over what the command line gives for this run only. Journals of older formats read the same.
import { describe, expect, it } from 'vitest';
import { optionsOfJournal, rememberedRun } from '../../src/batch/options.js';
import type { BatchOptions } from '../../src/batch/job.js';
import { rememberedOf, type BatchMeta } from '../../src/journal/types.js';

const given: BatchOptions = {
  output: 'out.csv',
  column: ['Phone'],
  concurrency: 8,
  webhookUrl: undefined,
  webhookAll: false,
  allowInsecureWebhookUrl: false,
  maxCredits: 50,
  dryRun: false,
  restart: true,
  header: true,
  callableOut: 'callable.csv',
  reuseWithinMs: null,
  noReuse: false,
  escapeFormulas: true,
  format: 'csv',
  compliance: { suppressionList: 'list.sqlite' },
  resendUnanswered: true,
  resendFailed: true,
  journal: 'j.sqlite',
};

/** The meta a batch writes for `options` (the parts rememberedOf reads), with the outputs at their resolved paths. */
function metaOf(options: BatchOptions, run: BatchMeta['run'] = rememberedRun(options)): BatchMeta {
  return {
    schema: 1,
    inputPath: '/w/in.csv',
    inputSha256: '',
    inputSize: 0,
    outputPath: '/w/out.csv',
    callableOut: '/w/callable.csv',
    suppressedOut: null,
    options: {
      country: null,
      delimiter: ',',
      header: true,
      phoneIndex: 0,
      webhookUrl: options.webhookUrl ?? null,
      webhookAll: options.webhookAll,
    },
    layout: { recordDelimiter: '\n', header: ['Phone'], columnCount: 1, phoneLabel: 'Phone', bom: false },
    createdAt: '2026-11-28T12:00:00.000Z',
    serviceOrigin: 'http://127.0.0.1:1',
    escapeFormulas: options.escapeFormulas,
    reviewOut: null,
    dialOut: '/w/dial.txt',
    outputFormat: options.format,
    run,
  };
}

describe('the options a run reads from its journal', () => {
  it('keeps each output option once in the meta: `run` holds none of them, rememberedOf reads them back', () => {
    const run = rememberedRun(given);
    for (const key of ['callableOut', 'suppressedOut', 'reviewOut', 'dialOut', 'escapeFormulas', 'format'])
      expect(run).not.toHaveProperty(key);
    expect(run).not.toHaveProperty('webhookUrl');
    expect(rememberedOf(metaOf(given))).toMatchObject({
      callableOut: '/w/callable.csv',
      dialOut: '/w/dial.txt',
      escapeFormulas: true,
      format: 'csv',
      maxCredits: 50,
      compliance: { suppressionList: 'list.sqlite' },
    });
  });

  it('takes what the plan settled, and the outputs at their resolved paths; this run’s own flags stay', () => {
    const meta = metaOf(given);
    // What the plan writes when "pay again" is answered on a terminal (src/batch/repay.ts).
    meta.run = { ...meta.run, reuseWithinMs: null, noReuse: true };
    const o = optionsOfJournal(given, meta);
    expect(o.noReuse).toBe(true);
    expect(o.reuseWithinMs).toBeNull();
    expect(o.callableOut).toBe('/w/callable.csv');
    expect(o.dialOut).toBe('/w/dial.txt');
    expect(o.maxCredits).toBe(50);
    // Consent for one run, and where this run's files are: never from the journal.
    expect(o).toMatchObject({ restart: true, resendUnanswered: true, resendFailed: true, journal: 'j.sqlite' });
  });

  it('reads a journal that repeats the outputs in `run` (schema 5) and one of a single phone column', () => {
    const old = metaOf(given, {
      ...rememberedRun(given),
      column: 'Phone',
      callableOut: '/w/callable.csv',
      escapeFormulas: true,
      format: 'csv',
      webhookUrl: null,
      webhookAll: false,
    });
    const o = optionsOfJournal({ ...given, column: ['Other'] }, old);
    expect(o.column).toEqual(['Phone']);
    expect(o.callableOut).toBe('/w/callable.csv');
    expect(o.escapeFormulas).toBe(true);
  });

  it('leaves an option the journal does not remember as given, and the options alone when it remembers none', () => {
    const meta = metaOf(given);
    const { maxCredits: _, ...withoutBudget } = meta.run!;
    meta.run = withoutBudget;
    expect(optionsOfJournal({ ...given, maxCredits: 7 }, meta).maxCredits).toBe(7);
    const none = { ...metaOf(given), run: undefined };
    expect(optionsOfJournal(given, none)).toBe(given);
    expect(optionsOfJournal(given, null)).toBe(given);
  });
});
