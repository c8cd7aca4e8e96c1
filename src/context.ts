// The factory every command shares (gh's cmdutil.Factory is the model): one object per run that holds the injected
// I/O, environment, clock and interrupts, and builds the configuration, the service client and the stores when
// first asked. A command takes what it needs from it, and hands a use case its dependencies with `ctx.deps(…)`.
import { fstatSync, statSync } from 'node:fs';
import os from 'node:os';
import {
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  commandLineSecretWarnings,
  resolveServiceConfig,
  storeSetting,
  type GlobalFlags,
  type ServiceConfig,
} from './config.js';
import { redactSecrets } from './errors.js';
import { writeLine, type Interrupts, type IO } from './io.js';
import type { BatchRunDeps } from './batch/job.js';
import { processLockDeps } from './process-identity.js';
import { terminalSafeLines } from './text/terminal-safe.js';
import type { ClientRequest, ExchangeEvent, ServiceClient } from './service/client.js';
import { type ClockSkew, type ClockSkewEvent, clockSkewText } from './service/clocks.js';
import type { Stores } from './stores/owner.js';
import { VERSION } from './version.js';

type Env = Record<string, string | undefined>;

export interface Context {
  io: IO;
  env: Env;
  cwd: string;
  homedir: string;
  now(): Date;
  /** The time-zone database's version (calling windows name it in their rules_version). */
  tzdataVersion: string;
  interrupts: Interrupts;
  flags: GlobalFlags;
  json: boolean;
  quiet: boolean;
  verbose: boolean;
  timeoutMs: number;
  retries: number;
  /** Secrets to keep out of every line `dnc` prints (filled once the key is known). */
  secrets: string[];
  /** Informational line on stderr (suppressed by --quiet). */
  info(line: string): void;
  /** Warning on stderr (always shown). */
  warn(line: string): void;
  /** Debug line on stderr with --verbose only. */
  debug(line: string): void;
  serviceConfig(): Promise<ServiceConfig>;
  /** A client for the configured service, sized for `connections` concurrent requests. */
  createClient(options?: ClientRequest): Promise<ServiceClient>;
  /** The stores the `store` setting names (the local files, or a team's PostgreSQL store); opened once. */
  stores(): Promise<Stores>;
  /** Closes the stores if they were opened (the command's end). */
  closeStores(): Promise<void>;
  /** What a use case is given (its `…Deps`): the factory's parts under the names the use cases take, and `extra`. */
  deps<X extends object>(extra: X): UseCaseDeps & X;
}

/**
 * The dependencies the use cases share, as the factory hands them over: a batch's are the widest (every other use
 * case's `…Deps` is a part of them and its events). Standard input is set up only when a use case reads it (≈ 3 ms).
 */
export type UseCaseDeps = Required<Omit<BatchRunDeps, 'onEvent' | 'askColumns' | 'askReuse' | 'renderThreadFile'>>;

export interface ContextDeps {
  io: IO;
  env: Env;
  cwd?: string;
  homedir?: string;
  now?: () => Date;
  /** The time-zone database's version; by default the runtime's (`process.versions.tz`). */
  tzdataVersion?: string;
  interrupts: Interrupts;
  /** Secrets already known (main collects them before parsing); the key is added once resolved. */
  secrets?: string[];
}

