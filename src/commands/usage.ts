// `dnc usage`: credit balance and usage per billing period (/v2/usage_stats), or lifetime totals (/usage_stats).
import { Option, type Command } from 'commander';
import { int64Option, integerOption, parsedOption } from '../cli-options.js';
import { processLockDeps, type Context } from '../context.js';
import { DncError, serviceError, usageError } from '../errors.js';
import { createProgress, writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import type { ServiceClient } from '../service/client.js';
import type { Reconciliation } from '../evidence/reconcile.js';
import type { BillingPeriodUsage, LegacyUsage, UsagePage } from '../wire/types.js';

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

/** What to ask the service for, once the flags have been checked. */
export type UsagePlan =
  | { kind: 'lifetime' }
  | { kind: 'id'; id: bigint }
  | { kind: 'page'; periods: number | undefined; cursor: string | undefined }
  | { kind: 'all'; periods: number; cursor: string | undefined };

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

function badResponse(what: string, raw: unknown): DncError {
  return serviceError('E_BAD_RESPONSE', `the service's ${what} answer does not have the documented shape`, {
    hint: 'report it with the output of --verbose --json',
    details: { body: raw },
  });
}

/** The fields every renderer relies on; anything else passes through as received. */
function checkUsagePage(raw: unknown): UsagePage {
  const page = raw as Partial<UsagePage> | null;
  const ok =
    !!page &&
    typeof page.customer_name === 'string' &&
    Array.isArray(page.data) &&
    (page.next_cursor === null || typeof page.next_cursor === 'string') &&
    page.data.every(
      (p: Partial<BillingPeriodUsage>) =>
        !!p &&
        typeof p.id === 'number' &&
        typeof p.credit_limit === 'number' &&
        typeof p.credits_used === 'number' &&
        Array.isArray(p.by_country),
    );
  if (!ok) throw badResponse('usage', raw);
  return page as UsagePage;
}

function checkLegacyUsage(raw: unknown): LegacyUsage {
  const body = raw as Partial<LegacyUsage> | null;
  if (
    !body ||
    typeof body.customer_name !== 'string' ||
    typeof body.total_requests !== 'number' ||
    !Array.isArray(body.monthly) ||
    !Array.isArray(body.by_country)
  ) {
    throw badResponse('lifetime usage', raw);
  }
  return body as LegacyUsage;
}

/**
 * Every page from `cursor` on, merged into one document with next_cursor null. Stops with an
 * error (exit 6) if the service hands back a cursor it has already given, which would never end.
 */
export async function fetchAllPeriods(
  client: ServiceClient,
  plan: { periods: number; cursor: string | undefined },
  onPage?: (pages: number, periods: number) => void,
): Promise<UsagePage> {
  const seen = new Set<string>();
  let cursor = plan.cursor;
  if (cursor !== undefined) seen.add(cursor);
  let customerName: string | undefined;
  const data: BillingPeriodUsage[] = [];
  for (let pages = 1; ; pages++) {
    const page = checkUsagePage((await client.usage({ numBillingPeriods: plan.periods, cursor })).raw);
    customerName ??= page.customer_name;
    data.push(...page.data);
    onPage?.(pages, data.length);
    const next = page.next_cursor;
    if (next === null) break;
    if (seen.has(next)) {
      throw serviceError(
        'E_CURSOR_REPEATED',
        `the service returned the cursor '${next}' a second time (after ${pages} pages, ${data.length} ` +
          `periods); stopped to avoid an endless loop`,
        {
          hint: 'try again later; without --all, `dnc usage --periods N` reads the latest periods in one request',
          details: { cursor: next, pages, periods: data.length },
        },
      );
    }
    seen.add(next);
    cursor = next;
  }
  return { customer_name: customerName ?? '', data, next_cursor: null };
}

function looksLikeJwt(key: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(key);
}

/** Adds what a portal JWT's holder needs to know to the client's 401/403, and where a 400 most likely came from. */
function explain(err: unknown, plan: UsagePlan, key: string): unknown {
  if (!(err instanceof DncError)) return err;
  const again = (hint: string) =>
    new DncError(err.code, err.message, { hint, cause: err.cause ?? err, details: err.details });
  const jwt = looksLikeJwt(key);
  if (err.code === 'E_AUTH_MISSING' || err.code === 'E_AUTH_FORBIDDEN') {
    if (jwt && plan.kind === 'lifetime') {
      return again(
        'this key looks like a portal JWT: the lifetime endpoint takes API keys only; drop --lifetime for ' +
          'per-period usage, or use an API key',
      );
    }
    if (jwt && err.code === 'E_AUTH_MISSING')
      return again(
        'this key looks like a portal JWT: it must be valid, unexpired and verified; sign in to the portal ' +
          'again for a fresh one',
      );
    if (jwt) return again('this key looks like a portal JWT: its user needs an active organization membership');
  }
  if (err.code === 'E_USAGE_QUERY_REJECTED' && !err.hint) {
    const hasCursor = (plan.kind === 'page' || plan.kind === 'all') && plan.cursor !== undefined;
    return again(
      hasCursor
        ? 'the cursor may be stale or mistyped; run again without --cursor to start from the latest period'
        : 'check --periods (1 to 100) and --id (at least 1)',
    );
  }
  return err;
}

async function run(ctx: Context, plan: UsagePlan): Promise<number> {
  const key = (await ctx.serviceConfig()).apiKey.value;
  const client = await ctx.createClient({ connections: 1 });
  const term = { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns };
  const render = await import('../render/usage.js');
  try {
    if (plan.kind === 'lifetime') {
      const answer = await client.legacyUsage();
      const body = checkLegacyUsage(answer.raw);
      const mismatch = render.lifetimeMismatch(body);
      if (mismatch) {
        ctx.warn(
          `dnc: warning: the lifetime total_requests (${mismatch.total}) is not the sum of the monthly counts ` +
            `(${mismatch.sumOfMonths}); both are shown as the service gave them`,
        );
      }
      writeLine(ctx.io.stdout, ctx.json ? JSON.stringify(answer.raw) : render.renderLifetimeUsage(body, term));
      return 0;
    }
    let page: UsagePage;
    let raw: unknown;
    let text: string | undefined;
    if (plan.kind === 'all') {
      const progress = await createProgress(ctx.io, { quiet: ctx.quiet });
      try {
        // One page needs no progress; from the second on, say how far the walk has come.
        page = await fetchAllPeriods(client, plan, (pages, periods) => {
          if (pages > 1) progress.update(`reading usage: ${pages} pages, ${periods} billing periods so far`);
        });
      } finally {
        progress.stop();
      }
      raw = page;
    } else {
      const request = plan.kind === 'id' ? { id: plan.id } : { numBillingPeriods: plan.periods, cursor: plan.cursor };
      const answer = await client.usage(request);
      page = checkUsagePage(answer.raw);
      raw = answer.raw;
      text = answer.text;
    }
    // As received: ids and counts are int64 (2.5), which a double would round; one line, as JSON output always is.
    if (ctx.json)
      writeLine(ctx.io.stdout, text !== undefined && !/[\r\n]/.test(text.trim()) ? text.trim() : JSON.stringify(raw));
    else writeLine(ctx.io.stdout, render.renderUsagePage(page, term));
    return 0;
  } catch (err) {
    throw explain(err, plan, key);
  } finally {
    await client.close();
  }
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
    if (flags.reconcile) return runReconcile(ctx, plan);
    return run(ctx, plan);
  });
}

