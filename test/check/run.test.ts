// The check use case without the command: given numbers and options in, one typed event per number out, a tally
// back; against the sandbox over loopback, with the internal list kept in a scratch state folder.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCheck, type CheckEvent, type CheckOptions } from '../../src/check/run.js';
import { createContext } from '../../src/context.js';
import { createTestIO } from '../../src/io.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { sandboxForFile, scratchFolders } from '../batch/helpers.js';
import { runDnc } from '../helpers/cli.js';
import { testInterrupts } from '../helpers/interrupts.js';

const file = sandboxForFile();
const tmp = { dir: file.dir };
let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  sb = file.sb;
  env = { ...file.env, ...scratchFolders(tmp.dir) };
  const added = await runDnc(['suppress', 'add', '+12025550102', '--reason', 'asked not to be called'], {
    env,
    homedir: tmp.dir,
  });
  expect(added.code, added.stderr).toBe(0);
});
beforeEach(() => {
  sb.setCreditLimit(1000);
});

const OPTIONS: CheckOptions = { validate: true, allowInsecureWebhookUrl: false };

async function check(
  numbers: string[],
  options: Partial<CheckOptions> = {},
  clock: { now?: () => Date; tzdataVersion?: string } = {},
) {
  const interrupts = testInterrupts();
  const ctx = createContext({ io: createTestIO(), env, cwd: tmp.dir, homedir: tmp.dir, interrupts }, {});
  const events: CheckEvent[] = [];
  const result = await runCheck(
    {
      flags: {},
      env,
      homedir: tmp.dir,
      cwd: tmp.dir,
      now: clock.now ?? (() => new Date()),
      tzdataVersion: clock.tzdataVersion ?? 'test',
      interrupts,
      serviceConfig: () => ctx.serviceConfig(),
      createClient: (o) => ctx.createClient(o),
      stores: () => ctx.stores(),
      onEvent: (e) => events.push(e),
    },
    numbers.map((input) => ({ input, where: '' })),
    { ...OPTIONS, ...options },
  );
  return { result, events };
}

const lookedUp = () => sb.lookups().map((l) => l.phoneNumber);

describe('runCheck', () => {
  it('tells each number as a typed event: the internal list first (never sent), then the verdicts', async () => {
    const { result, events } = await check(['+12025550102', '+12025550100', '+12025550101', '+12025550100']);
    const perNumber = events.filter((e) => 'number' in e);
    expect(perNumber.map((e) => [e.type, 'number' in e ? e.number.phone.e164 : ''])).toEqual([
      ['suppressed', '+12025550102'],
      ['answered', '+12025550100'],
      ['answered', '+12025550101'],
    ]);
    const answered = perNumber.filter((e) => e.type === 'answered');
    expect(answered.map((e) => e.outcome.kind === 'succeeded' && e.outcome.body.do_not_call)).toEqual([false, true]);
    expect(events).toContainEqual({ type: 'info', text: '1 repeated number(s) will be looked up once' });
    // The number on the list and the repeat cost nothing: two lookups, two credits.
    expect(lookedUp()).toEqual(['+12025550100', '+12025550101']);
    expect(result).toMatchObject({ numbers: 3, interrupts: 0 });
    expect(result.tally).toMatchObject({ callable: 1, listed: 1, internal: 1, credits: 2, errors: 0, notSent: 0 });
  });

  it('a request refused for the account (the credit limit) stops the rest: the others are told not sent', async () => {
    sb.setCreditLimit(1);
    const { result, events } = await check(['+12025550100', '+12025550104', '+12025550105']);
    expect(events.filter((e) => e.type !== 'info' && e.type !== 'debug').map((e) => e.type)).toEqual([
      'answered',
      'request_error',
      'not_sent',
    ]);
    const refused = events.find((e) => e.type === 'request_error');
    expect(refused?.type === 'request_error' && refused.error.exitCode).toBe(5);
    expect(events.find((e) => e.type === 'not_sent')).toEqual({
      type: 'not_sent',
      numbers: ['+12025550105'],
      interrupted: false,
    });
    expect(result.tally).toMatchObject({ callable: 1, errors: 1, notSent: 1 });
  });

  it('refuses the whole list before sending anything when one number cannot be valid', async () => {
    await expect(check(['+12025550100', '+1202555'])).rejects.toMatchObject({ code: 'E_INVALID_NUMBER' });
    expect(lookedUp()).toEqual([]);
  });

  it("carries each number's calling window at the injected clock, naming the injected tz database", async () => {
    // Wednesday 1 July 2026, 11:00 in Washington DC; the internal list's number gets its window too.
    const at = new Date('2026-07-01T15:00:00Z');
    const { events } = await check(['+12025550102', '+12025550100'], {}, { now: () => at, tzdataVersion: '2099z' });
    const windows = events.flatMap((e) => ('calling' in e ? [[e.type, e.calling] as const] : []));
    expect(windows.map(([type]) => type)).toEqual(['suppressed', 'answered']);
    // Inside the window, but a number on the internal list may never be called: no window is given for it.
    expect(windows[0]![1]).toMatchObject({
      time_zones: ['America/New_York'],
      in_window: true,
      may_call_now: false,
      reason: 'suppressed',
      next_window_start: null,
      next_window_end: null,
    });
    expect(windows[1]![1]).toMatchObject({
      time_zones: ['America/New_York'],
      in_window: true,
      may_call_now: true,
      reason: null,
      next_window_start: '2026-07-01T12:00:00Z',
      next_window_end: '2026-07-02T01:00:00Z',
    });
    for (const [, w] of windows) expect(w.rules_version).toContain(' tzdata/2099z ');
    // --at wins over the clock: 22:00 in Washington is outside the window.
    const late = await check(['+12025550100'], { at: new Date('2026-07-02T02:00:00Z') }, { now: () => at });
    const answered = late.events.find((e) => e.type === 'answered');
    expect(answered?.type === 'answered' && answered.calling.may_call_now).toBe(false);
  });
});
