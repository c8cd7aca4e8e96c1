// The sandbox's state machine: authentication, lookups (sync and webhook), credits, usage reports and logs, free of
// HTTP.
import { webhookUrlProblem } from '../wire/webhook-url.js';
import { WebhookHosts, type ResolveHost } from './webhook-hosts.js';
import {
  DESCRIBED_COUNTRIES,
  LOOKUP_ERROR_STATUS,
  WEBHOOK_ONLY_COUNTRIES,
  type Cost,
  type LegacyUsage,
  type LookupErrorCode,
  type LookupFailed,
  type LookupReceipt,
  type LookupSucceeded,
  type UsagePage,
} from '../wire/types.js';
import {
  buildAccount,
  defaultAccountSpec,
  isoDate,
  PeriodIds,
  sortCountries,
  addMonths,
  Period,
  type Account,
  type AccountSpec,
  type Plan,
} from './accounts.js';
import {
  appendCapped,
  realTimers,
  Scheduler,
  seededRandom,
  serviceTimestamp,
  uuidFrom,
  type SandboxTimers,
} from './clock.js';
import {
  checkNumber,
  isTransientNumber,
  LOOKUP_WINDOW_MS,
  resultDelayMs,
  verdictFor,
  type Verdict,
} from './numbers.js';
import { looksLikeJwt, signPortalToken, verifyPortalToken, type PortalTokenOptions } from './portal.js';
import { PushDelivery, type PushAttempt } from './webhooks.js';

export const DEFAULT_KEY = 'sbx_test_4f9c2a7e81d03b56';
export const DEFAULT_CREDIT_LIMIT = 10_000;
export const DEFAULT_COSTS: Readonly<Record<string, number>> = {
  US: 1,
  GB: 1,
  DE: 2,
  IE: 2,
  BE: 2,
  NZ: 2,
  ES: 2,
  AU: 3,
};
/** Internal wait between register attempts of a webhook lookup after upstream_timeout/upstream_error. */
export const UPSTREAM_RETRY_MS = 5_000;
export const KEY_MISSING = 'API key missing: send it as Authorization: Bearer <YOUR_KEY>';
export const KEY_INVALID = 'invalid API key';
export const USAGE_FAILED = 'unable to process request';

export interface SandboxOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Key of the default account (ignored when `accounts` is given). */
  key?: string;
  creditLimit?: number;
  plan?: Plan;
  /** Accounts replacing the default one; the first is the "default account". */
  accounts?: AccountSpec[];
  /** Added before every service answer, real milliseconds. */
  latencyMs?: number;
  /** Multiplies every service duration (push delay, retry backoff, 24 h expiry, the receiver's 10 s). */
  timeScale?: number;
  /** Probability that a delivered push is delivered once more (flagged duplicate). */
  duplicatePushRate?: number;
  /** Accept http:// and loopback webhook URLs (local receivers). */
  allowInsecureWebhooks?: boolean;
  /** How names in webhook URLs are resolved when a lookup arrives (default: the system's resolver). */
  resolveHost?: ResolveHost;
  /** Seed of correlation ids, duplicates and random failures (default: random). */
  seed?: number;
  /** Credits per country, merged over the defaults. */
  costs?: Record<string, number>;
  /** Countries the service covers (default: those named by the description). */
  supportedCountries?: string[];
  /** How many first attempts of a …991/…992 number fail (default 2). */
  transientFailures?: number;
  /** How many first attempts of a …995/…996 number answer billing_error (default: every attempt). */
  billingErrors?: number;
  /** Probability that any register attempt fails with upstream_timeout/upstream_error (not charged). */
  upstreamFailureRate?: number;
  /** Usage endpoints answer 500 from the start. */
  usageFailure?: boolean;
  /** /v2/usage_stats accepts portal JWTs issued by portalToken() (default true). */
  portalAccess?: boolean;
  now?: () => Date;
  timers?: SandboxTimers;
  /** Told of every service request once answered (for `dnc sandbox --verbose`). */
  onRequest?: (request: RecordedRequest) => void;
  /** Told of every push attempt once it has an outcome. */
  onPush?: (attempt: PushAttempt) => void;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Request headers; the API key replaced by *** with its form kept ('Bearer ***' or '***'). */
  headers: Record<string, string>;
  status: number;
  /** Customer name of the authenticated account. */
  account?: string;
  receivedAt: string;
}

