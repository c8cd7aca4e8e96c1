// `dnc listen`: receives the webhook pushes of a batch, stores each before acknowledging it, and writes results into
// OUTPUT.csv.
import path from 'node:path';
import type { Command } from 'commander';
import { integerOption, nonEmptyOption, parsedOption } from '../cli-options.js';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import type { ListenOptions, ListenRunResult } from '../listen/run.js';
import { listenEndLines, listenSummaryJson, showListenEvents } from '../render/listen.js';
import type { CommandHost } from './host.js';
import { DEFAULT_CLOCK_SKEW_MS } from '../service/answers.js';

export const DEFAULT_LISTEN_PORT = 8787;
export { REFUSALS_SHOWN_PER_MINUTE, statusLine } from '../render/listen.js';

/** The flags as commander hands them over: the port and skew parsed, the host and path checked. */
interface ListenFlags {
  results: string;
  port?: number;
  host?: string;
  path?: string;
  exitWhenDone?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  clockSkew?: number;
}

const EXAMPLES = `
Examples:
  dnc listen --results calls.results.csv --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A   behind a reverse proxy or tunnel
  dnc listen --results calls.results.csv --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A --exit-when-done

Pushes are not signed, so they are served on one unguessable path only (by default the path of
the batch's --webhook-url, or a generated one, printed at start); every other path gets 404, and a
--host other than loopback needs --path. A push must match the lookup sent under its correlation
id (else 4xx, kept as evidence); two different verdicts for one lookup make its row failed
(conflicting_pushes). See docs/listen-security.md.

Each push is committed to the batch's journal (OUTPUT.csv.journal.sqlite) before it is answered
200; OUTPUT.csv is rewritten atomically at most once a second while pushes arrive, and on exit.`;

function hostFlag(raw: string, flag: string): string {
  if (raw.trim() === '') throw usageError('E_USAGE', `${flag} must not be empty`);
  return raw;
}

function pathFlag(raw: string, flag: string): string {
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(raw)) {
    throw usageError('E_USAGE', `${flag} must be a URL path starting with /, without a query or spaces, got '${raw}'`, {
      hint: 'e.g. --path /hooks/3q2Jd0uFQ2yL8mNw1bXz4A, the path of the --webhook-url given to the batch',
    });
  }
  return raw;
}

/** The flags as options (the checks that involve several of them are the use case's: src/listen/run.ts). */
export function parseListenOptions(o: ListenFlags, cwd: string): ListenOptions {
  return {
    results: path.resolve(cwd, o.results),
    port: o.port ?? DEFAULT_LISTEN_PORT,
    host: o.host ?? '127.0.0.1',
    path: o.path,
    exitWhenDone: o.exitWhenDone === true,
    tls:
      o.tlsCert !== undefined && o.tlsKey !== undefined
        ? { certFile: path.resolve(cwd, o.tlsCert), keyFile: path.resolve(cwd, o.tlsKey) }
        : undefined,
    unpairedTls: (o.tlsCert === undefined) !== (o.tlsKey === undefined),
    skewMs: o.clockSkew === undefined ? DEFAULT_CLOCK_SKEW_MS : o.clockSkew * 1000,
  };
}

export function registerListen(program: Command, host: CommandHost): void {
  const command = program
    .command('listen')
    .description(
      "receive a batch's webhook results, store each before acknowledging it, and write them into OUTPUT.csv",
    )
    .addOption(
      nonEmptyOption(
        '--results <file>',
        'the batch output (OUTPUT.csv) whose pending lookups to receive',
        'give the batch output, e.g. --results calls.results.csv',
      ).makeOptionMandatory(),
    )
    .addOption(
      integerOption('--port <n>', `port to listen on (0: any free port; default ${DEFAULT_LISTEN_PORT})`, 0, 65_535),
    )
    .addOption(
      parsedOption(
        '--host <address>',
        'address to bind (default 127.0.0.1: put a reverse proxy or tunnel in front)',
        hostFlag,
      ),
    )
    .addOption(
      parsedOption(
        '--path <path>',
        "serve pushes only on this (secret) path; default: the batch's webhook path, or a generated one",
        pathFlag,
      ),
    )
    .option('--exit-when-done', 'exit 0 once no lookup of the batch is pending')
    .option('--tls-cert <file>', 'PEM certificate: serve HTTPS directly (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key for --tls-cert')
    .addOption(
      integerOption(
        '--clock-skew <seconds>',
        "how far a push's timestamp may fall outside [request, arrival] (default 300)",
        0,
        86_400,
      ),
    )
    .addHelpText('after', EXAMPLES);
  host.action(command, async (ctx, cmd) => runListen(ctx, parseListenOptions(cmd.opts<ListenFlags>(), ctx.cwd)));
}

export async function runListen(ctx: Context, o: ListenOptions): Promise<number> {
  const progress = await createProgress(ctx.io, { quiet: ctx.quiet, plainIntervalMs: 0 });
  const show = showListenEvents(ctx, o, progress);
  let result: ListenRunResult;
  try {
    const { runListenJob } = await import('../listen/run.js');
    result = await runListenJob({ ...o, secrets: ctx.secrets }, ctx.deps({ onEvent: show.event }));
  } finally {
    show.flush();
    progress.stop();
  }
  return finish(ctx, o, result);
}

/** The run's summary (and --json document), and the exit code: 130 when interrupted with lookups still pending. */
function finish(ctx: Context, o: ListenOptions, r: ListenRunResult): number {
  if (ctx.json) writeLine(ctx.io.stdout, listenSummaryJson(o, r));
  for (const line of listenEndLines(o, r)) ctx.info(line);
  return r.kind === 'interrupted' && r.interrupted ? ExitCode.INTERRUPTED : ExitCode.OK;
}
