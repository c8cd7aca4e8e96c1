// Where dnc keeps what outlives one run: the state folder (journal registry, check history) and the cache folder.
import path from 'node:path';

export { cacheDir } from '../batch/cost-cache.js';

type Env = Record<string, string | undefined>;

/** $XDG_STATE_HOME/dnc, else ~/.local/state/dnc (XDG: state that should persist but is not worth backing up). */
export function stateDir(env: Env, homedir: string): string {
  const xdg = env.XDG_STATE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir, '.local', 'state'), 'dnc');
}

/** A base URL as it may be written to files: no credentials, no query, no fragment. */
export function publicBaseUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(unreadable base URL)';
  }
}

/** The origin lookups go to (what journals and caches are keyed by). */
export function serviceOrigin(url: string): string {
  return new URL(url).origin;
}
