// What the team tests share: one machine of a team, as a home folder of its own naming the team's store.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { World } from '../helpers/world.js';

/** The environment of one machine: a home of its own (in the world's folder), the team's store, the service. */
export function teamMachine(w: World, name: string, store: string): Record<string, string> {
  const home = path.join(w.dir, name);
  mkdirSync(home, { recursive: true });
  return {
    HOME: home,
    USER: name,
    XDG_STATE_HOME: path.join(home, 'state'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    DNC_STORE: store,
    DNC_BASE_URL: w.sb.baseUrl,
    DNC_API_KEY: w.sb.apiKey,
  };
}

/** How many times the sandbox was sent each number. */
export const counted = (numbers: string[]) => {
  const counts = new Map<string, number>();
  for (const n of numbers) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts;
};
