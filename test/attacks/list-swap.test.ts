// Issue 38: the attacker can write the list file. A list this machine also knows, copied over the one a scrub used
// (`cp O.sqlite L.sqlite`), and a list deleted, are refused by every reader (exit 3, E_LIST_ALTERED), verify included.
import { copyFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dnc, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

/** A scrub with list L (which holds +12025550100), and list O (holding another number) used here too. */
async function twoLists(world: World): Promise<{ L: string; O: string; out: string }> {
  const L = path.join(world.dir, 'L.sqlite');
  const O = path.join(world.dir, 'O.sqlite');
  expect((await dnc(['suppress', 'add', '+12025550100', '--suppression-list', L], world.env)).code).toBe(0);
  const input = world.file('calls.csv', ['name,phone', 'a,+12025550100', 'b,+12025550102']);
  const out = path.join(world.dir, 'calls.results.csv');
  const r = await dnc(['batch', input, '-o', out, '--suppression-list', L], world.env);
  expect(r.code, r.stderr).toBe(0);
  expect((await dnc(['verify', out], world.env)).code).toBe(0);
  expect((await dnc(['suppress', 'add', '+12025550104', '--suppression-list', O], world.env)).code).toBe(0);
  return { L, O, out };
}

describe('a list this machine also knows, swapped in', () => {
  it('check, batch, verify, status and suppress list refuse it: the number only on the old list stays out', async () => {
    w = await world();
    const { L, O, out } = await twoLists(w);
    copyFileSync(O, L);
    const check = await dnc(['check', '+12025550100', '--suppression-list', L], w.env);
    expect(check.code, check.stdout).toBe(3);
    expect(check.stderr).toMatch(
      /\[E_LIST_ALTERED\].*another list \(id [0-9a-f-]+, last seen here at .*O\.sqlite\) stands where list/,
    );
    const batch = await dnc(
      ['batch', path.join(w.dir, 'calls.csv'), '-o', path.join(w.dir, 'again.csv'), '--suppression-list', L],
      w.env,
    );
    expect(batch.code).toBe(3);
    expect(batch.stderr).toContain('[E_LIST_ALTERED]');
    const verify = await dnc(['verify', out], w.env);
    expect(verify.code, verify.stdout).toBe(3);
    expect(verify.stderr).toContain('[E_LIST_ALTERED]');
    expect(verify.stdout).not.toContain('FIT TO DIAL\n');
    const status = await dnc(['--json', 'status', out], w.env);
    expect(status.code).toBe(3);
    const listed = await dnc(['suppress', 'list', '--suppression-list', L], w.env);
    expect(listed.code).toBe(3);
    // The list the swap copied from is still itself where it is.
    expect((await dnc(['check', '+12025550104', '--suppression-list', O], w.env)).code).toBe(0);
  });

  it('a list restored on purpose (suppress restore) is accepted again', async () => {
    w = await world();
    const { L, O } = await twoLists(w);
    const backup = path.join(w.dir, 'backup.sqlite');
    copyFileSync(O, backup);
    const restored = await dnc(
      ['suppress', 'restore', backup, '--reason', 'use the O list here', '--suppression-list', L],
      w.env,
    );
    expect(restored.code, restored.stderr).toBe(0);
    expect((await dnc(['check', '+12025550102', '--suppression-list', L], w.env)).code).toBe(0);
  });
});

describe('a deleted internal list', () => {
  it('verify and status refuse it as check does (exit 3, E_LIST_ALTERED: it is gone), never fit', async () => {
    w = await world();
    const { L, out } = await twoLists(w);
    rmSync(L);
    // check names the list it was given: missing, it is E_LIST_MISSING (exit 2); nothing is sent either way.
    const check = await dnc(['check', '+12025550100', '--suppression-list', L], w.env);
    expect(check.stderr).toContain('[E_LIST_MISSING]');
    const verify = await dnc(['verify', out], w.env);
    expect(verify.code, verify.stdout).toBe(3);
    expect(verify.stderr).toMatch(/\[E_LIST_ALTERED\].*it is gone/);
    const status = await dnc(['--json', 'status', out], w.env);
    expect(status.code, status.stdout).toBe(3);
    expect(JSON.parse(status.stdout).files[0].fit).toBe(false);
    const report = await dnc(['report', out, '-o', path.join(w.dir, 'r.html')], w.env);
    expect(report.stdout + report.stderr).not.toMatch(/fit to dial: yes|Valid until/i);
  });
});
