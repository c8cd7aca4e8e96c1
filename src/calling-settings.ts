// A team's calling settings (its policy, overrides and blackouts), found as the rest of the configuration is:
// --calling-settings FILE, DNC_CALLING_SETTINGS, or the config file's "calling"; each file judged before it is read.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expandHome, loadConfigFile, pick, type GlobalFlags, type ValueSource } from './config.js';
import { usageError } from './errors.js';
import { judgeFile } from './trusted-files.js';

type Env = Record<string, string | undefined>;

/** A team's calling settings, and where they came from (to name them in errors and in the evidence). */
export interface CallingSettingsSource {
  /** The settings as written (src/calling checks them); undefined when none are given. */
  settings: unknown;
  source: ValueSource;
  /** What error messages call them: '--calling-settings FILE: calling', 'config file FILE: calling'. */
  name: string;
}

/**
 * The calling settings: --calling-settings FILE > DNC_CALLING_SETTINGS > "calling" in the config file (a profile's
 * replaces the top level's). A file others may write is refused, as a config file is: an override in it sets the
 * law's calling hours aside.
 */
export async function resolveCallingSettings(
  flags: GlobalFlags,
  env: Env,
  homedir: string,
  cwd: string,
  flagFile?: string,
): Promise<CallingSettingsSource> {
  const given = pick<string>([flagFile, 'flag'], [env.DNC_CALLING_SETTINGS, 'env']);
  if (given) {
    const file = path.resolve(cwd, given.value);
    const by = given.source === 'flag' ? '--calling-settings' : 'DNC_CALLING_SETTINGS';
    const judged = await judgeFile(file, 'the calling settings file');
    let text: string;
    try {
      text = await readFile(judged?.path ?? file, 'utf8');
    } catch (err) {
      throw usageError('E_CONFIG_UNREADABLE', `cannot read the calling settings ${file} (${by}): ${describe(err)}`, {
        hint: `check the path given with ${by}`,
        cause: err,
      });
    }
    let settings: unknown;
    try {
      settings = JSON.parse(text);
    } catch (err) {
      throw usageError(
        'E_CONFIG_INVALID',
        `the calling settings ${file} (${by}) are not valid JSON: ${describe(err)}`,
        {
          hint: 'the file holds one object, as the "calling" section of a config file (see docs/calling.md)',
          cause: err,
        },
      );
    }
    const name = `${by} ${file}: calling`;
    return {
      settings: await withBlackoutsFile(settings, path.dirname(file), name, homedir),
      source: given.source,
      name,
    };
  }
  const { path: configPath, file } = await loadConfigFile(flags, env, homedir);
  if (file.calling === undefined) return { settings: undefined, source: 'default', name: 'calling' };
  const name = `config file ${configPath}: calling`;
  const base = configPath ? path.dirname(configPath) : cwd;
  return { settings: await withBlackoutsFile(file.calling, base, name, homedir), source: 'config', name };
}

/**
 * The settings with the blackouts of their `blackouts_file` (a JSON list, relative to the settings' own file) read
 * in after their own `blackouts`, so that the rest of dnc, and the settings' fingerprint in rules_version, see one
 * object. A file others may write is refused, as the settings file is: a blackout it removed would open dates.
 */
async function withBlackoutsFile(settings: unknown, base: string, name: string, homedir: string): Promise<unknown> {
  if (typeof settings !== 'object' || settings === null || !('blackouts_file' in settings)) return settings;
  const { blackouts_file: given, ...rest } = settings as Record<string, unknown>;
  const where = `${name}.blackouts_file`;
  if (typeof given !== 'string' || given === '') {
    throw usageError('E_CONFIG_INVALID', `${where}: must be the path of a JSON file`, { hint: CALLING_HINT });
  }
  const file = path.resolve(base, expandHome(given, homedir, name, 'blackouts_file'));
  // Judged like the calling settings file it extends, before it is read: where it really lies, and every folder up.
  const judged = await judgeFile(file, 'the blackouts file');
  let list: unknown;
  try {
    list = JSON.parse(await readFile(judged?.path ?? file, 'utf8'));
  } catch (err) {
    const code = err instanceof SyntaxError ? 'E_CONFIG_INVALID' : 'E_CONFIG_UNREADABLE';
    throw usageError(code, `${where}: cannot read ${file} as JSON: ${describe(err)}`, {
      hint: CALLING_HINT,
      cause: err,
    });
  }
  if (!Array.isArray(list))
    throw usageError('E_CONFIG_INVALID', `${where}: ${file} must hold a JSON list`, { hint: CALLING_HINT });
  const own = Array.isArray(rest.blackouts) ? rest.blackouts : rest.blackouts === undefined ? [] : undefined;
  // A `blackouts` that is not a list is left as it is, for the settings' own check to name.
  return own === undefined ? rest : { ...rest, blackouts: [...own, ...list] };
}

const CALLING_HINT = 'see docs/calling.md for the shape of the calling settings';
