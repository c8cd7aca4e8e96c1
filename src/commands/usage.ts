// `dnc usage`: credit balance and usage per billing period (/v2/usage_stats), or lifetime totals (/usage_stats).
import { Option, type Command } from 'commander';
import { int64Option, integerOption, parsedOption } from '../cli-options.js';
import type { Context } from '../context.js';
import { usageError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import { terminalSafe } from '../text/terminal-safe.js';
import type { CommandHost } from './host.js';
import type { Reconciliation } from '../usage/reconcile.js';
import { reconcileLines } from '../render/reconcile.js';
import type { UsagePlan, UsageResult } from '../usage/run.js';

/**
 * The most periods the service returns per page (section 8); also the page size of --all when --periods is not given.
 */
export const MAX_PERIODS = 100;

/** The flags as commander hands them over: parsed, ranges checked, conflicting combinations refused. */
interface UsageFlags {
  periods?: number;
  id?: bigint;
  cursor?: string;
  all?: boolean;
  lifetime?: boolean;
  reconcile?: boolean;
}

const EXAMPLES = `
Examples:
  dnc usage                    the latest billing period
  dnc usage --periods 12       the twelve latest, newest first
  dnc usage --id 3             one billing period by id
  dnc usage --all --json       every billing period as one JSON document
  dnc usage --lifetime         lifetime totals (legacy /usage_stats)

Usage queries are free: they consume no credits and no request quota.
On a terminal the output is tables and charts; piped, it is tab-separated records
(customer, period, country, month, next_cursor; lifetime_*), described in dnc help formats.`;

/**
 * The flags as a plan. Values and combinations were refused (exit 2) by commander while it read them
 * (see registerUsage), before anything is sent.
 */
export function planUsage(o: UsageFlags): UsagePlan {
  if (o.lifetime) return { kind: 'lifetime' };
  if (o.id !== undefined) return { kind: 'id', id: o.id };
  if (o.all) return { kind: 'all', periods: o.periods ?? MAX_PERIODS, cursor: o.cursor };
  return { kind: 'page', periods: o.periods, cursor: o.cursor };
}

function nonEmptyCursor(raw: string, flag: string): string {
  if (raw.trim() === '')
    throw usageError('E_USAGE', `${flag} must not be empty`, { hint: 'pass the next_cursor of a previous answer' });
  return raw;
}

export function registerUsage(program: Command, host: CommandHost): void {
  const command = program
    .command('usage')
    .description('credit balance and usage per billing period (free: consumes no credits)')
    .addOption(
      integerOption(
        '--periods <n>',
        'the N latest billing periods, newest first (1 to 100; default 1)',
        1,
        MAX_PERIODS,
      ),
    )
    // One billing period by id: paging would be meaningless beside it.
    .addOption(
      int64Option('--id <id>', 'one billing period by id (an int64, at least 1)', 1n).conflicts([
        'periods',
        'cursor',
        'all',
      ]),
    )
    .addOption(parsedOption('--cursor <cursor>', 'continue from the next_cursor of a previous answer', nonEmptyCursor))
    .option('--all', 'follow next_cursor to the end and merge every billing period into one answer')
    // The lifetime (legacy) endpoint takes no parameters.
    .addOption(
      new Option('--lifetime', 'lifetime totals per month and country (the legacy /usage_stats endpoint)').conflicts([
        'id',
        'periods',
        'cursor',
        'all',
        'reconcile',
      ]),
    )
    // Reconciliation compares one billing period: the latest, or one given with --id.
    .addOption(
      new Option(
        '--reconcile',
        "compare the period's credits_used with the credits this machine's journals and checks recorded",
      ).conflicts(['periods', 'cursor', 'all']),
    )
    .addHelpText('after', EXAMPLES);
  host.action(command, async (ctx, cmd) => {
    const flags = cmd.opts<UsageFlags>();
    const plan = planUsage(flags);
    const { runUsage } = await import('../usage/run.js');
    // One page needs no progress; from the second on, --all says how far its walk has come.
    const progress = plan.kind === 'all' ? await createProgress(ctx.io, { quiet: ctx.quiet }) : null;
    let result: UsageResult;
    try {
      result = await runUsage(
        { plan, reconcile: flags.reconcile === true },
        ctx.deps({
          onEvent: ({ pages, periods }: { pages: number; periods: number }) => {
            if (pages > 1) progress?.update(`reading usage: ${pages} pages, ${periods} billing periods so far`);
          },
        }),
      );
    } finally {
      progress?.stop();
    }
    return show(ctx, result);
  });
}

async function show(ctx: Context, result: UsageResult): Promise<number> {
  if (result.kind === 'reconcile') {
    showReconciliation(ctx, result.reconciliation);
    return 0;
  }
  const term = { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns };
  const render = await import('../render/usage.js');
  if (result.kind === 'lifetime') {
    const mismatch = render.lifetimeMismatch(result.body);
    if (mismatch) {
      ctx.warn(
        `dnc: warning: the lifetime total_requests (${mismatch.total}) is not the sum of the monthly counts ` +
          `(${mismatch.sumOfMonths}); both are shown as the service gave them`,
      );
    }
    writeLine(ctx.io.stdout, ctx.json ? JSON.stringify(result.raw) : render.renderLifetimeUsage(result.body, term));
    return 0;
  }
  const { text, raw } = result;
  // As received: ids and counts are int64 (2.5), which a double would round; one line, as JSON output always is.
  if (ctx.json)
    writeLine(ctx.io.stdout, text !== undefined && !/[\r\n]/.test(text.trim()) ? text.trim() : JSON.stringify(raw));
  else writeLine(ctx.io.stdout, render.renderUsagePage(result.page, term));
  return 0;
}

function showReconciliation(ctx: Context, r: Reconciliation): void {
  if (ctx.json) {
    writeLine(
      ctx.io.stdout,
      JSON.stringify({
        billing_period: { id: r.period.id, start_date: r.period.start, end_date: r.period.end },
        service_credits_used: r.serviceCreditsUsed,
        local_credits: r.localCredits,
        difference: r.difference,
        local: r.local.map((l) => ({
          kind: l.kind,
          path: l.where,
          lookups: l.lookups,
          credits: l.credits,
          unanswered_sends: l.unansweredSends,
        })),
      }),
    );
  } else for (const line of reconcileLines(r)) writeLine(ctx.io.stdout, terminalSafe(line));
}
