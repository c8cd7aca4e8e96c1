// `dnc check`: looks up a few numbers now and shows each verdict, register, cost, balance and correlation id.
import type { Command } from 'commander';
import { durationOption } from '../cli-options.js';
import { checkWebhookUrlOption, parseCountryOption } from '../config.js';
import type { Context } from '../context.js';
import { DncError, errorLines, ExitCode, inputError, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from '../main.js';
import type { NormalizedPhone } from '../phone/normalize.js';
import { formatInteger } from '../text/numbers.js';
import type { Judgement } from '../service/answers.js';
import type { LookupOutcome, ResponseMeta } from '../service/client.js';
import type { JsonError } from '../render/check.js';
import { terminalSafe } from '../text/terminal-safe.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';

interface CheckOptions {
  country?: string;
  webhookUrl?: string;
  failOnDnc: boolean;
  validate: boolean;
  allowInsecureWebhookUrl: boolean;
  /**
   * --reuse-within: a verdict of the same service checked within this window is shown instead of a lookup
   * (src/evidence).
   */
  reuseWithinMs?: number | null;
  /** --suppression-list: the internal do-not-call list and exemptions (src/compliance). */
  suppressionList?: string | undefined;
}

/** A number as given, where it came from (for messages), and what normalisation made of it. */
interface Target {
  input: string;
  /** '' for an argument, 'stdin line N: ' for a line of standard input. */
  where: string;
  phone: NormalizedPhone;
}

type Accepted = Target & { phone: Extract<NormalizedPhone, { ok: true }> };

const HELP = `
Numbers are E.164 (+12025550123) or national format with --country. NUMBER "-" reads numbers
from stdin, one per line (blank lines and # comments skipped). Every number is checked locally
first: if any cannot be valid, or is an AU number without --webhook-url, nothing is sent.
Numbers are looked up one after another, in the order given; a number given twice is looked up once.

With several numbers the exit code is the most severe outcome, in this order: 4, 5, 6, 3, 2,
10, 0. The key refused (4), the credit limit (5) or an unreachable service stop the run: later
numbers are not sent. 10 (--fail-on-dnc) only when every number was answered. A second Ctrl-C
stops at once.

Examples:
  dnc check +12025550123
  dnc check "020 7946 0123" --country GB --json
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
    .option(
      '--suppression-list <path>',
      'the internal do-not-call list and exemptions (env DNC_SUPPRESSION_LIST; default: the state folder)',
    )
    .addHelpText('after', HELP);
  host.action(command, async (ctx, cmd) => {
    const o = cmd.opts() as Record<string, unknown>;
    const options: CheckOptions = {
      country: o.country as string | undefined,
      webhookUrl: o.webhookUrl as string | undefined,
      failOnDnc: o.failOnDnc === true,
      validate: o.validate !== false,
      allowInsecureWebhookUrl: o.allowInsecureWebhookUrl === true,
      reuseWithinMs: (o.reuseWithin as number | undefined) ?? null,
      suppressionList: o.suppressionList as string | undefined,
    };
    return runCheck(ctx, cmd.args, options);
  });
}

export async function runCheck(ctx: Context, args: string[], options: CheckOptions): Promise<number> {
  const country = await parseCountryOption(options.country);
  await checkWebhookUrlOption(
    options.webhookUrl,
    options.allowInsecureWebhookUrl,
    options.webhookUrl !== undefined ? [(await ctx.serviceConfig()).apiKey.value] : [],
  );
  const { normalizePhone } = await import('../phone/normalize.js');

  const inputs = await collectInputs(ctx, args);
  if (inputs.length === 0) {
    throw usageError('E_USAGE', 'no numbers to check: standard input held none', {
      hint: 'give numbers as arguments, or one per line on stdin with "-"',
    });
  }
  const targets = inputs.map((i) => ({
    ...i,
    phone: normalizePhone(i.input, { defaultCountry: country, validate: options.validate }),
  }));
  const cc = await import('../compliance/check-compliance.js');
  const { complianceSettings, openListForScrub } = await import('../compliance/settings.js');
  // Configuration problems first, so that nothing between opening the list and the loop below can fail but refusals.
  await ctx.serviceConfig();
  const numbers = targets.flatMap((t) => (t.phone.ok ? [t.phone.e164] : []));
  const compliance = cc.checkCompliance(
    await openListForScrub(ctx, await complianceSettings(ctx, { suppressionList: options.suppressionList }), numbers),
    ctx.now,
  );
  let accepted: Accepted[];
  try {
    // A number on the internal list is never sent, so it needs no --webhook-url.
    const onList = new Set<string>();
    for (const n of numbers) if ((await compliance.decide(n)).kind === 'suppressed') onList.add(n);
    accepted = refuseLocally(ctx, targets, options, (e164) => onList.has(e164));
  } catch (err) {
    await compliance.close();
    throw err;
  }

  // One lookup per distinct number: a repeat would only spend credits again.
  const distinct = [...new Map(accepted.map((t) => [t.phone.e164, t])).values()];
  if (distinct.length < accepted.length) {
    ctx.info(`${accepted.length - distinct.length} repeated number(s) will be looked up once`);
  }

  const { renderOutcome, jsonLine } = await import('../render/check.js');
  const client = await ctx.createClient({ connections: 1 });
  const ev = await import('../evidence/check-evidence.js');
  const evidence = await ev.openCheckEvidence(
    ctx,
    ctx,
    new URL((await ctx.serviceConfig()).baseUrl.value).origin,
    options.reuseWithinMs ?? null,
  );
  const renderOptions = { unicode: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, webhookUrl: options.webhookUrl };
  const tally = {
    callable: 0,
    listed: 0,
    internal: 0,
    started: 0,
    failed: 0,
    bad_response: 0,
    errors: 0,
    notSent: 0,
    credits: 0,
    held: 0,
  };
  let blocks = 0;
  let exit: number = ExitCode.OK;
  // Ctrl-C: the lookup in flight may already be charged, so the first one lets it finish and be shown,
  // then stops; a second one drops the connection at once.
  let interrupts = 0;
  const stopListening = ctx.interrupts.on((count) => {
    interrupts = count;
    if (count >= 2) void client.destroy?.();
  });
  try {
    for (let i = 0; i < distinct.length; i++) {
      const target = distinct[i]!;
      if (interrupts > 0) {
        const rest = distinct.slice(i).map((t) => t.phone.e164);
        ctx.warn(`dnc: interrupted; not sent (${rest.length}): ${rest.join(', ')}`);
        tally.notSent = rest.length;
        break;
      }
      const label = target.phone.international;
      // The user's own list comes before any lookup: such a number is never sent and costs nothing.
      const decision = await compliance.decide(target.phone.e164);
      if (decision.kind === 'suppressed') {
        tally.internal++;
        exit = mostSevere(exit, options.failOnDnc ? ExitCode.ON_DNC_LIST : ExitCode.OK);
        if (!ctx.json && blocks++ > 0) writeLine(ctx.io.stdout, '');
        for (const line of ctx.json
          ? [cc.suppressedJson(decision, target.phone.country)]
          : cc.suppressedLines(decision, label))
          writeLine(ctx.io.stdout, line);
        continue;
      }
      const reused = await evidence.reusable(target.phone.e164);
      if (reused) {
        // A reused register verdict is exempted (or its ended exemption reported) as a fresh one is.
        const registerDnc = reused.result === 'do_not_call';
        const exempted = cc.exemptedOutcome(decision, registerDnc);
        tally[registerDnc && !exempted ? 'listed' : 'callable']++;
        exit = mostSevere(exit, options.failOnDnc && registerDnc && !exempted ? ExitCode.ON_DNC_LIST : ExitCode.OK);
        if (decision.kind === 'expired_exemption' && registerDnc) {
          ctx.warn(
            `dnc: ${label}: the exemption (${decision.exemption.basis}) expired ${decision.exemption.until} and ` +
              `was ignored`,
          );
        }
        if (ctx.json) {
          const extra = cc.exemptionJson(decision, registerDnc);
          const line = ev.reusedJson(reused, options.reuseWithinMs!);
          writeLine(
            ctx.io.stdout,
            Object.keys(extra).length ? JSON.stringify({ ...(JSON.parse(line) as object), ...extra }) : line,
          );
        } else {
          if (blocks++ > 0) writeLine(ctx.io.stdout, '');
          for (const line of [
            ...ev.reusedLines(reused, label, options.reuseWithinMs!),
            ...cc.exemptionLines(decision, registerDnc),
          ])
            writeLine(ctx.io.stdout, line);
        }
        continue;
      }
      const requestedAt = ctx.now();
      let outcome: LookupOutcome;
      try {
        outcome = await client.lookup({ phoneNumber: target.phone.e164, webhookUrl: options.webhookUrl });
      } catch (err) {
        if (interrupts >= 2) {
          // The second Ctrl-C dropped this lookup's connection: not a service failure. The closing warning says it may
          // be charged.
          tally.errors++;
          const rest = distinct.slice(i + 1).map((t) => t.phone.e164);
          if (rest.length > 0) ctx.warn(`dnc: interrupted; not sent (${rest.length}): ${rest.join(', ')}`);
          tally.notSent = rest.length;
          break;
        }
        if (!(err instanceof DncError)) throw err;
        tally.errors++;
        exit = mostSevere(exit, err.exitCode);
        const meta = err.details.meta as ResponseMeta | undefined;
        const body = err.details.body;
        if (ctx.json) {
          // A line for every number: the service's body when it sent one, else what dnc knows; dnc_error says why no
          // verdict.
          const error = jsonError(withNumber(err, label));
          const known = body !== null && typeof body === 'object' ? body : { phone_number: target.phone.e164 };
          writeLine(
            ctx.io.stdout,
            jsonLine(
              known,
              { status: meta?.status ?? null, creditCost: meta?.creditCost ?? null } as ResponseMeta,
              error,
            ),
          );
        }
        for (const line of errorLines(withNumber(err, label))) ctx.warn(line);
        if (stopsTheRest(err) && i + 1 < distinct.length) {
          const rest = distinct.slice(i + 1).map((t) => t.phone.e164);
          ctx.warn(`dnc: not sent (${rest.length}): ${rest.join(', ')}`);
          tally.notSent = rest.length;
          break;
        }
        continue;
      }
      await evidence.record(outcome, requestedAt, options.webhookUrl, target.phone.e164);
      if (outcome.kind === 'bad_response') {
        // No verdict: whatever the body says, the number is neither callable nor listed (src/service/answers.ts).
        tally.bad_response++;
        exit = mostSevere(exit, ExitCode.SERVICE);
        const refused = badResponseError(outcome.verdict, label, outcome.stop);
        if (ctx.json) writeLine(ctx.io.stdout, jsonLine(outcome.raw, outcome.meta, jsonError(refused)));
        else {
          if (blocks++ > 0) writeLine(ctx.io.stdout, '');
          for (const line of renderOutcome(outcome, label, renderOptions)) writeLine(ctx.io.stdout, line);
        }
        for (const line of errorLines(refused)) ctx.warn(line);
        if (outcome.stop && i + 1 < distinct.length) {
          const rest = distinct.slice(i + 1).map((t) => t.phone.e164);
          ctx.warn(`dnc: not sent (${rest.length}): ${rest.join(', ')}`);
          tally.notSent = rest.length;
          break;
        }
        continue;
      }
      tally[outcome.kind === 'started' ? 'held' : 'credits'] += outcome.meta.creditCost ?? 0;
      const exempted = cc.exemptedOutcome(decision, cc.registerSaysDnc(outcome));
      exit = mostSevere(exit, exempted ? ExitCode.OK : outcomeExit(outcome, options.failOnDnc));
      if (outcome.kind === 'succeeded') tally[outcome.body.do_not_call && !exempted ? 'listed' : 'callable']++;
      else tally[outcome.kind]++;
      if (decision.kind === 'expired_exemption' && outcome.kind === 'succeeded' && outcome.body.do_not_call) {
        ctx.warn(
          `dnc: ${label}: the exemption (${decision.exemption.basis}) expired ${decision.exemption.until} and ` +
            `was ignored`,
        );
      }
      if (ctx.json) {
        const extra = cc.exemptionJson(decision, cc.registerSaysDnc(outcome));
        writeLine(
          ctx.io.stdout,
          jsonLine(Object.keys(extra).length ? { ...(outcome.raw as object), ...extra } : outcome.raw, outcome.meta),
        );
        if (outcome.kind === 'failed') {
          // The service's text, escaped: a line break in it must not start a line that looks like dnc's.
          const b = outcome.body;
          ctx.warn(
            `dnc: ${label}: lookup failed: ${terminalSafe(b.error_code)}: ` +
              `${terminalSafe(String(b.error ?? ''))} (correlation id ${terminalSafe(b.correlation_id)})`,
          );
        }
      } else {
        if (blocks++ > 0) writeLine(ctx.io.stdout, '');
        for (const line of [
          ...renderOutcome(outcome, label, renderOptions),
          ...cc.exemptionLines(decision, cc.registerSaysDnc(outcome)),
        ])
          writeLine(ctx.io.stdout, line);
      }
    }
  } finally {
    stopListening();
    await compliance.close();
    await evidence.close();
    await client.close();
  }
  if (distinct.length > 1) {
    const parts = (
      [
        [tally.callable, 'callable'],
        [tally.listed, 'on a register'],
        [tally.internal, 'on the internal list'],
        [tally.started, 'started'],
        [tally.failed, 'failed'],
        [tally.bad_response, 'answered with no verdict'],
        [tally.errors, 'not answered'],
        [tally.notSent, 'not sent'],
      ] as const
    )
      .filter(([n]) => n > 0)
      .map(([n, what]) => `${formatInteger(n)} ${what}`);
    const held = tally.held > 0 ? `, ${formatInteger(tally.held)} held` : '';
    ctx.info(
      `${formatInteger(distinct.length)} numbers: ${parts.join(', ')}; ${formatInteger(tally.credits)} ` +
        `credit(s) charged${held}`,
    );
  }
  if (interrupts >= 2) {
    ctx.warn(
      'dnc: stopped at once: a lookup in flight may have been charged without its answer (`dnc usage` shows the ' +
        'balance)',
    );
  }
  return interrupts > 0 ? ExitCode.INTERRUPTED : exit;
}

/** Arguments in order; "-" stands for the lines of stdin (read once). */
async function collectInputs(ctx: Context, args: string[]): Promise<Array<{ input: string; where: string }>> {
  const out: Array<{ input: string; where: string }> = [];
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

/**
 * Every number is judged before anything is sent: credits are money, and a list that is half
 * sent when a later number turns out bad is worse than one refused whole.
 */
function refuseLocally(
  ctx: Context,
  targets: Target[],
  options: CheckOptions,
  suppressed: (e164: string) => boolean,
): Accepted[] {
  const problems: DncError[] = [];
  for (const t of targets) {
    if (!t.phone.ok) {
      problems.push(
        inputError('E_INVALID_NUMBER', `${t.where}${t.phone.message}; nothing was sent`, {
          hint:
            t.phone.e164 !== undefined
              ? 'fix the number, or pass --no-validate to send numbers that parse anyway (an ' +
                'invalid_phone_number answer is charged)'
              : 'write the number in E.164 (+12025550123), or give --country for national format',
        }),
      );
    } else if (
      options.webhookUrl === undefined &&
      t.phone.country &&
      WEBHOOK_ONLY_COUNTRIES.includes(t.phone.country) &&
      !suppressed(t.phone.e164)
    ) {
      problems.push(
        usageError(
          'E_WEBHOOK_REQUIRED',
          `${t.where}${t.phone.international} is an ${t.phone.country} number and ${t.phone.country} lookups ` +
            `are webhook-only; nothing was sent`,
          {
            hint: 'pass --webhook-url https://… (a public receiver, such as `dnc listen` behind your HTTPS endpoint)',
          },
        ),
      );
    }
  }
  if (problems.length === 0) return targets as Accepted[];
  if (problems.length === 1) throw problems[0]!;
  for (const p of problems) ctx.warn(`dnc: ${p.message.replace(/; nothing was sent$/, '')}`);
  // A missing option (exit 2) is the first thing to fix; otherwise the data is at fault (exit 3).
  const usage = problems.some((p) => p.exitCode === ExitCode.USAGE);
  throw new DncError(
    usage ? 'E_WEBHOOK_REQUIRED' : 'E_INVALID_NUMBER',
    `${formatInteger(problems.length)} of ${formatInteger(targets.length)} numbers were refused (listed above); ` +
      `nothing was sent`,
    {
      hint: usage
        ? 'give --webhook-url for webhook-only countries, and fix or remove any other number listed'
        : 'fix or remove the numbers listed (--no-validate sends numbers that parse but do not look valid)',
    },
  );
}

function withNumber(err: DncError, label: string): DncError {
  return new DncError(err.code, `${label}: ${err.message}`, { hint: err.hint, details: err.details, cause: err.cause });
}

/**
 * Failures that would only repeat for every later number: the key or a reseller header refused, the credit limit,
 * a refusal of the request itself (a parameter, the webhook URL), an unreachable service.
 */
function stopsTheRest(err: DncError): boolean {
  return (
    err.exitCode === ExitCode.AUTH ||
    err.exitCode === ExitCode.CREDIT ||
    err.exitCode === ExitCode.USAGE ||
    err.code === 'E_NETWORK'
  );
}

/** The error of an answer the judge refused: exit 6, the problem named. */
function badResponseError(verdict: Judgement, label: string, stop: DncError | undefined): DncError {
  const charged =
    verdict.charged === false ? 'it was not charged' : 'it may have been charged (`dnc usage` shows the balance)';
  return new DncError('E_BAD_RESPONSE', `${label}: ${verdict.error}`, {
    hint: stop?.hint ?? `the number is neither callable nor listed: check it again later; ${charged}`,
  });
}

/** An error as --json states it. */
function jsonError(err: DncError): JsonError {
  return { code: err.code, exit_status: err.exitCode, message: err.message, hint: err.hint ?? null };
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
