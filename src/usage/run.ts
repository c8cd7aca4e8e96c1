// `dnc usage`'s use case: the service's usage answers asked for as the flags planned, checked against their documented
// shape, and (--reconcile) one billing period compared with the credits this machine's journals and checks recorded.
import type { ServiceConfig } from '../config.js';
import { DncError, serviceError, usageError } from '../errors.js';
import { reconcile, type Reconciliation } from './reconcile.js';
import { lockHolder } from '../journal/journal.js';
import { stateDir } from '../paths.js';
import { processLockDeps } from '../process-identity.js';
import type { ClientRequest, ServiceClient } from '../service/client.js';
import type { Stores } from '../stores/owner.js';
import { registeredJournals } from '../stores/registry.js';
import type { BillingPeriodUsage, LegacyUsage, UsagePage } from '../wire/types.js';

/** What to ask the service for, once the flags have been checked. */
export type UsagePlan =
  | { kind: 'lifetime' }
  | { kind: 'id'; id: bigint }
  | { kind: 'page'; periods: number | undefined; cursor: string | undefined }
  | { kind: 'all'; periods: number; cursor: string | undefined };

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

export interface UsageDeps {
  env: Record<string, string | undefined>;
  homedir: string;
  serviceConfig(): Promise<ServiceConfig>;
  createClient(options?: ClientRequest): Promise<ServiceClient>;
  stores(): Promise<Stores>;
  /** --all: told after each page read, with the pages and periods read so far. */
  onEvent(event: UsageEvent): void;
}

export type UsageEvent = { type: 'page'; pages: number; periods: number };

export type UsageResult =
  /** The lifetime totals, checked, and the answer as received. */
  | { kind: 'lifetime'; body: LegacyUsage; raw: unknown }
  /** Billing periods, checked; `raw` and `text` as received (`text` only for one page's answer). */
  | { kind: 'periods'; page: UsagePage; raw: unknown; text: string | undefined }
  | { kind: 'reconcile'; reconciliation: Reconciliation };

/** What the plan asks of the service (with `reconcile`: one billing period against this machine's records). */
export async function runUsage(
  options: { plan: UsagePlan; reconcile: boolean },
  deps: UsageDeps,
): Promise<UsageResult> {
  const { plan } = options;
  if (options.reconcile) return { kind: 'reconcile', reconciliation: await reconcilePeriod(plan, deps) };
  const key = (await deps.serviceConfig()).apiKey.value;
  const client = await deps.createClient({ connections: 1 });
  try {
    if (plan.kind === 'lifetime') {
      const answer = await client.legacyUsage();
      return { kind: 'lifetime', body: checkLegacyUsage(answer.raw), raw: answer.raw };
    }
    if (plan.kind === 'all') {
      const page = await fetchAllPeriods(client, plan, (pages, periods) =>
        deps.onEvent({ type: 'page', pages, periods }),
      );
      return { kind: 'periods', page, raw: page, text: undefined };
    }
    const request = plan.kind === 'id' ? { id: plan.id } : { numBillingPeriods: plan.periods, cursor: plan.cursor };
    const answer = await client.usage(request);
    return { kind: 'periods', page: checkUsagePage(answer.raw), raw: answer.raw, text: answer.text };
  } catch (err) {
    throw explain(err, plan, key);
  } finally {
    await client.close();
  }
}

/** `dnc usage --reconcile [--id ID]`: the latest (or given) billing period against this machine's records. */
async function reconcilePeriod(plan: UsagePlan, deps: UsageDeps): Promise<Reconciliation> {
  const cfg = await deps.serviceConfig();
  const client = await deps.createClient({ connections: 1 });
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
  const dir = stateDir(deps.env, deps.homedir);
  const stores = await deps.stores();
  const historyFile = stores.historyWhere();
  const history = await stores.history({ create: false });
  try {
    const journals = (await registeredJournals(dir)).map((j) => j.journal);
    const isRunning = (journal: string) => lockHolder(journal, processLockDeps()) !== null;
    return await reconcile(period, new URL(cfg.baseUrl.value).origin, { journals, history, historyFile, isRunning });
  } finally {
    await history?.close();
  }
}
