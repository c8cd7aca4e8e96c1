// How dnc reaches a team's PostgreSQL store, after libpq's conventions: the URL, then PG* variables of the injected
// environment, a service of pg_service.conf, the password from PGPASSWORD or .pgpass; sslmode as libpq reads it.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ClientConfig } from 'pg';
import { usageError } from '../../errors.js';
import { safelyDecoded } from '../../redact.js';

type Env = Record<string, string | undefined>;

/** Whether a store setting names a PostgreSQL server (anything else is refused, not taken for a local path). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim());
}

/**
 * Whether the URL's user part holds an `@` or a `/` that was not percent-encoded (`postgresql://u:p@ss/w@host/db`):
 * a URL reader then takes part of the password for the host or the database, and would show it.
 */
function unencodedUserinfo(url: string): boolean {
  const rest = url.trim().replace(/^[a-z]+:\/\//i, '');
  const head = rest.split('?')[0]!;
  const ats = head.split('@').length - 1;
  return ats > 1 || (ats === 1 && head.indexOf('/') >= 0 && head.indexOf('/') < head.indexOf('@'));
}

/** The store's address as it may be shown or recorded: no password, no query but the database's name. */
export function publicStoreUrl(url: string): string {
  if (unencodedUserinfo(url)) return 'postgresql://(URL not shown: its password is not percent-encoded)';
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'postgresql://(unreadable URL)';
  }
}

/** The password a store URL carries, if any (a secret to keep out of every line). */
export function storeUrlPassword(url: string | undefined): string | null {
  if (!url || !isPostgresUrl(url)) return null;
  let p: string;
  try {
    p = new URL(url).password;
  } catch {
    return null;
  }
  return p ? safelyDecoded(p) : null;
}

const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;

interface Parameters {
  host?: string;
  port?: string;
  dbname?: string;
  user?: string;
  password?: string;
  sslmode?: string;
  sslrootcert?: string;
  application_name?: string;
  connect_timeout?: string;
}

function invalid(message: string, hint?: string) {
  return usageError('E_STORE_INVALID', message, hint ? { hint } : undefined);
}

/**
 * A part of the URL percent-decoded; a malformed escape (`%zz`, as libpq calls it, an invalid percent-encoded token)
 * is refused by what it is, never shown: it may be the password.
 */
function decoded(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalid(
      `the store URL's ${what} has a % that does not begin an escape such as %40 (its value is not shown: it may ` +
        'hold a password)',
      'write a % itself as %25, or keep the password out of the URL: PGPASSWORD, ~/.pgpass',
    );
  }
}

/** The URL's own parameters (its query holds libpq's keywords: host for a socket folder, sslmode, service …). */
function fromUrl(url: string): Parameters & { service?: string } {
  if (unencodedUserinfo(url))
    throw invalid(
      'the store URL has an @ or / in its user or password that is not percent-encoded (the URL is not shown: ' +
        'part of the password would be read as the host)',
      'percent-encode them (@ is %40, / is %2F, : is %3A), or keep the password out of the URL: PGPASSWORD, ~/.pgpass',
    );
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalid(
      'the store URL is not a URL (its value is not shown: it may hold a password)',
      'it looks like ' + 'postgresql://dnc@db.example.com/dnc?sslmode=verify-full',
    );
  }
  const p: Parameters & { service?: string } = {};
  if (u.hostname) p.host = decoded(u.hostname.replace(/^\[|\]$/g, ''), 'host');
  if (u.port) p.port = u.port;
  const db = decoded(u.pathname.replace(/^\//, ''), 'database');
  if (db) p.dbname = db;
  if (u.username) p.user = decoded(u.username, 'user');
  if (u.password) p.password = decoded(u.password, 'password');
  for (const [k, v] of u.searchParams) {
    if (k === 'dbname' || k === 'user' || k === 'password' || k === 'host' || k === 'port') p[k] = v;
    else if (k === 'sslmode' || k === 'sslrootcert' || k === 'application_name' || k === 'connect_timeout') p[k] = v;
    else if (k === 'service') p.service = v;
    else
      throw invalid(
        `the store URL has a parameter dnc does not know: ${k}`,
        'known: host, port, dbname, user, ' + 'sslmode, sslrootcert, application_name, connect_timeout, service',
      );
  }
  return p;
}

/** One service's keywords from pg_service.conf files (the user's first, then the system's), as libpq reads them. */
function fromServiceFile(name: string, env: Env, homedir: string): Parameters {
  const files = [
    env.PGSERVICEFILE ?? path.join(homedir, '.pg_service.conf'),
    path.join(env.PGSYSCONFDIR ?? '/etc/postgresql-common', 'pg_service.conf'),
  ];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    let inSection = false;
    let found = false;
    const out: Record<string, string> = {};
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      const section = /^\[(.+)\]$/.exec(line);
      if (section) {
        inSection = section[1] === name;
        found ||= inSection;
        continue;
      }
      const eq = line.indexOf('=');
      if (inSection && eq > 0) out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    }
    if (found) return out as Parameters;
  }
  throw invalid(`the PostgreSQL service "${name}" is not defined`, `define it in ${files.join(' or ')}`);
}