export interface LookupRecord {
  correlationId: string;
  phoneNumber: string;
  country: string;
  mode: 'sync' | 'webhook';
  state: 'started' | 'succeeded' | 'failed';
  errorCode: string | null;
  charged: boolean;
  /** Credits charged (or, while started, held). */
  credits: number;
  account: string;
  webhookUrl?: string;
  doNotCall?: boolean;
  /** Register attempts made (upstream failures are retried internally in webhook mode). */
  attempts: number;
  createdAt: string;
  completedAt?: string;
}

export interface AccountInfo {
  customerName: string;
  plan: Plan;
  reseller: boolean;
  webhooks: boolean;
  creditLimit: number;
  creditsUsed: number;
  creditsRemaining: number;
  totalRequests: number;
  billingPeriodId: number;
  periodStart: string;
  periodEnd: string;
  closedPeriods: number;
}

/** An HTTP answer, before the transport writes it. */
/** RFC 9110 §15.5.2: a 401 names the scheme to authenticate with. */
function unauthorized(error: string): Answer {
  return { status: 401, body: { error }, headers: { 'www-authenticate': 'Bearer' } };
}

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Customer name for the request log. */
  account?: string;
}

interface Live {
  record: LookupRecord;
  account: Account;
  period: Period;
  bucket: number;
  cost: number;
}

type Query = URLSearchParams;

export class SandboxEngine {
  readonly scheduler: Scheduler;
  readonly pushes: PushDelivery;
  readonly now: () => Date;
  private readonly costs: Record<string, number>;
  private readonly supported: string[];
  private readonly supportedSet: Set<string>;
  private readonly transientFailures: number;
  private readonly specs: AccountSpec[];
  private random!: () => number;
  private ids!: PeriodIds;
  private accounts!: Account[];
  private byKey!: Map<string, Account>;
  private attempts!: Map<string, number>;
  private live!: Map<string, Live>;
  private micro = 0;
  private readonly portalSecret: string;
  requestLog: RecordedRequest[] = [];
  lookupLog: LookupRecord[] = [];
  usageFailure = false;
  /** Names in webhook URLs, resolved by the HTTP layer before a lookup is routed (resolution is asynchronous). */
  readonly webhookHosts: WebhookHosts;

  constructor(readonly options: SandboxOptions) {
    this.webhookHosts = new WebhookHosts(options.resolveHost);
    this.now = options.now ?? (() => new Date());
    this.scheduler = new Scheduler(options.timers ?? realTimers, options.timeScale ?? 1);
    this.costs = { ...DEFAULT_COSTS, ...(options.costs ?? {}) };
    this.supported = [...(options.supportedCountries ?? DESCRIBED_COUNTRIES)];
    this.supportedSet = new Set(this.supported);
    this.transientFailures = options.transientFailures ?? 2;
    this.portalSecret = `sbx-portal-${options.seed ?? Math.random()}`;
    const now = this.now();
    this.specs = options.accounts?.length
      ? options.accounts
      : [
          defaultAccountSpec(
            options.key ?? DEFAULT_KEY,
            options.plan ?? 'monthly',
            options.creditLimit ?? DEFAULT_CREDIT_LIMIT,
            now,
          ),
        ];
    this.pushes = new PushDelivery({
      scheduler: this.scheduler,
      random: () => this.random(),
      duplicateRate: options.duplicatePushRate ?? 0,
      allowInsecure: options.allowInsecureWebhooks === true,
      now: () => this.now().toISOString(),
      onAttempt: options.onPush,
    });
    this.reset();
  }