/** `dnc usage --reconcile [--id ID]`: the latest (or given) billing period against this machine's records. */
async function runReconcile(ctx: Context, plan: UsagePlan): Promise<number> {
  const { stateDir } = await import('../paths.js');
  const { registeredJournals } = await import('../stores/registry.js');
  const { historyPath } = await import('../stores/history.js');
  const { reconcile, reconcileLines } = await import('../evidence/reconcile.js');
  const cfg = await ctx.serviceConfig();
  const client = await ctx.createClient({ connections: 1 });
  let page;
  try {
    page = (await client.usage(plan.kind === 'id' ? { id: plan.id } : {})).body;
  } finally {
    await client.close();
  }
  const period = page.data[0];
  if (!period)
    throw usageError('E_USAGE', 'the service reported no billing period to reconcile', {
      hint: 'try `dnc usage --periods 3`',
    });
  const dir = stateDir(ctx.env, ctx.homedir);
  const stores = await ctx.stores();
  const historyFile = stores.kind === 'postgres' ? stores.where : historyPath(dir);
  const history = await stores.history({ create: false });
  let r: Reconciliation;
  try {
    const journals = (await registeredJournals(dir)).map((j) => j.journal);
    const { lockHolder } = await import('../journal/journal.js');
    const isRunning = (journal: string) => lockHolder(journal, processLockDeps()) !== null;
    r = await reconcile(period, new URL(cfg.baseUrl.value).origin, { journals, history, historyFile, isRunning });
  } finally {
    await history?.close();
  }
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
  } else for (const line of reconcileLines(r)) writeLine(ctx.io.stdout, line);
  return 0;
}
