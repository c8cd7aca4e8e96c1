// Where dnc keeps what outlives one run, after XDG: the state folder (journal registry, check history, anchors, the
// internal list), the cache folder (results cache, learned costs) and the config file. The one place they are worked
// out.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { terminalSafe } from './text/terminal-safe.js';

type Env = Record<string, string | undefined>;

/** $XDG_CACHE_HOME/dnc, else ~/.cache/dnc: what can be rebuilt (the results cache, learned costs). */
export function cacheDir(env: Env, homedir: string): string {
  const xdg = env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir, '.cache'), 'dnc');
}

/** $XDG_CONFIG_HOME/dnc/config.json, else ~/.config/dnc/config.json. */
export function defaultConfigPath(env: Env, homedir: string): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir, '.config');
  return path.join(base, 'dnc', 'config.json');
}

/** $XDG_STATE_HOME/dnc, else ~/.local/state/dnc (XDG: state that should persist but is not worth backing up). */
export function stateDir(env: Env, homedir: string): string {
  const xdg = env.XDG_STATE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir, '.local', 'state'), 'dnc');
}

/** dnc's own folders: the state folder (stateDir) and the cache folder (cacheDir). */
export type OwnFolder = 'state' | 'cache';

/**
 * The home folder that a folder of dnc's own would be made in, when it does not exist (HOME=/nonexistent, as
 * system accounts and containers have it); else null. dnc never creates a home folder: what it would keep there
 * is not kept. An absolute XDG_STATE_HOME / XDG_CACHE_HOME is made as needed, as the XDG specification asks.
 */
export function missingHome(env: Env, homedir: string, kind: OwnFolder): string | null {
  const xdg = kind === 'state' ? env.XDG_STATE_HOME : env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return null;
  return existsSync(homedir) ? null : homedir;
}

/** The folder of that kind, when dnc may keep files in it; null when it would lie in a home folder that is missing. */
export function keptFolder(env: Env, homedir: string, kind: OwnFolder): string | null {
  if (missingHome(env, homedir, kind) !== null) return null;
  return kind === 'state' ? stateDir(env, homedir) : cacheDir(env, homedir);
}

/** What a run says when its home folder is missing: where state could not be kept, and what is not kept; else null. */
export function unkeptStateNote(env: Env, homedir: string): string | null {
  const state = missingHome(env, homedir, 'state') !== null;
  const cache = missingHome(env, homedir, 'cache') !== null;
  if (!state && !cache) return null;
  const lost = [
    ...(state
      ? [
          'the check history and the journal registry (dnc trace, usage --reconcile), the anchors of what it ' +
            'writes (dnc verify then calls those files unproven)',
        ]
      : []),
    ...(cache ? ['the results cache (--reuse-within) and learned costs (--dry-run estimates)'] : []),
  ];
  const set = [...(state ? ['XDG_STATE_HOME'] : []), ...(cache ? ['XDG_CACHE_HOME'] : [])].join(' and ');
  return (
    `note: the home folder ${homedir} does not exist and dnc does not create it: ` +
    `not kept between runs: ${lost.join('; ')} ` +
    `(set HOME to a folder that exists, or ${set})`
  );
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

/**
 * A path as a message or a table shows it: relative to `cwd` when it lies below it, else as it is, and terminal-safe
 * (a file's name is text from outside: `\e[8m` in it would hide the rest of the line, OSC 52 write the clipboard).
 */
export function shownPath(cwd: string, p: string): string {
  const relative = path.relative(cwd, p);
  return terminalSafe(relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? p : relative);
}