  /** Back to the state at start: accounts, logs, counters and the random sequence; pending work cancelled. */
  reset(): void {
    this.scheduler.cancelAll();
    this.pushes.reset();
    this.random = seededRandom(this.options.seed ?? Math.floor(Math.random() * 2 ** 32));
    this.ids = new PeriodIds(
      new Set(this.specs.flatMap((a) => (a.history ?? []).flatMap((h) => (h.id === undefined ? [] : [h.id])))),
    );
    const now = this.now();
    const defaults = {
      creditLimit: this.options.creditLimit ?? DEFAULT_CREDIT_LIMIT,
      plan: this.options.plan ?? 'monthly',
    };
    this.accounts = this.specs.map((s) => buildAccount(s, this.ids, now, defaults));
    this.byKey = new Map(this.accounts.map((a) => [a.key, a]));
    this.attempts = new Map();
    this.live = new Map();
    this.requestLog = [];
    this.lookupLog = [];
    this.usageFailure = this.options.usageFailure === true;
  }

  get defaultKey(): string {
    return this.accounts[0]!.key;
  }

  close(): void {
    this.scheduler.close();
    this.pushes.close();
  }

  // ---- logs -------------------------------------------------------------------------------

  logRequest(entry: RecordedRequest): void {
    appendCapped(this.requestLog, entry);
  }

  timestamp(): string {
    return serviceTimestamp(this.now(), this.micro++);
  }

  // ---- accounts ---------------------------------------------------------------------------

  private account(key: string): Account | undefined {
    const a = this.byKey.get(key);
    if (a) this.roll(a);
    return a;
  }

  /** Opens a new billing period once the current one has ended. */
  private roll(a: Account): void {
    const now = this.now();
    while (now >= a.current.end) {
      const old = a.current;
      a.closed.push(old);
      a.periodIndex++;
      const next = new Period(this.ids.claim(), old.type, old.end, a.periodStart(a.periodIndex + 1), old.creditLimit);
      this.ids.owner.set(next.id, a);
      a.current = next;
    }
  }

  accountInfo(key?: string): AccountInfo {
    const a = key === undefined ? this.accounts[0]! : this.account(key);
    if (!a) throw new Error('no sandbox account has this key');
    this.roll(a);
    const p = a.current;
    return {
      customerName: a.customerName,
      plan: a.plan,
      reseller: a.reseller,
      webhooks: a.webhooks,
      creditLimit: p.creditLimit,
      creditsUsed: p.creditsUsed,
      creditsRemaining: p.creditLimit - p.creditsUsed,
      totalRequests: p.totalRequests,
      billingPeriodId: p.id,
      periodStart: isoDate(p.start),
      periodEnd: isoDate(p.end),
      closedPeriods: a.closed.length,
    };
  }

  allAccounts(): AccountInfo[] {
    return this.accounts.map((a) => this.accountInfo(a.key));
  }

  setCreditLimit(limit: number, key?: string): void {
    const a = key === undefined ? this.accounts[0]! : this.account(key);
    if (!a) throw new Error('no sandbox account has this key');
    this.roll(a);
    a.current.creditLimit = limit;
  }

  /**
   * Section 5: `Authorization: Bearer KEY` or `Authorization: KEY`; with `portal` (only
   * /v2/usage_stats), also `Bearer <PORTAL_JWT>`. Returns the account or the 401/403 answer.
   * Resellers without X-Forwarded-Host get 403 (docs/decisions.md).
   */
  authenticate(authorization: string | undefined, forwardedHost: string | undefined, portal = false): Account | Answer {
    const raw = (authorization ?? '').trim();
    // RFC 9110 §11.1: the scheme is case-insensitive; section 5 makes the prefix optional (for a portal JWT too).
    const key = raw.replace(/^bearer(\s+|$)/i, '').trim();
    if (key === '') return unauthorized(KEY_MISSING);
    let account = this.account(key);
    if (!account && portal && this.options.portalAccess !== false && looksLikeJwt(key)) {
      const claims = verifyPortalToken(this.portalSecret, key, this.now().getTime());
      if (claims === 'no_membership')
        return { status: 403, body: { error: 'no active organization membership for this portal user' } };
      if (typeof claims === 'string')
        return unauthorized(`portal token ${claims === 'invalid' ? 'is invalid' : `is ${claims}`}`);
      account = this.accounts[claims.org];
      if (!account) return unauthorized('portal token is invalid');
      this.roll(account);
    }
    if (!account) return { status: 403, body: { error: KEY_INVALID } };
    if (account.reseller && (forwardedHost ?? '').trim() === '') {
      return {
        status: 403,
        account: account.customerName,
        body: {
          error:
            'reseller keys must send X-Forwarded-Host on every request, naming the end customer on whose behalf ' +
            'it is made',
        },
      };
    }
    return account;
  }

