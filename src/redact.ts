// The one redaction at the output layer: the API key is masked in everything dnc writes, from the first line on.
import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { defaultConfigPath } from './paths.js';
import { isRegularFile } from './file-kind.js';
import { redactSecrets } from './errors.js';
import { carriesSecret } from './secrets.js';
import type { IO } from './io.js';

type Env = Record<string, string | undefined>;

/** Value of `--name VALUE` or `--name=VALUE` in argv (the last one wins, as commander does). */
function optionValue(argv: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === name && i + 1 < argv.length) value = argv[++i];
    else if (a.startsWith(`${name}=`)) value = a.slice(name.length + 1);
  }
  return value;
}

function urlCredentials(raw: string | undefined): string[] {
  if (!raw) return [];
  try {
    const u = new URL(raw);
    return [safelyDecoded(u.username), safelyDecoded(u.password), u.username, u.password].filter((s) => s !== '');
  } catch {
    return [];
  }
}

/** The password of a URL (a store's role name is no secret, and masking it would garble every line naming it). */
function urlPassword(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let p: string;
  try {
    p = new URL(raw).password;
  } catch {
    return undefined;
  }
  // A malformed escape (`%zz`) is refused by the store's reader; until then the password is masked as written.
  return p ? safelyDecoded(p) : undefined;
}

/** `text` percent-decoded, or as it is when an escape in it is malformed. */
export function safelyDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function readQuietly(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Every value that may be the key, known before anything is parsed or printed: the flag, the key file, the
 * environment, the config file, and credentials written into a base URL. Errors raised before the configuration
 * is resolved (a bad flag, a bad base URL) are then redacted like everything else.
 */
export function collectSecrets(argv: readonly string[], env: Env, homedir: string): string[] {
  const found: Array<string | undefined> = [optionValue(argv, '--api-key'), env.DNC_API_KEY];
  const keyFile = optionValue(argv, '--api-key-file');
  // Read here only when it is a regular file: a pipe (`--api-key-file <(pass show dnc)`) gives its key once, to the
  // configuration step, which adds it to the secrets then.
  if (keyFile && isRegularFile(keyFile)) found.push(readQuietly(keyFile)?.trim());
  const configFile = optionValue(argv, '--config') || env.DNC_CONFIG || defaultConfigPath(env, homedir);
  const config = readQuietly(configFile);
  if (config) {
    try {
      const parsed = JSON.parse(config) as { api_key?: unknown; base_url?: unknown };
      if (typeof parsed.api_key === 'string') found.push(parsed.api_key);
      if (typeof parsed.base_url === 'string') found.push(...urlCredentials(parsed.base_url));
      if (typeof (parsed as { store?: unknown }).store === 'string')
        found.push(urlPassword((parsed as { store: string }).store));
    } catch {
      /* the configuration step reports an unreadable file */
    }
  }
  found.push(...urlCredentials(optionValue(argv, '--base-url')), ...urlCredentials(env.DNC_BASE_URL));
  // The team store's password, however it is given (the URL, or libpq's variable).
  found.push(urlPassword(optionValue(argv, '--store')), urlPassword(env.DNC_STORE), env.PGPASSWORD);
  return [
    ...new Set(found.filter((s): s is string => typeof s === 'string' && s.trim().length >= 4).map((s) => s.trim())),
  ];
}

const RAW = Symbol('dnc.raw-stream');

/** A stream that masks every secret in what is written through it (strings and buffers alike). */
export function redactingStream<S extends Writable>(stream: S, secrets: readonly string[], onWrite?: () => void): S {
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    onWrite?.();
    let out = chunk;
    if (typeof chunk === 'string') out = redactSecrets(chunk, secrets);
    else if (Buffer.isBuffer(chunk) && secrets.length > 0) {
      // The same rule as for text: a key hidden in any encoding is masked in bytes too (results written to stdout).
      const text = chunk.toString('utf8');
      if (carriesSecret(text, secrets)) out = Buffer.from(redactSecrets(text, secrets));
    }
    return (stream.write as (...args: unknown[]) => boolean)(out, ...rest);
  };
  // A write assigned to the stream (ora hooks stream.write, and calls the write it found) replaces this one, here:
  // put on the stream below, the redacting write would call the hook, which calls the redacting write, without end.
  let current: unknown = write;
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write') return current;
      if (prop === RAW) return target;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
    set(target, prop, value) {
      if (prop !== 'write') return Reflect.set(target, prop, value, target);
      current = value;
      return true;
    },
  });
}

/** The IO with stdout and stderr redacted; `onStdout` hears of every write to stdout. */
export function redactingIO<T extends IO>(io: T, secrets: readonly string[], onStdout?: () => void): T {
  // Copied with its accessors, not read: processIO's stdin is only set up when a command reads it.
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(io)) as T;
  return Object.defineProperties(copy, {
    stdout: {
      value: redactingStream(io.stdout, secrets, onStdout),
      writable: true,
      enumerable: true,
      configurable: true,
    },
    stderr: { value: redactingStream(io.stderr, secrets), writable: true, enumerable: true, configurable: true },
  });
}

/**
 * The stream under the redaction: only for output that is a key by design (`dnc sandbox` prints the key of
 * the emulator it starts, which may equal the configured one).
 */
export function rawStream(stream: Writable): Writable {
  return (stream as unknown as Record<symbol, Writable | undefined>)[RAW] ?? stream;
}

/**
 * Commander echoes an unknown option whole (`unknown option '--api_key=KEY'`): the value of any `--name=value` it
 * quotes is masked, since a mistyped key flag is not known to be the key.
 */
export function maskOptionValues(message: string): string {
  return message.replace(/(--?[A-Za-z0-9_-]+)=[^'"\s]*/g, '$1=***');
}

/** A URL as it may be shown: its user and password masked. */
export function withoutCredentials(raw: string): string {
  return raw.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^@/?#]*@/, '$1***@');
}
