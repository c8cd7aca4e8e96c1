// What verify, window, report and status say is to re-check, on a list of several phone columns: rows counted as rows
// (a row of two failed numbers is one row), a do_not_call row's numbers without a verdict left aside (no verdict of
// theirs makes the row callable), and a way out for numbers of a webhook-only country that names --webhook-url.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnc, json, world, type World } from '../helpers/world.js';

let w: World;
let results: string;

beforeAll(async () => {
  // …995 numbers answer billing_error (charged) at every attempt; AU answers by webhook only.
  w = await world();
  w.file('crm.csv', [
    'Name,Mobile Phone,Home Phone',
    'Ann,+12025550100,',
    'Bob,+12025550101,+12025550995',
    'Cy,+12025551995,',
    'Dee,+61412345001,',
    'Eve,+12025552995,+12025553995',
  ]);
  results = path.join(w.dir, 'crm.results.csv');
});
afterAll(() => w.cleanup());

const run = (argv: string[]) => dnc(argv, w.env, { cwd: w.dir });

describe('rows to re-check', () => {
  it('counts rows, leaves a do_not_call row aside, and names --webhook-url for AU numbers', async () => {
    const batch = await run(['batch', 'crm.csv']);
    expect([6, 7]).toContain(batch.code);
    const day = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const window = [
      'window',
      results,
      '--from',
      `${day}T14:00:00Z`,
      '--until',
      `${day}T16:00:00Z`,
      '--dial-out',
      path.join(w.dir, 'slot.txt'),
    ];
    const because =
      '4 number(s) on 3 row(s) to re-check (3 failed, 1 not_checked); 1 number(s) without a verdict (1 failed) on 1 ' +
      'do_not_call row(s) left aside: no verdict of theirs can make such a row callable, and a dialler never gets ' +
      'them (only dnc_callable_numbers)';
    const webhook =
      'not_checked rows: 1 number(s) of AU are looked up only with a webhook: `dnc batch crm.csv -o ' +
      'crm.results.csv --webhook-url URL` sends them, with `dnc listen` receiving the answers at URL (a rerun ' +
      'without it leaves them not_checked)';
    const said: Array<Record<string, any>> = [];
    for (const argv of [['verify', results], window, ['report', results]])
      said.push(json((await run(['--json', ...argv])).stdout));
    said.push(json((await run(['--json', 'status', results])).stdout).files[0]);
    for (const j of said) {
      expect(j.not_fit_because).toBe(because);
      expect(j.way_out).toContain(webhook);
      // The bare rerun looks up nothing more: no line says it does.
      expect(j.way_out.join('\n')).not.toContain('looks up the');
    }
    const verify = (await run(['verify', results])).stdout;
    expect(verify).toContain(`NOT FIT TO DIAL: ${because}\n`);
    expect(verify).toContain('\n  4 number(s) on 3 row(s) to re-check (3 failed, 1 not_checked)\n');
    expect(json((await run(['--json', 'verify', results])).stdout)).toMatchObject({
      recheck_count: 4,
      recheck_rows: 3,
      settled_unfinished: { rows: 1, numbers: 1, by_reason: { failed: 1 } },
    });
  });
});
