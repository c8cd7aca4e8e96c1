// A rerun over a list answered within the last day says what it paid again: the verdicts (which --reuse-within 1d
// reuses) and the charged answers without a verdict (billing_error, invalid_phone_number), which no cache keeps, so
// the note and --json paid_again add up to the credits the run used.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnc, json, world, type World } from '../helpers/world.js';

let w: World;

beforeAll(async () => {
  // …995 answers billing_error (charged) at every attempt; …0990 invalid_phone_number (charged).
  w = await world();
  w.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550101', 'c,+12025550995', 'd,+12025550990']);
});
afterAll(() => w.cleanup());

const run = (argv: string[]) => dnc(argv, w.env, { cwd: w.dir });

describe('paid again', () => {
  it('counts the charged answers without a verdict a rerun pays for again', async () => {
    const first = await run(['--json', 'batch', 'calls.csv']);
    expect(json(first.stdout)).toMatchObject({ credits_used: 4, paid_again: null });

    const again = await run(['--json', 'batch', 'calls.csv', '-o', 'again.csv']);
    expect(json(again.stdout)).toMatchObject({
      credits_used: 4,
      paid_again: {
        numbers: 2,
        credits: 2,
        chosen: false,
        hint: '--reuse-within 1d would have reused them',
        charged_without_verdict: { numbers: 2, credits: 2 },
      },
    });
    const text = await run(['batch', 'calls.csv', '-o', 'text.csv']);
    expect(text.stdout).toContain(
      '2 number(s) answered within the last day were paid again (2 credit(s)); --reuse-within 1d would have reused ' +
        'them; another 2 credit(s) went on 2 charged answer(s) without a verdict (billing_error, ' +
        'invalid_phone_number): no cache keeps them, so every run pays for them again\n',
    );

    const reused = await run(['--json', 'batch', 'calls.csv', '-o', 'reused.csv', '--reuse-within', '1d']);
    expect(json(reused.stdout)).toMatchObject({
      credits_used: 2,
      paid_again: { numbers: 0, credits: 0, hint: null, charged_without_verdict: { numbers: 2, credits: 2 } },
    });
  });
});
