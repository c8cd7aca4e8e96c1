// `dnc batch --dry-run`: what a batch would send and cost, from the list and the journal, with nothing sent.
import type { ResultOptions } from '../journal/journal.js';
import type { TableLayout } from '../tables/layout.js';
import { webhookMissingFor } from './lookups.js';
import { rerunPlan } from './resume.js';

interface Balance {
  creditsRemaining: number;
  creditLimit: number;
}
import { readingLine, warnOfFormulas } from './read-input.js';
import { journalInUse } from '../journal/lock.js';
import type { BatchOptions, DryRunReport, DryRunResume, RunContext } from './job.js';
import { scanInput } from './ingest.js';
import { DistinctNumbers } from '../phone/distinct-numbers.js';
import { readCosts } from '../stores/cost-cache.js';
import { cacheDir } from '../paths.js';
import { dryRunGuard } from './credit-guard.js';
import { reusableLine } from './reusable.js';
import { reusableCounter, reusableOfRun } from './before-lookups.js';

export async function dryRun(
  ctx: RunContext,
  input: string,
  layout: TableLayout,
  resultOptions: ResultOptions,
  options: BatchOptions,
  journalOf: (sha256: string) => Promise<string | null>,
): Promise<DryRunReport> {
  const webhookMissing = await webhookMissingFor(options);
  ctx.info(readingLine(input, layout));
  // Distinct numbers as 8-byte doubles: memory stays small however many distinct numbers the list has.
  const seen = new DistinctNumbers();
  const byCountry = new Map<string, number>();
  // Fresh verdicts in the results cache are looked for as the list is read (only those found are kept).
  const asked = (options.reuseWithinMs ?? null) !== null;
  const service = asked
    ? null
    : await ctx.serviceConfig().then(
        (c) => new URL(c.baseUrl.value).origin,
        () => null,
      );
  const reusable = service ? await reusableCounter(ctx, service, options.compliance ?? {}) : null;
  const candidates: Array<{ e164: string; country: string }> = [];
  const scan = await scanInput(layout, resultOptions.country ?? undefined, (cell) => {
    if (!seen.add(cell.e164)) return;
    byCountry.set(cell.country, (byCountry.get(cell.country) ?? 0) + 1);
    if (reusable && !webhookMissing(cell.country)) candidates.push({ e164: cell.e164, country: cell.country });
  }).catch(async (err: unknown) => {
    await reusable?.close();
    throw err;
  });
  warnOfFormulas(ctx, layout, scan);
  const ages = reusable ? await reusable.freshAges(candidates) : new Map<string, number>();
  const fresh = candidates.flatMap((c) => (ages.has(c.e164) ? [{ ...c, age: ages.get(c.e164)! }] : []));
  const { balance, origin } = await balanceOf(ctx);
  const costs = origin ? await readCosts(cacheDir(ctx.env, ctx.homedir), origin) : new Map<string, number>();
  // A stopped batch: only what a rerun would send is estimated (answered numbers are never sent again).
  const journalPath = await journalOf(scan.sha256);
  const plan = await rerunPlan(ctx, journalPath, scan.sha256, resultOptions, origin);
  const { resuming, toSend } = plan
    ? resumingOf(plan, journalPath!, seen.size, byCountry, costs, options.resendUnanswered === true)
    : { resuming: null, toSend: byCountry };
  const unsupported = new Set(plan ? [...toSend.keys()].filter((c) => plan.unsupportedCountries.includes(c)) : []);
  const countries = [...toSend.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const unknown: string[] = [];
  const notSent: string[] = [];
  for (const [country] of countries) {
    if (webhookMissing(country)) notSent.push(country);
    else if (unsupported.has(country)) continue;
    else if (!costs.has(country)) unknown.push(country);
  }
  const guard = dryRunGuard(toSend, [...notSent, ...unsupported], costs, balance?.creditsRemaining ?? null);
  if (resuming) {
    resuming.to_look_up = guard.forecast.numbers;
    resuming.not_sent = [...toSend.values()].reduce((a, b) => a + b, 0) - guard.forecast.numbers;
  }
  const resend = options.resendUnanswered === true;
  const rerun =
    plan && journalPath ? { path: journalPath, inUse: journalInUse(journalPath, ctx.lockDeps), resend } : null;
  const reuse = reusable ? await reusableOfRun(reusable, fresh, unsupported, rerun, costs) : null;
  if (reuse) {
    guard.lines.push(`note: ${reusableLine(reuse, guard.forecast.numbers)}`);
  }
  const result = {
    input: input === '-' ? '-' : layout.path,
    rows: scan.rows,
    unique_numbers: seen.size,
    invalid_rows: scan.invalidRows,
    empty_rows: scan.emptyRows,
    by_country: Object.fromEntries(countries),
    balance: balance ? { credits_remaining: balance.creditsRemaining, credit_limit: balance.creditLimit } : null,
    // One estimate everywhere: the guard's, where a country whose cost is not learned yet counts at the floor.
    estimated_credits: guard.forecast.estimate,
    estimate_complete: unknown.length === 0,
    unknown_cost_countries: unknown,
    webhook_required_countries: notSent,
    unsupported_countries: [...unsupported].sort(),
    resuming,
    reusable: reuse,
  };
  return { result, guard, costs, invalidSamples: scan.invalidSamples, maxCredits: options.maxCredits };
}

/** The balance (free to ask) and the service's origin; null, with a warning, when they cannot be had. */
async function balanceOf(ctx: RunContext): Promise<{ balance: Balance | null; origin: string | null }> {
  let balance: Balance | null = null;
  let origin: string | null = null;
  try {
    const cfg = await ctx.serviceConfig();
    origin = new URL(cfg.baseUrl.value).origin;
    const client = await ctx.createClient({ connections: 1 });
    try {
      const usage = await client.usage();
      const period = usage.body.data[0];
      if (period) balance = { creditsRemaining: period.credits_remaining, creditLimit: period.credit_limit };
    } finally {
      await client.close();
    }
  } catch (err) {
    ctx.warn(`dnc: warning: the current balance is not available: ${(err as Error).message}`);
  }
  return { balance, origin };
}

/**
 * A stopped batch met again: what a rerun would send of each country (answered numbers are never sent again), and
 * the journal's counts; the journal's learned costs join `costs`.
 */
function resumingOf(
  plan: NonNullable<Awaited<ReturnType<typeof rerunPlan>>>,
  journal: string,
  numbers: number,
  byCountry: ReadonlyMap<string, number>,
  costs: Map<string, number>,
  resend: boolean,
): { resuming: DryRunResume; toSend: Map<string, number> } {
  const toSend = new Map<string, number>();
  const resuming: DryRunResume = {
    journal,
    numbers,
    with_verdict: 0,
    pending: 0,
    to_look_up: 0,
    not_sent: 0,
    unanswered: 0,
    unanswered_sends: plan.unansweredSends,
    credits_spent: plan.credits,
    resend_unanswered: resend,
  };
  for (const [country, n] of byCountry) {
    const j = plan.byCountry.get(country);
    // A list read in part (a crash while reading): its numbers not in the journal yet are looked up too.
    const unread = plan.ingested ? 0 : Math.max(0, n - (j?.numbers ?? 0));
    const send = (j?.toLookUp ?? 0) + unread + (resend ? (j?.unanswered ?? 0) : 0);
    resuming.with_verdict += j?.verdict ?? 0;
    resuming.pending += j?.pending ?? 0;
    resuming.unanswered += j?.unanswered ?? 0;
    if (send > 0) toSend.set(country, send);
  }
  for (const [country, cost] of plan.costs) costs.set(country, cost);
  return { resuming, toSend };
}
