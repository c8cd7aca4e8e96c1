// A list used before the state folder exists is anchored at that first use (issue 38, item 3): its audit head is kept
// where whoever can write the list file cannot, so a tail cut from it afterwards is found, as on a machine whose state
// folder was there already.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { dnc, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

it('a list first used on a machine without a state folder is anchored then: a tail cut later is refused', async () => {
  w = await world();
  // The list outside the state folder (as a team's shared file would be): nothing else makes that folder first.
  const list = path.join(w.dir, 'our-list.sqlite');
  expect(existsSync(w.stateDir)).toBe(false);
  const first = await dnc(['suppress', 'add', '+12025550143', '--suppression-list', list], w.env);
  expect(first.code, first.stderr).toBe(0);
  const second = await dnc(['suppress', 'add', '+12025550144', '--suppression-list', list], w.env);
  expect(second.code, second.stderr).toBe(0);
  // The last entry cut, with the suppression it recorded, as the sqlite3 shell would (the trigger dropped first).
  execFileSync('sqlite3', [
    list,
    `DROP TRIGGER audit_append_only_delete;
     DELETE FROM suppressions WHERE e164 = (SELECT e164 FROM audit ORDER BY id DESC LIMIT 1);
     DELETE FROM audit WHERE id = (SELECT MAX(id) FROM audit);`,
  ]);
  const before = w.sb.lookups().length;
  const check = await dnc(['check', '+12025550144', '--suppression-list', list], w.env);
  expect(check.code, check.stdout + check.stderr).toBe(3);
  expect(check.stderr).toMatch(/E_LIST_ALTERED.*its audit log no longer holds the entry this machine last saw/);
  expect(w.sb.lookups().length).toBe(before);
});
