// `dnc check`: looks up a few numbers now and shows each verdict, register, cost, balance and correlation id.
import type { Command } from 'commander';
import { dateTimeOption, durationOption, LIST_FILE_WHERE } from '../cli-options.js';
import { showSaid, type Context } from '../context.js';
import { errorLines, ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import type { LookupOutcome } from '../service/client.js';
import {
  notSentLine,
  waitingLine,
  numberShown,
  STOPPED_AT_ONCE,
  tallyLine,
  type CheckView,
  type NumberEvent,
} from '../render/check.js';
import type { CheckEvent, CheckOptions, GivenNumber } from '../check/run.js';

const HELP = `
Numbers are E.164 (+12025550123) or national format with --country. NUMBER "-" reads numbers
from stdin, one per line (blank lines and # comments skipped). Every number is checked locally
first: if any cannot be valid, or is an AU number without --webhook-url, nothing is sent.
Numbers are looked up one after another, in the order given; a number given twice is looked up once.

Beside each verdict: the number's local time in each of its time zones, today's calling window
there and whether it may be called now (--at TIME: at that instant instead), under the calling
rules shipped with dnc and the team's policy (--calling-settings FILE, DNC_CALLING_SETTINGS or
"calling" in the config file); --json adds them as "calling". "may call now" is yes only for a
callable verdict inside the window: a number on a register (not exempted), on the internal list
or not valid may never be called (its "reason" says why), one without a verdict not yet.

Credits: every number looked up is charged (a webhook lookup's credits are held), --at or not;
a number on the internal list or reused (--reuse-within) is not sent and costs nothing. To ask
only when numbers may be called, with no lookup and no credit: dnc window --number N --at TIME.

With several numbers the exit code is the most severe outcome, in this order: 4, 5, 6, 3, 2,
10, 0. The key refused (4), the credit limit (5) or an unreachable service stop the run: later
numbers are not sent. 10 (--fail-on-dnc) only when every number was answered. A second Ctrl-C
stops at once.

Examples:
  dnc check +12025550123
  dnc check "020 7946 0123" --country GB --json
  dnc check +16055550123 --at 2026-12-01T14:00:00Z     (its verdict, and may it be called then? 1 credit)
  grep -v '^#' numbers.txt | dnc check - --fail-on-dnc`;

export function registerCheck(program: Command, host: CommandHost): void {
  const command = program
    .command('check')
    .description('look up phone numbers now: verdict, register, cost, balance and correlation id')
    .argument('<number...>', 'phone numbers (E.164, or national with --country); "-" reads them from stdin')
    .option('--country <cc>', 'region for numbers in national format, e.g. US or GB')
    .option('--webhook-url <url>', 'webhook mode: the service answers 202 and pushes the result to this https URL')
    .option('--fail-on-dnc', 'exit 10 when a number is on a do-not-call register')
    .option(
      '--no-validate',
      'send numbers that parse but do not look valid (the service may charge for invalid_phone_number)',
    )
    .option(
      '--allow-insecure-webhook-url',
      'allow an http:// or loopback --webhook-url (for `dnc sandbox --allow-insecure-webhooks`)',
    )
    .addOption(
      durationOption(
        '--reuse-within <duration>',
        'reuse the verdict of a number checked within DURATION (e.g. 7d, 12h): nothing sent, no credits',
      ),
    )
    .option('--suppression-list <path>', `the internal do-not-call list and exemptions (${LIST_FILE_WHERE})`)
    .addOption(
      dateTimeOption('--at <time>', 'tell the calling windows at this ISO 8601 time (with Z or an offset), not now'),
    )
    .option(
      '--calling-settings <file>',
      "a JSON file of the team's calling policy and overrides (env DNC_CALLING_SETTINGS; else the config's calling)",
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as Record<string, unknown>;
    const options: CheckOptions = {
      country: o.country as string | undefined,
      webhookUrl: o.webhookUrl as string | undefined,
      validate: o.validate !== false,
      allowInsecureWebhookUrl: o.allowInsecureWebhookUrl === true,
      reuseWithinMs: (o.reuseWithin as number | undefined) ?? null,
      suppressionList: o.suppressionList as string | undefined,
      at: o.at as Date | undefined,
      callingSettings: o.callingSettings as string | undefined,
    };
    return check(ctx, await givenNumbers(ctx, cmd.args), options, o.failOnDnc === true);
  });
}