export function createContext(deps: ContextDeps, flags: GlobalFlags): Context {
  const env = deps.env;
  const verbose =
    flags.verbose === true || (env.DNC_VERBOSE !== undefined && env.DNC_VERBOSE !== '' && env.DNC_VERBOSE !== '0');
  const secrets: string[] = deps.secrets ?? [];
  const say = (line: string) => writeLine(deps.io.stderr, terminalSafeLines(redactSecrets(line, secrets)));
  let config: Promise<ServiceConfig> | undefined;
  let stores: Promise<Stores> | undefined;
  const ctx: Context = {
    io: deps.io,
    env,
    cwd: deps.cwd ?? process.cwd(),
    homedir: deps.homedir ?? os.homedir(),
    now: deps.now ?? (() => new Date()),
    tzdataVersion: deps.tzdataVersion ?? process.versions.tz ?? 'unknown',
    interrupts: deps.interrupts,
    flags,
    json: flags.json === true,
    quiet: flags.quiet === true,
    verbose,
    timeoutMs: flags.timeout ?? DEFAULT_TIMEOUT_MS,
    retries: flags.retries ?? DEFAULT_RETRIES,
    secrets,
    info(line) {
      if (!ctx.quiet) say(line);
    },
    warn(line) {
      say(line);
    },
    debug(line) {
      if (verbose) say(line);
    },
    serviceConfig() {
      config ??= resolveServiceConfig(flags, env, ctx.homedir).then((c) => {
        if (!secrets.includes(c.apiKey.value)) secrets.push(c.apiKey.value);
        for (const line of c.warnings) ctx.warn(`dnc: ${line}`);
        // Where each value came from is the first question when a key "does not work".
        const from = (source: string) => (source === 'config' ? `config file ${c.configPath}` : source);
        ctx.debug(
          `config: base URL ${c.baseUrl.value} (${from(c.baseUrl.source)}); API key *** (${from(c.apiKey.source)})` +
            (c.forwardedHost ? `; forwarded host ${c.forwardedHost.value} (${from(c.forwardedHost.source)})` : ''),
        );
        return c;
      });
      return config;
    },
    stores() {
      stores ??= storeSetting(flags, env, ctx.homedir).then(async (setting) => {
        const { openStores } = await import('./stores/owner.js');
        const opened = await openStores(setting, env, ctx.homedir);
        if (setting.url !== null) ctx.debug(`store: the team store ${opened.where} (${setting.from})`);
        return opened;
      });
      return stores;
    },
    async closeStores() {
      await (await stores?.catch(() => null))?.close();
    },
    async createClient(options = {}) {
      const cfg = await ctx.serviceConfig();
      const { createServiceClient } = await import('./service/client.js');
      return createServiceClient({
        baseUrl: cfg.baseUrl.value,
        apiKey: cfg.apiKey.value,
        // Every secret the process knows (a store password too) is masked in what the service says, where it enters.
        secrets,
        forwardedHost: cfg.forwardedHost?.value,
        timeoutMs: ctx.timeoutMs,
        retries: ctx.retries,
        connections: options.connections ?? 4,
        userAgent: `dnc/${VERSION}`,
        onExchange: verbose ? exchangeLine(say) : undefined,
        onClockSkew: options.onClockSkew,
      });
    },
    deps(extra) {
      const io = ctx.io;
      const shared: UseCaseDeps = {
        cwd: ctx.cwd,
        env,
        homedir: ctx.homedir,
        now: () => ctx.now(),
        tzdataVersion: ctx.tzdataVersion,
        flags,
        interrupts: ctx.interrupts,
        serviceConfig: () => ctx.serviceConfig(),
        createClient: (options) => ctx.createClient(options),
        stores: () => ctx.stores(),
        get stdin() {
          return io.stdin;
        },
        get stdinIsTTY() {
          return io.stdinIsTTY;
        },
        stdout: io.stdout,
        lockDeps: processLockDeps(),
        // Standard output is written as the stream itself (a socket cannot be opened by path); input never written.
        isStandardOutput: isStandardStream(1),
        isStandardInput: isStandardStream(0),
        isStandardError: isStandardStream(2),
      };
      // Property by property, so the lazy getters stay lazy (a spread would read standard input now).
      return Object.defineProperties(shared, Object.getOwnPropertyDescriptors(extra)) as UseCaseDeps & typeof extra;
    },
  };
  for (const line of commandLineSecretWarnings(flags)) ctx.warn(line);
  return ctx;
}

/** --verbose: each exchange with the service as one line (the API key masked by `say`'s redaction). */
function exchangeLine(say: (line: string) => void): (e: ExchangeEvent) => void {
  return (e) => {
    const headers = Object.entries(e.requestHeaders)
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ');
    if (e.status === undefined) {
      say(`→ GET ${e.path} (attempt ${e.attempt}) [${headers}] ✗ ${e.error} after ${Math.round(e.durationMs)} ms`);
    } else {
      const interesting = Object.entries(e.responseHeaders ?? {})
        .filter(([k]) => k.startsWith('x-'))
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
      say(
        `→ GET ${e.path} (attempt ${e.attempt}) [${headers}] ← ${e.status} in ` +
          `${Math.round(e.durationMs)} ms [${interesting}]`,
      );
    }
  };
}

/** Whether a path names one of this process's standard streams (/dev/stdout, /proc/self/fd/1, /dev/stdin …). */
function isStandardStream(fd: 0 | 1 | 2): (file: string) => boolean {
  return (file) => {
    try {
      const a = statSync(file);
      const b = fstatSync(fd);
      return a.dev === b.dev && a.ino === b.ino;
    } catch {
      return false;
    }
  };
}

export { isProcessAlive, processLockDeps, processStartTime } from './process-identity.js';

/**
 * A line a use case said (info, warning, debug), or the clocks' disagreement its service client noticed (once a run),
 * shown as the context shows lines.
 */
export type SaidEvent = { type: 'info' | 'warning' | 'debug'; text: string } | ClockSkewEvent;

/** Shows `event` when it is a said line and returns true; false for any other event (the command's to show). */
export function showSaid(ctx: Pick<Context, 'info' | 'warn' | 'debug'>, event: { type: string }): event is SaidEvent {
  const said = event as SaidEvent;
  if (said.type === 'info') ctx.info(said.text);
  else if (said.type === 'warning') ctx.warn(said.text);
  else if (said.type === 'debug') ctx.debug(said.text);
  else if (said.type === 'clock_skew') ctx.warn(clockSkewWarning(said.skew));
  else return false;
  return true;
}

/** The clocks' disagreement as a warning: what is judged by which clock, and what to do. */
function clockSkewWarning(skew: ClockSkew): string {
  return (
    `dnc: warning: ${clockSkewText(skew)}: the service's answers are judged by its own clock, but calling windows, ` +
    "the age of verdicts and the pushes `dnc listen` receives here are told by this machine's; set it right (NTP)"
  );
}
