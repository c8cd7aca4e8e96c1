// One count of the numbers a batch looks up: the reading line, the progress line's denominator and --json
// credit_estimate agree, and none counts numbers of a webhook-only country (AU) the run does not send without
// --webhook-url.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnc, json, lookedUp, world, type World } from '../helpers/world.js';

let w: World;

beforeAll(async () => {
  w = await world();
  w.file('crm.csv', [
    'Name,Mobile Phone,Country',
    'a,+12025550100,US',
    'b,+61412345001,AU',
    'c,+12025550102,US',
    'd,+61412345002,AU',
    'e,+442079460100,GB',
  ]);
});
afterAll(() => w.cleanup());

const run = (argv: string[]) => dnc(argv, w.env, { cwd: w.dir });

describe('numbers to look up', () => {
  it('the reading line, the progress denominator and credit_estimate leave out AU numbers without a webhook', async () => {
    const first = await run(['--json', 'batch', 'crm.csv']);
    expect(first.stderr).toContain(
      '5 row(s), 5 distinct number(s), 3 to look up (2 of AU not sent: they need --webhook-url), 0 row(s) with a ' +
        'number that cannot be valid (not sent)',
    );
    expect(json(first.stdout).credit_estimate).toMatchObject({ numbers_to_look_up: 3 });
    expect(lookedUp(w.sb)).toHaveLength(3);
    // Read whole before the first lookup (answers of the last day are weighed first): the progress line counts 3.
    const again = await run(['batch', 'crm.csv', '-o', 'again.csv', '--no-reuse']);
    const progress = again.stderr.split('\n').filter((l) => / numbers · /.test(l));
    expect(progress.length, again.stderr).toBeGreaterThan(0);
    for (const line of progress) expect(line).toMatch(/^\d+\/3 numbers · /);
    const third = await run(['--json', 'batch', 'crm.csv', '-o', 'third.csv', '--no-reuse']);
    expect(json(third.stdout).credit_estimate).toMatchObject({ numbers_to_look_up: 3 });
    expect(lookedUp(w.sb)).toHaveLength(9);
  });
});
