// Builds the commander program and is the one place where errors become exit codes.
import os from 'node:os';
import { Command, CommanderError, type Argument, type Help, type Option } from 'commander';
import { defaultText } from './cli-tree.js';
import { registerBatch } from './commands/batch.js';
import { registerCheck } from './commands/check.js';
import { registerCompletion } from './commands/completion.js';
import { addExitCodeHelp, registerHelp } from './commands/help.js';
import { registerListen } from './commands/listen.js';
import { registerSandbox } from './commands/sandbox.js';
import { registerTrace } from './commands/trace.js';
import { registerUsage } from './commands/usage.js';
import { registerVerify } from './commands/verify.js';
import { registerWindow } from './commands/window.js';
import { registerSuppress } from './commands/suppress.js';
import { registerExempt } from './commands/exempt.js';
import { registerStatus } from './commands/status.js';
import { registerReport } from './commands/report.js';
import { registerStore } from './commands/store.js';
import type { ActionOptions, CommandHost } from './commands/host.js';
import { integerOption, nonEmptyOption } from './cli-options.js';
import type { GlobalFlags } from './config.js';
import { createContext, type Context, type ContextDeps } from './context.js';
import type { Interrupts } from './io.js';
import { DncError, errorLines, ExitCode, INTERNAL_ERROR_HINT, redactSecrets, usageError } from './errors.js';
import { jsonErrorOf, usageHint, withUsageHint } from './render/error.js';
import { mayBeTerminal, processIO, writeLine, type IO } from './io.js';
import { collectSecrets, maskOptionValues, redactingIO } from './redact.js';
import { terminalSafe, terminalSafeLines } from './text/terminal-safe.js';
import { VERSION } from './version.js';

export interface MainDeps extends Partial<Omit<ContextDeps, 'io' | 'env'>> {
  io: IO;
  env: Record<string, string | undefined>;
}

/** An option's help text with its default and choices as the user would type them. */
function plainOptionDescription(this: void, option: Option): string {
  const extra: string[] = [];
  if (option.argChoices) extra.push(`one of: ${option.argChoices.join(', ')}`);
  const shown = defaultText(option);
  if (shown !== undefined) extra.push(`default: ${shown}`);
  if (option.envVar !== undefined) extra.push(`env: ${option.envVar}`);
  return extra.length > 0 ? `${option.description} (${extra.join('; ')})` : option.description;
}

function plainArgumentDescription(this: void, argument: Argument): string {
  const extra: string[] = [];
  if (argument.argChoices) extra.push(`one of: ${argument.argChoices.join(', ')}`);
  if (argument.defaultValue !== undefined)
    extra.push(`default: ${argument.defaultValueDescription ?? String(argument.defaultValue)}`);
  return extra.length > 0 ? `${argument.description} (${extra.join('; ')})` : argument.description;
}

function globalFlags(command: Command): GlobalFlags {
  const o = command.optsWithGlobals() as Record<string, unknown>;
  const flags: GlobalFlags = {
    baseUrl: o.baseUrl as string | undefined,
    apiKey: o.apiKey as string | undefined,
    apiKeyFile: o.apiKeyFile as string | undefined,
    forwardedHost: o.forwardedHost as string | undefined,
    config: o.config as string | undefined,
    json: o.json === true,
    quiet: o.quiet === true,
    verbose: o.verbose === true,
    profile: o.profile as string | undefined,
    store: o.store as string | undefined,
  };
  if (o.timeout !== undefined) flags.timeout = o.timeout as number;
  if (o.retries !== undefined) flags.retries = o.retries as number;
  return flags;
}

/** Each command's registration, in the order `dnc --help` lists them. */
const COMMANDS: ReadonlyArray<(program: Command, host: CommandHost) => void> = [
  registerCheck,
  registerBatch,
  registerUsage,
  registerListen,
  registerSandbox,
  registerVerify,
  registerWindow,
  registerTrace,
  registerSuppress,
  registerExempt,
  registerStatus,
  registerReport,
  registerStore,
  registerCompletion,
  registerHelp,
];

