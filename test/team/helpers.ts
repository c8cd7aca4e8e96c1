// What the team tests share: a machine of the team as an environment (a home of its own, the store, the service).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { World } from '../evidence/helpers.js';

/** The environment of one machine: a home of its own, the team's store, the service. */
export function machineEnv(world: World, name: string, store: string): Record<string, string> {
  const home = path.join(world.dir, name);
  mkdirSync(home, { recursive: true });
  return {
    HOME: home,
    USER: name,
    XDG_STATE_HOME: path.join(home, 'state'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    DNC_STORE: store,
    DNC_BASE_URL: world.sb.baseUrl,
    DNC_API_KEY: world.sb.apiKey,
  };
}