  /** A portal JWT for the account of `key` (default: the first), valid for /v2/usage_stats. */
  portalToken(key?: string, options: PortalTokenOptions = {}): string {
    const a = key === undefined ? this.accounts[0] : this.byKey.get(key);
    if (!a) throw new Error('no sandbox account has this key');
    return signPortalToken(this.portalSecret, {
      org: this.accounts.indexOf(a),
      exp: Math.floor(this.now().getTime() / 1000) + (options.expiresIn ?? 3600),
      email_verified: options.verified !== false,
      membership: options.membership !== false,
    });
  }

  // ---- lookups ----------------------------------------------------------------------------

  /** GET /check_phone_number for an authenticated account. */
  lookup(account: Account, query: Query): Answer {
    const p = account.current;
    const name = account.customerName;
    const plain = (status: number, body: unknown): Answer => ({
      status,
      body,
      account: name,
      headers: this.rateHeaders(p, 0),
    });
    const phones = query.getAll('phone_number');
    if (phones.length === 0 || phones[0] === '')
      return plain(400, { error: 'phone_number is required (E.164, URL-encoded: + becomes %2B)' });
    if (phones.length > 1) return plain(400, { error: 'phone_number is given more than once' });
    const phone = phones[0]!;
    const checked = checkNumber(phone);
    if (!checked.ok) {
      // An unencoded '+' arrives as a space; say so, since that is the usual cause.
      const hint = /^ \d+$/.test(phone) ? ` (a '+' must be sent URL-encoded as %2B)` : '';
      return plain(400, { error: checked.error + hint });
    }
    const webhookUrl = query.get('webhook_url');
    if (webhookUrl !== null) {
      const insecure = this.options.allowInsecureWebhooks === true;
      const problem = webhookUrlProblem(webhookUrl, { allowInsecure: insecure });
      if (problem) return plain(400, { error: `webhook_url is invalid: ${problem}` });
      const name = WebhookHosts.nameIn(webhookUrl);
      const kind = name === null ? null : this.webhookHosts.kindOf(name);
      if (kind && !(kind === 'loopback' && insecure)) {
        return plain(400, {
          error:
            `webhook_url is invalid: its host ${name} resolves to a ${kind} address; the service pushes ` +
            `only to public hosts`,
        });
      }
    }
    const country = checked.country;
    if (!this.supportedSet.has(country)) {
      return plain(422, { error: `country ${country} is not supported`, country, supported_countries: this.supported });
    }
    const webhookOnly = WEBHOOK_ONLY_COUNTRIES.includes(country);
    if (webhookOnly && webhookUrl === null)
      return plain(400, { error: `${country} lookups are webhook-only: pass webhook_url` });
    if (webhookUrl !== null && !account.webhooks) {
      return plain(400, { error: 'webhook lookups are not enabled for this account: leave out webhook_url' });
    }
    const cost = this.costs[country] ?? 1;
    if (p.creditsUsed + cost > p.creditLimit) {
      return plain(429, {
        error:
          `credit limit reached: ${p.creditsUsed} of ${p.creditLimit} credits used in the billing period ` +
          `ending ${isoDate(p.end)}; this lookup costs ${cost}`,
      });
    }
    const record: LookupRecord = {
      correlationId: uuidFrom(this.random),
      phoneNumber: checked.e164,
      country,
      mode: webhookUrl === null ? 'sync' : 'webhook',
      state: 'started',
      errorCode: null,
      charged: false,
      credits: 0,
      account: name,
      attempts: 0,
      createdAt: this.now().toISOString(),
    };
    if (webhookUrl !== null) record.webhookUrl = webhookUrl;
    appendCapped(this.lookupLog, record);
    return webhookUrl === null
      ? this.syncLookup(account, record, cost)
      : this.startWebhookLookup(account, record, cost, webhookOnly);
  }