/** The program: every command's options and help; a command's work is loaded when it runs (docs/architecture.md). */
export function buildProgram(
  deps: MainDeps,
  setExit: (code: number) => void,
  onContext: (ctx: Context) => void,
  actions: Map<Command, ActionOptions> = new Map(),
): Command {
  const { io } = deps;
  const interrupts: Interrupts = deps.interrupts ?? { on: () => () => {} };
  const program = new Command('dnc');
  const commanderOutput = program.configureOutput();
  const helpConfiguration: Partial<Help> = {
    optionDescription: plainOptionDescription,
    argumentDescription: plainArgumentDescription,
  };
  program
    .description(
      'Check phone numbers against national do-not-call registers, scrub call lists, and report credit usage.',
    )
    .version(VERSION, '-V, --version')
    .addOption(
      nonEmptyOption(
        '--base-url <url>',
        "the service's base address (env DNC_BASE_URL)",
        'leave --base-url out to use DNC_BASE_URL or the config file',
      ),
    )
    .option('--api-key <key>', 'the API key (env DNC_API_KEY)')
    .option('--api-key-file <path>', 'read the API key from a file')
    .addOption(
      nonEmptyOption(
        '--forwarded-host <host>',
        'resellers: sent as X-Forwarded-Host on every request (env DNC_FORWARDED_HOST)',
        'name the client the requests are for (an unset shell variable gives an empty value); leave ' +
          '--forwarded-host out to send none',
      ),
    )
    .option('--config <path>', 'JSON config file with base_url, api_key, forwarded_host (env DNC_CONFIG)')
    .option('--json', 'machine-readable output on stdout')
    .option('--quiet', 'no progress or informational lines on stderr')
    .option('--verbose', 'log each HTTP request and response on stderr, key redacted (env DNC_VERBOSE=1)')
    .addOption(integerOption('--timeout <ms>', 'per-request timeout in milliseconds (default: 30000)', 1))
    .addOption(integerOption('--retries <n>', 'retries of failures known to be uncharged, 0 to 10 (default: 3)', 0, 10))
    .option('--profile <name>', 'use the named profile of the config file (env DNC_PROFILE)')
    .option('--store <url>', "a team's PostgreSQL store, postgres://… (env DNC_STORE; default: the local files)")
    .showSuggestionAfterError(true)
    .exitOverride()
    // Inherited by every command registered below: defaults as typed (8, not "8"), and parse
    // errors printed by reportError in dnc's own format rather than commander's.
    .configureHelp(helpConfiguration)
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: () => {},
      // Commander's own defaults, asked only of what may be a terminal: they read process.stdout and process.stderr,
      // which sets them up (see processIO), and a pipe or a file has no width and no colours anyway.
      // (Typed as a number, but commander's own returns undefined off a terminal: its default width then.)
      getOutHelpWidth: () => (mayBeTerminal(1) ? commanderOutput.getOutHelpWidth!() : (undefined as unknown as number)),
      getErrHelpWidth: () => (mayBeTerminal(2) ? commanderOutput.getErrHelpWidth!() : (undefined as unknown as number)),
      // Off a terminal commander would still keep colours FORCE_COLOR asks for; dnc's help has none to keep.
      getOutHasColors: () => mayBeTerminal(1) && Boolean(commanderOutput.getOutHasColors!()),
      getErrHasColors: () => mayBeTerminal(2) && Boolean(commanderOutput.getErrHasColors!()),
    });

  const host: CommandHost = {
    action(command, run, how = {}) {
      actions.set(command, how);
      command.action(async (...args: unknown[]) => {
        const cmd = args[args.length - 1] as Command;
        const ctx = createContext({ ...deps, interrupts }, globalFlags(cmd));
        onContext(ctx);
        try {
          setExit(await run(ctx, cmd));
        } finally {
          await ctx.closeStores();
        }
      });
    },
  };
  for (const register of COMMANDS) register(program, host);
  addExitCodeHelp(program);
  return program;
}

/** Runs `dnc` with `argv` (without node and script) and returns the exit code; never calls process.exit. */
export async function main(argv: string[], givenDeps: MainDeps): Promise<number> {
  // Redaction is in place before the first line: the key may be echoed by the parser or a configuration error.
  const secrets = givenDeps.secrets ?? collectSecrets(argv, givenDeps.env, givenDeps.homedir ?? os.homedir());
  let stdoutWritten = false;
  const deps: MainDeps = {
    ...givenDeps,
    secrets,
    io: redactingIO(givenDeps.io, secrets, () => (stdoutWritten = true)),
  };
  let exitCode: number = ExitCode.OK;
  let ctx: Context | undefined;
  const actions = new Map<Command, ActionOptions>();
  const program = buildProgram(
    deps,
    (code) => {
      exitCode = code;
    },
    (c) => {
      ctx = c;
    },
    actions,
  );
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    // Help and --version "errors" are successes; commander already printed its message.
    if (err instanceof CommanderError && SUCCESSES.includes(err.code)) return ExitCode.OK;
    // One error, shown twice alike: on stderr, and with --json on stdout, with the same message and hint.
    const shown = shownError(err, program, argv);
    reportError(shown, deps.io, ctx, secrets);
    // --json: a script reading stdout gets the error there too, unless the command already said something there.
    const json = ctx?.json ?? argv.includes('--json');
    if (json && !stdoutWritten) {
      const error = jsonErrorOf(shown);
      // The command's own object when it has one for a refusal (a batch's summary is printed on every exit: cli.md).
      const refusedJson = actions.get(commandNamed(program, argv).command)?.refusedJson;
      writeLine(deps.io.stdout, JSON.stringify(refusedJson ? refusedJson(error) : { error }));
    }
    return shown.exitCode;
  }
}