/** Runs the check use case, showing each event as it comes (src/render/check.ts); returns the exit code. */
async function check(ctx: Context, given: GivenNumber[], options: CheckOptions, failOnDnc: boolean): Promise<number> {
  // Loaded with the use case, when the command runs: the use case, and the lines and JSON of the user's records.
  const [{ runCheck }, records] = await Promise.all([import('../check/run.js'), import('../render/check-records.js')]);
  const view: CheckView = {
    json: ctx.json,
    render: { unicode: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, webhookUrl: options.webhookUrl },
    reuseWithinMs: options.reuseWithinMs ?? null,
    records,
  };
  let blocks = 0;
  let exit: number = ExitCode.OK;
  const show = (e: CheckEvent) => {
    if (showSaid(ctx, e)) return;
    if (e.type === 'not_sent') return ctx.warn(notSentLine(e));
    if (e.type === 'waiting_for_colleague') return ctx.info(waitingLine(e));
    exit = mostSevere(exit, numberExit(e, failOnDnc));
    const { block, error } = numberShown(e, view);
    if (block && !ctx.json && blocks++ > 0) writeLine(ctx.io.stdout, '');
    for (const line of block ?? []) writeLine(ctx.io.stdout, line);
    for (const line of error ? errorLines(error) : []) ctx.warn(line);
  };
  const result = await runCheck(ctx.deps({ onEvent: show }), given, options);
  const tally = tallyLine(result);
  if (tally !== null) ctx.info(tally);
  if (result.interrupts >= 2) ctx.warn(STOPPED_AT_ONCE);
  return result.interrupts > 0 ? ExitCode.INTERRUPTED : exit;
}

/** The exit code one number's event asks for (the run exits with the most severe). */
function numberExit(e: NumberEvent, failOnDnc: boolean): number {
  switch (e.type) {
    case 'suppressed':
      return failOnDnc ? ExitCode.ON_DNC_LIST : ExitCode.OK;
    case 'reused':
      return failOnDnc && e.registerDnc && !e.exempted ? ExitCode.ON_DNC_LIST : ExitCode.OK;
    case 'answered':
      return e.exempted ? ExitCode.OK : outcomeExit(e.outcome, failOnDnc);
    case 'refused_answer':
      return ExitCode.SERVICE;
    case 'request_error':
      return e.error.exitCode;
  }
}

/** Arguments in order; "-" stands for the lines of stdin (read once). */
async function givenNumbers(ctx: Context, args: string[]): Promise<GivenNumber[]> {
  const out: GivenNumber[] = [];
  let stdinRead = false;
  for (const arg of args) {
    if (arg !== '-') {
      out.push({ input: arg, where: '' });
      continue;
    }
    if (stdinRead) continue;
    stdinRead = true;
    if (ctx.io.stdinIsTTY) ctx.info('reading numbers from stdin, one per line; end with Ctrl-D');
    const { createInterface } = await import('node:readline');
    let n = 0;
    for await (const line of createInterface({ input: ctx.io.stdin, crlfDelay: Infinity })) {
      n++;
      const text = line.trim();
      if (text === '' || text.startsWith('#')) continue;
      out.push({ input: text, where: `stdin line ${n}: ` });
    }
  }
  return out;
}

function outcomeExit(outcome: LookupOutcome, failOnDnc: boolean): number {
  switch (outcome.kind) {
    case 'succeeded':
      return failOnDnc && outcome.body.do_not_call ? ExitCode.ON_DNC_LIST : ExitCode.OK;
    case 'started':
      return ExitCode.OK;
    case 'failed':
      return outcome.body.error_code === 'invalid_phone_number' ? ExitCode.INPUT : ExitCode.SERVICE;
    case 'bad_response':
      return ExitCode.SERVICE;
  }
}

// Most severe first: a refused key or an exhausted credit limit stops everything; an unanswered
// number matters more than an invalid one; 10 ("listed") only when every number was answered.
const SEVERITY: readonly number[] = [
  ExitCode.INTERNAL,
  ExitCode.AUTH,
  ExitCode.CREDIT,
  ExitCode.SERVICE,
  ExitCode.INPUT,
  ExitCode.USAGE,
  ExitCode.ON_DNC_LIST,
  ExitCode.OK,
];

export function mostSevere(a: number, b: number): number {
  const rank = (code: number) => (SEVERITY.includes(code) ? SEVERITY.indexOf(code) : 0);
  return rank(a) <= rank(b) ? a : b;
}
