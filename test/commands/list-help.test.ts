// Every command that names the internal list's file says too where the list is with a team store.
import { describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';

describe('help of the commands naming the list file describes the team store too', () => {
  it.each([
    ['suppress'],
    ['suppress', 'add'],
    ['suppress', 'count'],
    ['exempt'],
    ['exempt', 'add'],
    ['exempt', 'list'],
    ['check'],
    ['batch'],
  ])('dnc %s … --help', async (...command) => {
    const r = await runDnc([...command, '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/team store/);
    if (command.length === 1 && (command[0] === 'suppress' || command[0] === 'exempt'))
      expect(text).toMatch(/with a team store \(--store[^)]*\) (the list is the team's|they are the team's)/i);
    else expect(text).toContain("with a team store (--store): the team's list, no file");
  });
});