/** Commander's "errors" that are not: help shown, the version shown. */
const SUCCESSES: readonly string[] = ['commander.helpDisplayed', 'commander.version', 'commander.help'];

/**
 * The command the words of argv name (`suppress add`), as far as they name one: whose usage a usage error points to.
 * Option values are stepped over (`--store URL check`), so a value is never taken for a command.
 */
function commandNamed(program: Command, argv: readonly string[]): { names: string; command: Command } {
  const names: string[] = [];
  let at = program;
  const options = () => {
    const all: Option[] = [];
    for (let c: Command | null = at; c; c = c.parent) all.push(...c.options);
    return all;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') break;
    if (arg.startsWith('-')) {
      const option = arg.includes('=') ? undefined : options().find((o) => o.long === arg || o.short === arg);
      if (option?.required) i++;
      continue;
    }
    const sub = at.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) break;
    names.push(sub.name());
    at = sub;
  }
  return { names: names.join(' '), command: at };
}

/**
 * Whatever ended the run as the DncError the user is shown: commander's parse errors as E_USAGE with its suggestion
 * ("did you mean") and where to read the usage; a usage error without a hint pointed to the usage; anything else is
 * E_INTERNAL, a bug.
 */
function shownError(err: unknown, program: Command, argv: readonly string[]): DncError {
  const command = commandNamed(program, argv).names;
  if (err instanceof CommanderError) {
    const [first = '', ...rest] = err.message.replace(/^error: /, '').split('\n');
    const didYouMean = /^\(Did you mean (.+)\?\)$/.exec(rest.join(' ').trim());
    // Commander quotes what was typed (`--api_key=KEY`): option values are masked.
    const message = maskOptionValues(`${first}${didYouMean ? ` (did you mean ${didYouMean[1]}?)` : ''}`);
    return usageError('E_USAGE', message, { hint: usageHint(command) });
  }
  if (err instanceof DncError) return withUsageHint(err, command);
  const e = err instanceof Error ? err : new Error(String(err));
  return new DncError('E_INTERNAL', `internal error: ${e.message}`, {
    hint: INTERNAL_ERROR_HINT,
    cause: e,
  });
}

function reportError(err: DncError, io: IO, ctx: Context | undefined, secrets: readonly string[]): void {
  // An error carries no colour of ours: every escape sequence in it came from outside (a CSV header, a flag's value,
  // a service text), so even colour is escaped (ESC[8m would hide what follows). Line breaks dnc put there stay.
  const sayPlain = (line: string) =>
    writeLine(io.stderr, redactSecrets(line, secrets).split('\n').map(terminalSafe).join('\n'));
  for (const line of errorLines(err)) sayPlain(line);
  if (ctx?.verbose && err.cause instanceof Error && err.cause.stack)
    writeLine(io.stderr, terminalSafeLines(redactSecrets(err.cause.stack, secrets)));
}

/** The process entry point (bin/dnc.js): real streams, signals as cancellation, exit code set at the end. */
export function runFromProcess(): void {
  const handlers = new Set<(count: number) => void>();
  let count = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    count++;
    if (handlers.size === 0) {
      process.exit(ExitCode.INTERRUPTED);
    }
    for (const h of handlers) h(count);
    void signal;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A closed terminal or SSH session ends a batch as Ctrl-C does: lookups in flight are awaited and stored.
  process.on('SIGHUP', onSignal);
  // stdout and stderr are set up when first needed (see processIO), and get their listeners then.
  const io = processIO(process.env, (stream, fd) => {
    if (fd === 1) {
      // A closed pipe (`dnc … | head`) is not an error. A command at work (a batch with lookups in flight) is
      // interrupted cleanly rather than killed, so no answer it paid for is lost.
      stream.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EPIPE') return;
        if (handlers.size > 0) onSignal('SIGPIPE');
        else process.exit(process.exitCode ?? 0);
      });
    } else {
      // With stderr closed there is nowhere left to report to: the work goes on (a batch still finishes and writes its
      // output).
      stream.on('error', () => {});
    }
  });
  const interrupts: Interrupts = {
    on(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
  };
  main(process.argv.slice(2), { io, env: process.env, interrupts }).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      // Outside main's redacting streams: masked here with what main would have known.
      const secrets = collectSecrets(process.argv.slice(2), process.env, os.homedir());
      io.stderr.write(`dnc: internal error: ${terminalSafeLines(redactSecrets(String(err), secrets))}\n`);
      process.exitCode = ExitCode.INTERNAL;
    },
  );
}