  private rateHeaders(p: Period, creditCost: number, correlationId?: string): Record<string, string> {
    const h: Record<string, string> = {
      'x-credit-cost': String(creditCost),
      'x-ratelimit-limit': String(p.creditLimit),
      // A header of "credits left" does not go below zero; usage reports show the negative balance.
      'x-ratelimit-remaining': String(Math.max(0, p.creditLimit - p.creditsUsed)),
    };
    if (correlationId) h['x-service-correlation-id'] = correlationId;
    return h;
  }

  /** One register attempt: the number's rule, then the configured random upstream failures. */
  private attempt(account: Account, record: LookupRecord): Verdict {
    record.attempts++;
    let n = 1;
    const billingErrors = this.options.billingErrors ?? Infinity;
    if (isTransientNumber(record.phoneNumber, billingErrors !== Infinity)) {
      const k = `${account.key}\u0000${record.phoneNumber}`;
      n = (this.attempts.get(k) ?? 0) + 1;
      this.attempts.set(k, n);
    }
    const rate = this.options.upstreamFailureRate ?? 0;
    if (rate > 0 && this.random() < rate)
      return this.random() < 0.5 ? { kind: 'upstream_timeout' } : { kind: 'upstream_error' };
    return verdictFor(record.phoneNumber, n, this.transientFailures, billingErrors);
  }

  private cost(p: Period, charged: number): Cost {
    return { credits_used_for_query: charged, total_credits_used: p.creditsUsed, credit_limit: p.creditLimit };
  }

  private syncLookup(account: Account, record: LookupRecord, cost: number): Answer {
    const p = account.current;
    const verdict = this.attempt(account, record);
    const charged = isCharged(verdict);
    if (charged) {
      p.add(p.bucketAt(this.now()), 1, cost);
      p.countCompleted(record.country);
    }
    this.settle(record, verdict, charged ? cost : 0);
    const headers = this.rateHeaders(p, charged ? cost : 0, record.correlationId);
    const body = this.resultBody(record, verdict, p, true);
    const status = verdict.kind === 'succeeded' ? 200 : LOOKUP_ERROR_STATUS[verdict.kind];
    return { status, body, headers, account: account.customerName };
  }

  private settle(record: LookupRecord, verdict: Verdict, credits: number): void {
    record.state = verdict.kind === 'succeeded' ? 'succeeded' : 'failed';
    record.errorCode = verdict.kind === 'succeeded' ? null : verdict.kind;
    record.charged = credits > 0;
    record.credits = credits;
    if (verdict.kind === 'succeeded') record.doNotCall = verdict.doNotCall;
    record.completedAt = this.now().toISOString();
  }

  /** 2.2 or 2.3 (+ cost when synchronous; pushes of 2.3 carry none). */
  private resultBody(record: LookupRecord, verdict: Verdict, p: Period, sync: boolean): LookupSucceeded | LookupFailed {
    if (verdict.kind === 'succeeded') {
      return {
        status: 'succeeded',
        error_code: null,
        correlation_id: record.correlationId,
        phone_number: record.phoneNumber,
        country: record.country,
        do_not_call: verdict.doNotCall,
        timestamp: this.timestamp(),
        dnc_list_source: `https://sandbox.dnc.invalid/registers/${record.country}`,
        cost: this.cost(p, record.credits),
      };
    }
    const body: LookupFailed = {
      status: 'failed',
      error_code: verdict.kind,
      error: ERROR_TEXT[verdict.kind],
      charged: record.charged,
      correlation_id: record.correlationId,
      phone_number: record.phoneNumber,
      country: record.country,
    };
    if (sync) body.cost = this.cost(p, record.credits);
    return body;
  }

