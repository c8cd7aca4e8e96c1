// Issue 46: a clock here that disagrees with the service's. An answer is judged by the service's own clock (its Date
// header) when this machine's is behind it, the disagreement is said once, and a run whose answers could only be
// refused for it stops after the first, naming the clock, rather than pay for them all.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs module shared with the soak (bench/soak.mjs), typed by use.
import { honestDoNotCall } from '../../bench/hostile-service.mjs';
import { runDnc } from '../helpers/cli.js';
import { hostileWorld } from './hostile-world.js';

const world = hostileWorld();
const { machine, list, rowsOf } = world;

const SLOW_HERE = /this machine's clock is 10 min behind the service's \(the service's Date header says /g;
const numbers = ['+12025550161', '+12025550162', '+12025550163'];
const honest = numbers.map((p) => (honestDoNotCall(p) ? 'do_not_call' : 'callable'));

describe("this machine's clock 10 minutes slow, the service's Date agreeing with its answers", () => {
  it('check keeps the verdict, and says once which clock is behind and by how much', async () => {
    const m = machine();
    world.svc.setBehaviour('clock-ahead');
    const r = await runDnc(['check', '+12025550107', '+12025550108', '--json'], { env: m.env });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.do_not_call)).toEqual([false, true]);
    expect(r.stderr.match(SLOW_HERE)).toHaveLength(1);
  });

  it('a batch keeps every verdict, says it once, and nothing is failed', async () => {
    const m = machine();
    world.svc.setBehaviour('clock-ahead');
    const out = path.join(m.dir, 'out.csv');
    const r = await runDnc(['batch', list(m.dir, numbers), '-o', out, '--concurrency', '1'], { env: m.env });
    expect(r.code, r.stderr).toBe(0);
    expect(rowsOf(out).map((x) => x.dnc_result)).toEqual(honest);
    expect(r.stderr.match(SLOW_HERE)).toHaveLength(1);
  });
});

describe("this machine's clock 10 minutes slow, and a verdict dated 2099 by the service all the same", () => {
  it('is refused alone (no verdict, exit 6), not blamed on the clocks: the next number is sent', async () => {
    const m = machine();
    world.svc.setBehaviour('clock-ahead-2099');
    const before = world.svc.lookups().length;
    const r = await runDnc(['check', '+12025550107', '+12025550109'], { env: m.env });
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr).toContain('E_BAD_RESPONSE');
    expect(r.stderr).not.toContain('E_CLOCK_SKEW');
    expect(r.stderr.match(SLOW_HERE)).toHaveLength(1);
    expect(world.svc.lookups().slice(before)).toEqual(['+12025550107', '+12025550109']);
  });
});

describe('answers dated beyond any clock dnc can believe stop the run after the first, naming the clock', () => {
  it.each([
    [
      'clock-ahead-no-date',
      /dated .* 10 min after this machine's clock .* no Date header to tell which clock is wrong/,
    ],
    ['clock-ahead-2h', /this machine's clock is 2 h behind the service's/],
  ])('%s: check exits 6 with E_CLOCK_SKEW and sends no second number', async (behaviour, says) => {
    const m = machine();
    world.svc.setBehaviour(behaviour);
    const before = world.svc.lookups().length;
    const r = await runDnc(['check', '+12025550107', '+12025550109'], { env: m.env });
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr).toContain('E_CLOCK_SKEW');
    expect(r.stderr).toMatch(says);
    expect(world.svc.lookups().slice(before)).toEqual(['+12025550107']);
  });

  it.each(['clock-ahead-no-date', 'clock-ahead-2h'])(
    '%s: a batch stops after its first answer (failed / bad_response), the rest not sent; fixed, the rerun sends them',
    async (behaviour) => {
      const m = machine();
      world.svc.setBehaviour(behaviour);
      const input = list(m.dir, numbers);
      const out = path.join(m.dir, 'out.csv');
      const before = world.svc.lookups().length;
      const r = await runDnc(['batch', input, '-o', out, '--concurrency', '1', '--json'], { env: m.env });
      expect(r.code, r.stderr).toBe(6);
      expect(JSON.parse(r.stdout)).toMatchObject({
        stopped_reason: 'service_failure',
        error: { code: 'E_CLOCK_SKEW', exit_status: 6 },
        failed: 1,
        not_checked: 2,
      });
      expect(world.svc.lookups().slice(before)).toEqual(numbers.slice(0, 1));
      expect(rowsOf(out).map((x) => [x.dnc_result, x.dnc_error_code])).toEqual([
        ['failed', 'bad_response'],
        ['not_checked', 'service_failure'],
        ['not_checked', 'service_failure'],
      ]);
      world.svc.setBehaviour('honest');
      const again = await runDnc(['batch', input, '-o', out, '--concurrency', '1'], { env: m.env });
      expect(world.svc.lookups().slice(before)).toEqual([numbers[0], ...numbers.slice(1)]);
      expect(rowsOf(out).map((x) => x.dnc_result)).toEqual(['failed', ...honest.slice(1)]);
      expect(again.code, again.stderr).toBe(7);
    },
  );
});
