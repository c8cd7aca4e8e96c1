// Configuration: flag > environment > config file > default, keeping where each value came from.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { usageError } from './errors.js';
import { defaultConfigPath } from './paths.js';
import { judgeFile, warnIfReadable } from './trusted-files.js';

export type ValueSource = 'flag' | 'env' | 'config' | 'default';

export interface Sourced<T> {
  value: T;
  source: ValueSource;
}

/** Global options as commander parsed them (all optional). */
export interface GlobalFlags {
  baseUrl?: string;
  apiKey?: string;
  apiKeyFile?: string;
  forwardedHost?: string;
  config?: string;
  json?: boolean;
  quiet?: boolean;
  verbose?: boolean;
  timeout?: number;
  retries?: number;
  /** --profile / DNC_PROFILE: a named set of values in the config file's "profiles". */
  profile?: string;
  /** --store / DNC_STORE: a team's PostgreSQL store instead of the local files. */
  store?: string;
}

/** Strings a config file (or one of its profiles) may hold; a profile's values replace the top level's. */
export const CONFIG_STRING_KEYS = [
  'base_url',
  'api_key',
  'api_key_file',
  'forwarded_host',
  'seller',
  'san',
  'campaign',
  'suppression_list',
  'store',
] as const;
type ConfigStringKey = (typeof CONFIG_STRING_KEYS)[number];

export type ConfigFile = Partial<Record<ConfigStringKey, string>> & {
  /** Validity windows in days by country, and "default" for the rest (src/compliance/validity.ts). */
  validity_days?: Record<string, number>;
  /** A team's calling settings (policy, default hours, overrides), checked by src/calling when used. */
  calling?: Record<string, unknown>;
  /** The profile whose values were applied, if any. */
  profile?: string;
};

export interface ServiceConfig {
  baseUrl: Sourced<string>;
  apiKey: Sourced<string>;
  forwardedHost: Sourced<string> | undefined;
  /** Where the config file was looked for, and whether it existed. */
  configPath: string;
  /** What the user should hear about files read (a key others can read), each a line without "dnc: ". */
  warnings: string[];
}

type Env = Record<string, string | undefined>;

/**
 * Every environment variable dnc reads, and what for: `dnc help environment` prints this table, and
 * a test checks that no other variable is read anywhere in src/.
 */
export const ENVIRONMENT_VARIABLES = [
  { name: 'DNC_BASE_URL', meaning: "the service's base address (as --base-url; `dnc sandbox` prints one)" },
  { name: 'DNC_API_KEY', meaning: 'the API key (as --api-key; --api-key-file reads it from a file instead)' },
  { name: 'DNC_FORWARDED_HOST', meaning: 'resellers: sent as X-Forwarded-Host on every request (as --forwarded-host)' },
  { name: 'DNC_CONFIG', meaning: 'a JSON config file holding any of base_url, api_key, forwarded_host (as --config)' },
  { name: 'DNC_PROFILE', meaning: 'the profile of the config file to use (as --profile)' },
  {
    name: 'DNC_CALLING_SETTINGS',
    meaning:
      "a JSON file of the team's calling policy and overrides (as --calling-settings; else the config's calling)",
  },
  {
    name: 'DNC_SUPPRESSION_LIST',
    meaning: 'the internal do-not-call list and exemptions (as --suppression-list; default: the state folder)',
  },
  {
    name: 'DNC_STORE',
    meaning: "a team's PostgreSQL store, postgres://… (as --store; default: the local files, see docs/team.md)",
  },
  { name: 'PGHOST', meaning: 'the team store: its host or socket folder, where --store leaves it out (as libpq)' },
  { name: 'PGPORT', meaning: 'the team store: its port, where --store leaves it out (as libpq)' },
  { name: 'PGUSER', meaning: 'the team store: the role, where --store leaves it out (as libpq)' },
  { name: 'PGDATABASE', meaning: 'the team store: the database, where --store leaves it out (as libpq)' },
  { name: 'PGPASSWORD', meaning: 'the team store: the password, where --store has none (as libpq; never shown)' },
  { name: 'PGPASSFILE', meaning: 'the team store: the password file (as libpq; default ~/.pgpass)' },
  { name: 'PGSERVICE', meaning: 'the team store: a service of pg_service.conf (as libpq)' },
  { name: 'PGSERVICEFILE', meaning: 'the team store: the service file (as libpq; default ~/.pg_service.conf)' },
  { name: 'PGSYSCONFDIR', meaning: "the team store: the folder of the system's pg_service.conf (as libpq)" },
  { name: 'PGSSLMODE', meaning: 'the team store: disable, require, verify-ca or verify-full (as libpq)' },
  { name: 'PGSSLROOTCERT', meaning: "the team store: the CA certificate that signs the server's (as libpq)" },
  { name: 'PGCONNECT_TIMEOUT', meaning: 'the team store: seconds to wait for a connection (as libpq; default 10)' },
  { name: 'USER', meaning: 'who made a change to the internal list or exemptions (the audit log records user@host)' },
  { name: 'LOGNAME', meaning: 'as USER, where USER is not set' },
  { name: 'DNC_VERBOSE', meaning: '1: one stderr line per HTTP request and response, the key redacted (as --verbose)' },
  { name: 'NO_COLOR', meaning: 'any non-empty value: no colour, whatever the terminal' },
  { name: 'FORCE_COLOR', meaning: '0: no colour, as NO_COLOR' },
  { name: 'TERM', meaning: 'dumb: no colour' },
  {
    name: 'XDG_CONFIG_HOME',
    meaning: 'the config file is $XDG_CONFIG_HOME/dnc/config.json (else ~/.config/dnc/config.json)',
  },
  {
    name: 'XDG_STATE_HOME',
    meaning: 'batch journal registry and check history in $XDG_STATE_HOME/dnc (else ~/.local/state/dnc)',
  },
  {
    name: 'XDG_CACHE_HOME',
    meaning: 'learned costs and --reuse-within verdicts in $XDG_CACHE_HOME/dnc (else ~/.cache/dnc)',
  },
] as const;