  private startWebhookLookup(account: Account, record: LookupRecord, cost: number, webhookOnly: boolean): Answer {
    const p = account.current;
    const bucket = p.bucketAt(this.now());
    p.add(bucket, 1, cost); // held: counted as a pending charge until settled
    record.credits = cost;
    const live: Live = { record, account, period: p, bucket, cost };
    this.live.set(record.correlationId, live);
    // Register attempts are decided now, so the push is one exact timer (no polling under a tiny time scale).
    let at = resultDelayMs(record.phoneNumber, webhookOnly);
    let verdict: Verdict = { kind: 'lookup_expired' };
    for (;;) {
      const tail = record.phoneNumber.slice(-3);
      if (tail === '993' || tail === '994' || tail === '997') break; // never answers: expires
      const v = this.attempt(account, record);
      if (v.kind !== 'upstream_timeout' && v.kind !== 'upstream_error') {
        verdict = v;
        break;
      }
      at += UPSTREAM_RETRY_MS;
      if (at >= LOOKUP_WINDOW_MS) break;
    }
    if (verdict.kind === 'lookup_expired') at = LOOKUP_WINDOW_MS;
    this.scheduler.after(at, () => this.finishWebhookLookup(live, verdict));
    const receipt: LookupReceipt = {
      status: 'started',
      correlation_id: record.correlationId,
      phone_number: record.phoneNumber,
      country: record.country,
    };
    return {
      status: 202,
      body: receipt,
      headers: this.rateHeaders(p, cost, record.correlationId),
      account: account.customerName,
    };
  }