/** The password of a .pgpass line that matches (libpq: host:port:database:user:password, * for any, \\ escapes). */
function fromPassFile(p: Parameters, env: Env, homedir: string): string | undefined {
  const file = env.PGPASSFILE ?? path.join(homedir, '.pgpass');
  let text: string;
  try {
    // As libpq: a file others can read is not used.
    if (statSync(file).mode & 0o077) return undefined;
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const host = p.host && !p.host.startsWith('/') ? p.host : 'localhost';
  const wanted = [host, p.port ?? '5432', p.dbname ?? p.user ?? '', p.user ?? ''];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const fields: string[] = [];
    let field = '';
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (c === '\\' && i + 1 < line.length) field += line[++i];
      else if (c === ':' && fields.length < 4) {
        fields.push(field);
        field = '';
      } else field += c;
    }
    fields.push(field);
    if (fields.length !== 5) continue;
    if (wanted.every((w, i) => fields[i] === '*' || fields[i] === w)) return fields[4];
  }
  return undefined;
}

/** A server that asks for a password dnc was not given (exit 2). */
function noPassword(where: string) {
  return usageError('E_STORE_REFUSED', `the team store ${where} asks for a password and none was given`, {
    hint: 'give it in PGPASSWORD, ~/.pgpass (mode 0600) or a pg_service.conf entry, not on the command line',
  });
}

/** What pg is given: every value explicit, so that nothing is read from the process's own environment. */
export interface StoreConnection {
  config: ClientConfig;
  /** The address as shown (no password): the URL given, which also names the store in manifests. */
  where: string;
  /** Where it connects, resolved from the URL, a service file and PG* variables: what `dnc store status` shows. */
  address: { host: string; port: number; database: string; user: string };
  /** The password used, if any: kept out of every line dnc prints. */
  password: string | null;
}

/** The connection a store URL and the environment describe (libpq's order: URL, service, PG* variables, defaults). */
export function storeConnection(url: string, env: Env, homedir: string): StoreConnection {
  const given = fromUrl(url);
  const serviceName = given.service ?? env.PGSERVICE;
  const service = serviceName ? fromServiceFile(serviceName, env, homedir) : {};
  const pick = (k: keyof Parameters, fromEnv: string | undefined) => given[k] ?? service[k] ?? fromEnv;
  const p: Parameters = {
    host: pick('host', env.PGHOST) ?? '/var/run/postgresql',
    port: pick('port', env.PGPORT) ?? '5432',
    user: pick('user', env.PGUSER) ?? env.USER ?? env.LOGNAME ?? 'postgres',
    sslmode: pick('sslmode', env.PGSSLMODE) ?? 'prefer',
    sslrootcert: pick('sslrootcert', env.PGSSLROOTCERT),
    application_name: given.application_name ?? service.application_name ?? 'dnc',
    connect_timeout: pick('connect_timeout', env.PGCONNECT_TIMEOUT) ?? '10',
  };
  p.dbname = pick('dbname', env.PGDATABASE) ?? p.user;
  p.password = given.password ?? service.password ?? env.PGPASSWORD ?? fromPassFile(p, env, homedir);
  const port = Number(p.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`the store's port is not a port: ${p.port}`);
  const mode = p.sslmode as (typeof SSL_MODES)[number];
  if (!SSL_MODES.includes(mode))
    throw invalid(`sslmode ${p.sslmode} is not one of ${SSL_MODES.join(', ')}`, 'across a network, use verify-full');
  const timeout = Number(p.connect_timeout);
  const config: ClientConfig = {
    host: p.host,
    port,
    user: p.user,
    database: p.dbname,
    // Never undefined (the driver would read the process's own PGPASSWORD and ~/.pgpass): without one, a server that
    // asks for a password is refused plainly, rather than in the driver's words ("SASL: … must be a string").
    password: p.password ?? (() => Promise.reject(noPassword(publicStoreUrl(url)))),
    application_name: p.application_name,
    connectionTimeoutMillis: Number.isFinite(timeout) && timeout > 0 ? timeout * 1000 : 10_000,
    ssl: sslOptions(mode, p.sslrootcert),
  };
  const address = { host: p.host ?? '', port, database: p.dbname ?? '', user: p.user ?? '' };
  return { config, where: publicStoreUrl(url), address, password: p.password ?? null };
}

/**
 * TLS as libpq's sslmode asks: disable, allow and prefer connect without it (dnc does not try TLS first and fall
 * back); require encrypts without checking the server; verify-ca checks its certificate; verify-full its name too.
 */
function sslOptions(mode: (typeof SSL_MODES)[number], rootCert: string | undefined): ClientConfig['ssl'] {
  if (mode === 'disable' || mode === 'allow' || mode === 'prefer') return false;
  let ca: string | undefined;
  if (rootCert) {
    try {
      ca = readFileSync(rootCert, 'utf8');
    } catch (err) {
      throw invalid(`sslrootcert ${rootCert} cannot be read: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  }
  if (mode === 'require' && !ca) return { rejectUnauthorized: false };
  return mode === 'verify-full'
    ? { rejectUnauthorized: true, ca }
    : { rejectUnauthorized: true, ca, checkServerIdentity: () => undefined };
}