/** `dnc batch --concurrency`: lookups in flight at once, at most. */
export const MAX_CONCURRENCY = 64;

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_RETRIES = 3;

async function readConfigFile(
  file: string,
  explicit: boolean,
  notes: string[],
  homedir: string,
  profile?: string,
): Promise<ConfigFile> {
  const judged = await judgeFile(file, 'the config file');
  let text: string;
  try {
    text = await readFile(judged?.path ?? file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!explicit && code === 'ENOENT') {
      if (profile)
        throw usageError('E_CONFIG_INVALID', `profile "${profile}" is not defined: there is no config file ${file}`, {
          hint: 'add "profiles": {"NAME": {...}} to the config file',
        });
      return {};
    }
    throw usageError('E_CONFIG_UNREADABLE', `cannot read config file ${file}: ${code ?? String(err)}`, {
      hint: 'check the path given with --config or DNC_CONFIG',
      cause: err,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw usageError('E_CONFIG_INVALID', `config file ${file} is not valid JSON: ${(err as Error).message}`, {
      hint: 'it should be an object such as {"base_url": "https://…", "api_key": "…"}',
      cause: err,
    });
  }
  if (!isObject(parsed)) {
    throw usageError('E_CONFIG_INVALID', `config file ${file} must hold a JSON object`);
  }
  const profiles = isObject(parsed.profiles) ? Object.values(parsed.profiles).filter(isObject) : [];
  // A store URL with a password in it is a secret too.
  // Said by name: the API key, the store's password, or both.
  const key = [parsed, ...profiles].some((o) => typeof o.api_key === 'string' && o.api_key !== '');
  const password = [parsed, ...profiles].some(
    (o) => typeof o.store === 'string' && /^[a-z]+:\/\/[^/]*:[^/]*@/i.test(o.store),
  );
  const holdsKey =
    key && password ? 'the API key and a store password' : key ? 'the API key' : password ? 'a store password' : false;
  warnIfReadable(judged, file, 'the config file', holdsKey, notes);
  const out = configValues(parsed, file, '', homedir);
  if (profile !== undefined) {
    const profiles = parsed.profiles;
    if (profiles !== undefined && !isObject(profiles))
      throw usageError('E_CONFIG_INVALID', `config file ${file}: "profiles" must be an object of named profiles`);
    const chosen = profiles && Object.hasOwn(profiles, profile) ? profiles[profile] : undefined;
    if (!isObject(chosen)) {
      const known = profiles ? Object.keys(profiles) : [];
      throw usageError('E_CONFIG_INVALID', `profile "${profile}" is not defined in ${file}`, {
        hint: known.length
          ? `defined profiles: ${known.join(', ')}`
          : 'add "profiles": {"NAME": {"base_url": …, "api_key_file": …, "seller": …, "san": …}}',
      });
    }
    Object.assign(out, configValues(chosen, file, `profiles.${profile}.`, homedir), { profile });
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The keys of a config file that name files. */
const CONFIG_PATH_KEYS: ReadonlySet<ConfigStringKey> = new Set(['api_key_file', 'suppression_list']);

/**
 * A path of the config file with a leading `~` read as a shell reads it: `~` and `~/…` are the home folder. `~user/…`
 * (another user's home) is refused rather than taken for a folder named `~user`: dnc cannot look it up as the shell
 * does, and a path that silently names nothing would fail later, further from the cause.
 */
export function expandHome(value: string, homedir: string, file: string, name: string): string {
  if (value === '~') return homedir;
  if (value.startsWith('~/')) return path.join(homedir, value.slice(2));
  if (value.startsWith('~'))
    throw usageError('E_CONFIG_INVALID', `config file ${file}: "${name}" starts with ~ followed by a user's name`, {
      hint: 'write that folder out in full; ~ alone and ~/… are your home folder',
    });
  return value;
}

function configValues(o: Record<string, unknown>, file: string, prefix: string, homedir: string): ConfigFile {
  const out: ConfigFile = {};
  for (const key of CONFIG_STRING_KEYS) {
    const value = o[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') {
      throw usageError('E_CONFIG_INVALID', `config file ${file}: "${prefix}${key}" must be a string`);
    }
    out[key] = CONFIG_PATH_KEYS.has(key) ? expandHome(value, homedir, file, `${prefix}${key}`) : value;
  }
  const days = o.validity_days;
  if (days !== undefined && days !== null) {
    if (!isObject(days))
      throw usageError(
        'E_CONFIG_INVALID',
        `config file ${file}: "${prefix}validity_days" must be an object such as {"default": 30, "GB": 28}`,
      );
    const v: Record<string, number> = {};
    for (const [k, n] of Object.entries(days)) {
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 3660) {
        throw usageError(
          'E_CONFIG_INVALID',
          `config file ${file}: "${prefix}validity_days.${k}" must be a whole number of days from 1 to 3660`,
        );
      }
      if (k !== 'default' && !/^[A-Z]{2}$/.test(k))
        throw usageError(
          'E_CONFIG_INVALID',
          `config file ${file}: "${prefix}validity_days" keys are "default" or country codes such as GB, got "${k}"`,
        );
      v[k] = n;
    }
    out.validity_days = v;
  }
  if (o.calling !== undefined && o.calling !== null) {
    if (!isObject(o.calling))
      throw usageError('E_CONFIG_INVALID', `config file ${file}: "${prefix}calling" must be an object`, {
        hint: 'see docs/calling.md for the shape of the calling settings',
      });
    out.calling = o.calling;
  }
  return out;
}

/** The config file read: where it was looked for, its values, and what to warn of (a key others can read). */
interface LoadedConfig {
  path: string;
  file: ConfigFile;
  warnings: string[];
}

/** The config file as it applies to this run (the --profile / DNC_PROFILE profile's values over the top level). */
export async function loadConfigFile(flags: GlobalFlags, env: Env, homedir: string): Promise<LoadedConfig> {
  const explicitConfig = pick<string>([flags.config, 'flag'], [env.DNC_CONFIG, 'env']);
  const configPath = explicitConfig?.value ?? defaultConfigPath(env, homedir);
  const profile = pick<string>([flags.profile, 'flag'], [env.DNC_PROFILE, 'env'])?.value;
  const warnings: string[] = [];
  const file = await readConfigFile(configPath, explicitConfig !== undefined, warnings, homedir, profile);
  return { path: configPath, file, warnings };
}

/** A file error's code (ENOENT …), else its message. */
export function describe(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}

async function readKeyFile(file: string, warnings: string[]): Promise<string> {
  const judged = await judgeFile(file, 'the API key file');
  warnIfReadable(judged, file, 'the API key file', 'the API key', warnings);
  try {
    const key = (await readFile(judged?.path ?? file, 'utf8')).trim();
    if (!key) throw usageError('E_CONFIG_INVALID', `API key file ${file} is empty`);
    return key;
  } catch (err) {
    if (err instanceof Error && err.name === 'DncError') throw err;
    throw usageError(
      'E_CONFIG_UNREADABLE',
      `cannot read API key file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      {
        cause: err,
      },
    );
  }
}

export function pick<T>(...candidates: Array<[T | undefined, ValueSource]>): Sourced<T> | undefined {
  for (const [value, source] of candidates) {
    if (value !== undefined && value !== '') return { value, source };
  }
  return undefined;
}

/** Resolves what is needed to talk to the service; throws exit-2 errors that name every way to give a value. */
export async function resolveServiceConfig(flags: GlobalFlags, env: Env, homedir: string): Promise<ServiceConfig> {
  const { path: configPath, file, warnings } = await loadConfigFile(flags, env, homedir);

  const keyFromFile = flags.apiKeyFile ? await readKeyFile(flags.apiKeyFile, warnings) : undefined;
  // A profile's api_key_file is read only when nothing above it gives the key.
  const configKeyFile =
    !flags.apiKey && !keyFromFile && !env.DNC_API_KEY && !file.api_key && file.api_key_file
      ? await readKeyFile(path.resolve(path.dirname(configPath), file.api_key_file), warnings)
      : undefined;
  const apiKey = pick<string>(
    [flags.apiKey, 'flag'],
    [keyFromFile, 'flag'],
    [env.DNC_API_KEY, 'env'],
    [file.api_key, 'config'],
    [configKeyFile, 'config'],
  );
  const baseUrl = pick<string>([flags.baseUrl, 'flag'], [env.DNC_BASE_URL, 'env'], [file.base_url, 'config']);
  // Unlike the other variables, an empty DNC_FORWARDED_HOST (or "forwarded_host": ""), when it is the one that
  // applies, is refused rather than read as unset: `DNC_FORWARDED_HOST=$CLIENT` with $CLIENT unset would send a
  // reseller's requests unattributed.
  if (
    flags.forwardedHost === undefined &&
    env.DNC_FORWARDED_HOST !== undefined &&
    env.DNC_FORWARDED_HOST.trim() === ''
  ) {
    throw usageError('E_CONFIG_INVALID', 'DNC_FORWARDED_HOST is set but empty', {
      hint:
        'set it to the client the requests are for, or unset it (unset DNC_FORWARDED_HOST) to send no ' +
        'X-Forwarded-Host',
    });
  }
  if (
    flags.forwardedHost === undefined &&
    env.DNC_FORWARDED_HOST === undefined &&
    file.forwarded_host !== undefined &&
    file.forwarded_host.trim() === ''
  ) {
    throw usageError('E_CONFIG_INVALID', `config file ${configPath}: "forwarded_host" is empty`, {
      hint: 'give the client the requests are for, or remove "forwarded_host" to send no X-Forwarded-Host',
    });
  }
  const forwardedHost = pick<string>(
    [flags.forwardedHost, 'flag'],
    [env.DNC_FORWARDED_HOST, 'env'],
    [file.forwarded_host, 'config'],
  );

  if (!baseUrl) {
    throw usageError('E_CONFIG_MISSING', 'no service base URL is configured', {
      hint:
        `give it with --base-url URL, the DNC_BASE_URL environment variable, or "base_url" in ${configPath} ` +
        `(\`dnc sandbox\` prints one for testing)`,
    });
  }
  validateBaseUrl(baseUrl, configPath);
  if (!apiKey) {
    throw usageError('E_CONFIG_MISSING', 'no API key is configured', {
      hint:
        `give it with --api-key KEY (or --api-key-file PATH), the DNC_API_KEY environment variable, or ` +
        `"api_key" in ${configPath}`,
    });
  }
  return { baseUrl, apiKey, forwardedHost, configPath, warnings };
}

/** Where a value was given, as the user would name it. */
function sourceName(source: ValueSource, flag: string, variable: string, key: string, configPath: string): string {
  return source === 'flag'
    ? flag
    : source === 'env'
      ? variable
      : source === 'config'
        ? `"${key}" in ${configPath}`
        : 'the default';
}

// The value itself is never quoted: a key pasted into the wrong variable would be printed.
function validateBaseUrl(baseUrl: Sourced<string>, configPath: string): void {
  const where = sourceName(baseUrl.source, '--base-url', 'DNC_BASE_URL', 'base_url', configPath);
  let url: URL;
  try {
    url = new URL(baseUrl.value);
  } catch {
    throw usageError(
      'E_CONFIG_INVALID',
      `the base URL given by ${where} is not a URL (its value is not shown: it may be a key)`,
      {
        hint: 'it looks like https://api.example.com (or http://127.0.0.1:PORT for `dnc sandbox`)',
      },
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw usageError(
      'E_CONFIG_INVALID',
      `the base URL given by ${where} must use https (or http for a local sandbox), not ` +
        `${url.protocol.replace(/:$/, '')}`,
    );
  }
  if (url.username || url.password) {
    throw usageError(
      'E_CONFIG_INVALID',
      `the base URL given by ${where} must not carry credentials; give the key with --api-key or DNC_API_KEY`,
    );
  }
}

/** The `store` setting: --store, else DNC_STORE, else "store" in the config file (or its profile); else local. */
export async function storeSetting(
  flags: GlobalFlags,
  env: Env,
  homedir: string,
): Promise<{ url: string | null; from: string }> {
  if (flags.store) return { url: flags.store, from: '--store' };
  if (env.DNC_STORE) return { url: env.DNC_STORE, from: 'DNC_STORE' };
  const { path: configPath, file } = await loadConfigFile(flags, env, homedir);
  if (file.store) return { url: file.store, from: `"store" in ${configPath}` };
  return { url: null, from: 'the default' };
}

/**
 * What to say of secrets given as flags: every user of the machine can read a command line (`ps`, /proc/PID/cmdline)
 * and the shell's history keeps it. One warning a flag, naming it and the safer way; never the value.
 */
export function commandLineSecretWarnings(flags: GlobalFlags): string[] {
  const out: string[] = [];
  const where = 'where other users of this machine can read it (ps, /proc/PID/cmdline) and the shell history keeps it';
  if (flags.apiKey)
    out.push(
      `dnc: warning: --api-key puts the key on the command line, ${where}; give it in DNC_API_KEY, ` +
        '--api-key-file FILE or "api_key_file" in the config file instead',
    );
  if (flags.store && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*:[^/?#]*@/i.test(flags.store.trim()))
    out.push(
      `dnc: warning: --store carries a password on the command line, ${where}; give it in PGPASSWORD or ~/.pgpass ` +
        '(mode 0600) instead, and --store without it',
    );
  return out;
}

/** Parses a whole number option, refusing anything else with exit 2. */
export function parseIntegerOption(name: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^-?\d+$/.test(raw.trim())) {
    throw usageError('E_USAGE', `${name} must be a whole number, got '${raw}'`);
  }
  const value = Number(raw);
  if (value > Number.MAX_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER) {
    throw usageError('E_USAGE', `${name} is too large: it must be from ${min} to ${max}, got ${raw}`);
  }
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw usageError('E_USAGE', `${name} must be ${range}, got ${raw}`);
  }
  return value;
}

/** `--country` (check, batch): an ISO 3166-1 alpha-2 region, upper-cased; anything else is refused with exit 2. */
export async function parseCountryOption(raw: string | undefined): Promise<string | undefined> {
  if (raw === undefined) return undefined;
  const country = raw.trim().toUpperCase();
  // libphonenumber is heavy: loaded only when a command is given --country.
  const { isKnownRegion } = await import('./phone/normalize.js');
  if (!isKnownRegion(country)) {
    throw usageError('E_USAGE', `--country '${raw}' is not a region code`, {
      hint:
        country === 'UK'
          ? 'the code for the United Kingdom is GB'
          : 'give an ISO 3166-1 alpha-2 code such as US, GB or DE',
    });
  }
  return country;
}

/** `--webhook-url` (check, batch): refused with exit 2, before anything is sent, when the service would refuse it. */
export async function checkWebhookUrlOption(
  url: string | undefined,
  allowInsecure: boolean,
  secrets: readonly string[] = [],
): Promise<void> {
  // Alone it would do nothing: refused, so that a user who meant to give a webhook URL learns it is missing.
  if (url === undefined && allowInsecure) {
    throw usageError('E_USAGE', '--allow-insecure-webhook-url needs --webhook-url', {
      hint: 'give the webhook URL it is meant for (e.g. --webhook-url http://127.0.0.1:8787/hooks), or leave both out',
    });
  }
  if (url === undefined) return;
  const { webhookUrlCarries, webhookUrlProblem } = await import('./wire/webhook-url.js');
  const problem = webhookUrlProblem(url, { allowInsecure });
  if (problem) {
    const { withoutCredentials } = await import('./redact.js');
    throw usageError('E_WEBHOOK_URL', `--webhook-url '${withoutCredentials(url)}' cannot be used: ${problem}`, {
      hint: allowInsecure
        ? 'nothing was sent; give an absolute http(s) URL'
        : 'nothing was sent; give a public https URL (for a local sandbox, add --allow-insecure-webhook-url)',
    });
  }
  // In any form a reader could decode (see webhookUrlCarries): the service would keep it, and the journal too.
  if (secrets.some((secret) => webhookUrlCarries(url, secret))) {
    throw usageError(
      'E_WEBHOOK_URL',
      '--webhook-url carries the API key: the service would keep it and push to it, and dnc would write it into ' +
        'the batch journal',
      {
        hint: "nothing was sent; take the key out of the URL (the listener's secret is its path, which dnc generates)",
      },
    );
  }
}