  private finishWebhookLookup(live: Live, verdict: Verdict): void {
    const { record, period: p, bucket, cost } = live;
    this.live.delete(record.correlationId);
    const charged = isCharged(verdict);
    if (charged) p.countCompleted(record.country);
    else p.add(bucket, -1, -cost); // refund the hold
    this.settle(record, verdict, charged ? cost : 0);
    const body = this.resultBody(record, verdict, p, false);
    const status = verdict.kind === 'succeeded' ? 200 : LOOKUP_ERROR_STATUS[verdict.kind as LookupErrorCode];
    this.pushes.deliver({
      url: record.webhookUrl!,
      correlationId: record.correlationId,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1.0',
        'x-service-correlation-id': record.correlationId,
        'x-service-phone-number': record.phoneNumber,
        'x-service-country': record.country,
        'x-service-status': String(status),
      },
      body: JSON.stringify(body),
    });
  }

  /** Lookups still waiting for their result. */
  pendingCount(): number {
    return this.live.size;
  }

  pushLog(): PushAttempt[] {
    return this.pushes.log;
  }

  // ---- usage ------------------------------------------------------------------------------

  /** GET /v2/usage_stats (4.2). */
  usageV2(account: Account, query: Query): Answer {
    const name = account.customerName;
    const bad = (error: string): Answer => ({ status: 400, body: { error }, account: name });
    // Parameters are checked first: a request the service would refuse (400) is refused whatever its state.
    const invalid = this.usageQueryProblem(query);
    if (invalid) return bad(invalid);
    if (this.usageFailure) return { status: 500, body: { error: USAGE_FAILED }, account: name };
    const idRaw = query.get('id');
    const cursorRaw = query.get('cursor');
    if (idRaw !== null) {
      // int64, at least 1 (2.5), checked above: a valid id that names no period is a 404, not a 400. Read as a
      // bigint: as a double, 9007199254740993 would name period 9007199254740992.
      const wanted = BigInt(idRaw);
      const period = account
        .periodsNewestFirst()
        .find((x) => BigInt(x.id) === wanted && this.ids.owner.get(x.id) === account);
      if (!period) return { status: 404, body: { error: `billing period ${wanted} not found` }, account: name };
      return {
        status: 200,
        body: { customer_name: name, data: [period.toWire()], next_cursor: null } satisfies UsagePage,
        account: name,
      };
    }
    const numRaw = query.get('num_billing_periods');
    const n = numRaw === null ? 1 : Number(numRaw);
    const periods = account.periodsNewestFirst();
    let start = 0;
    if (cursorRaw !== null) {
      const id = decodeCursor(cursorRaw);
      start = id === null || this.ids.owner.get(id) !== account ? -1 : periods.findIndex((x) => x.id === id);
      if (start < 0) return bad('cursor is not valid: pass the next_cursor of a previous response unchanged');
    }
    const page = periods.slice(start, start + n);
    const next = periods[start + n];
    const body: UsagePage = {
      customer_name: name,
      data: page.map((x) => x.toWire()),
      next_cursor: next ? encodeCursor(next.id) : null,
    };
    return { status: 200, body, account: name };
  }

  /** Why the v2 usage query is malformed (without looking any period up), or null. */
  private usageQueryProblem(query: Query): string | null {
    if (query.has('year'))
      return 'the year parameter is not supported: select billing periods with num_billing_periods, cursor or id';
    for (const k of ['num_billing_periods', 'id', 'cursor']) {
      if (query.getAll(k).length > 1) return `${k} is given more than once`;
    }
    const idRaw = query.get('id');
    const numRaw = query.get('num_billing_periods');
    if (idRaw !== null) {
      if (numRaw !== null || query.get('cursor') !== null)
        return 'id cannot be combined with pagination (num_billing_periods, cursor)';
      if (!/^\d{1,19}$/.test(idRaw) || BigInt(idRaw) < 1n || BigInt(idRaw) > 9223372036854775807n) {
        return `id must be a whole number from 1 to 9223372036854775807, got '${idRaw}'`;
      }
    }
    if (numRaw !== null && (!/^\d{1,3}$/.test(numRaw) || Number(numRaw) < 1 || Number(numRaw) > 100)) {
      return `num_billing_periods must be a whole number from 1 to 100, got '${numRaw}'`;
    }
    return null;
  }

  /** GET /usage_stats (4.3): lifetime totals. */
  usageLegacy(account: Account): Answer {
    const name = account.customerName;
    if (this.usageFailure) return { status: 500, body: { error: USAGE_FAILED }, account: name };
    const months = new Map<number, number>();
    const countries = new Map<string, number>();
    const addMonth = (d: Date, n: number) => {
      if (n === 0) return;
      const k = d.getUTCFullYear() * 12 + d.getUTCMonth();
      months.set(k, (months.get(k) ?? 0) + n);
    };
    for (const p of account.periodsNewestFirst()) {
      p.buckets.forEach((b, i) => addMonth(addMonths(p.start, i), b.requestCount));
      // Usage that cannot be placed in a month is counted in the period's first month.
      addMonth(p.start, p.unallocated.requestCount);
      for (const [c, k] of p.byCountry) countries.set(c, (countries.get(c) ?? 0) + k);
    }
    const monthly = [...months]
      .filter(([, n]) => n > 0)
      .sort((a, b) => a[0] - b[0])
      .map(([k, request_count]) => ({ year: Math.floor(k / 12), month: (k % 12) + 1, request_count }));
    const body: LegacyUsage = {
      customer_name: name,
      total_requests: monthly.reduce((s, m) => s + m.request_count, 0),
      monthly,
      by_country: sortCountries(countries),
    };
    return { status: 200, body, account: name };
  }
}

/** Section 7: successes, register rejections and some billing errors are charged; nothing else is. */
function isCharged(verdict: Verdict): boolean {
  return (
    verdict.kind === 'succeeded' ||
    verdict.kind === 'invalid_phone_number' ||
    (verdict.kind === 'billing_error' && verdict.charged)
  );
}

const ERROR_TEXT: Record<LookupErrorCode, string> = {
  invalid_phone_number: 'the register rejected the number',
  upstream_timeout: 'the register timed out; the lookup was not charged, try again',
  upstream_error: 'the register failed; the lookup was not charged, try again',
  lookup_expired: 'no answer from the register within 24 hours; credits refunded',
  billing_error: 'credits could not be settled',
};

const CURSOR_PREFIX = 'sbx1:';

/** Cursors are opaque to callers: base64url of a version tag and the next period's id. */
export function encodeCursor(id: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${id}`).toString('base64url');
}

export function decodeCursor(cursor: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(CURSOR_PREFIX)) return null;
  const id = text.slice(CURSOR_PREFIX.length);
  return /^[1-9]\d{0,15}$/.test(id) ? Number(id) : null;
}
