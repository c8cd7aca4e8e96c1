// The check use case: a few numbers judged locally, then looked up one after another, each told as a typed event.
// It never prints and picks no exit code: `src/commands/check.ts` shows the events and decides.
import { checkCompliance, exemptedOutcome, registerSaysDnc } from '../compliance/check-compliance.js';
import { randomUUID } from 'node:crypto';
import { complianceSettings, openListForScrub, operatorOf, type ComplianceContext } from '../compliance/settings.js';
import { callingAnswer, type CallingAnswer, type Standing } from '../calling/index.js';
import { createCallingWindows } from '../calling/index.js';
import {
  checkWebhookUrlOption,
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  parseCountryOption,
  type ServiceConfig,
} from '../config.js';
import { resolveCallingSettings } from '../calling-settings.js';
import { DncError, ExitCode, inputError, usageError } from '../errors.js';
import type { EvidenceEnv } from '../evidence/batch-evidence.js';
import { openCheckEvidence } from '../evidence/check-evidence.js';
import type { Interrupts } from '../io.js';
import type { ClockSkewEvent } from '../service/clocks.js';
import { normalizePhone, type NormalizedPhone } from '../phone/normalize.js';
import type { ClientRequest, LookupOutcome, ServiceClient } from '../service/client.js';
import type { CachedVerdict } from '../stores/interfaces.js';
import type { ComplianceDecision } from '../stores/suppression-types.js';
import { formatInteger } from '../text/numbers.js';
import { claimOrWait, settlementOf } from './team.js';
import { claimLeaseMs } from '../stores/lease.js';
import { WEBHOOK_ONLY_COUNTRIES } from '../wire/types.js';

export interface CheckOptions {
  country?: string;
  webhookUrl?: string;
  validate: boolean;
  allowInsecureWebhookUrl: boolean;
  /** --reuse-within: a verdict of the same service checked within this window is shown instead of a lookup. */
  reuseWithinMs?: number | null;
  /** --suppression-list: the internal do-not-call list and exemptions (src/compliance). */
  suppressionList?: string | undefined;
  /** --at: the instant the calling windows are told for (default: now, by the injected clock). */
  at?: Date | undefined;
  /** --calling-settings: a file of the team's calling policy and overrides (else DNC_CALLING_SETTINGS, the config). */
  callingSettings?: string | undefined;
}

/** A number as given: its text, and where it came from ('' for an argument, 'stdin line N: ' for a line of stdin). */
export interface GivenNumber {
  input: string;
  where: string;
}

/** A number that passed the local checks: what normalisation made of it. */
export type CheckedNumber = GivenNumber & { phone: Extract<NormalizedPhone, { ok: true }> };

type Suppressed = Extract<ComplianceDecision, { kind: 'suppressed' }>;

/** What the check says as it goes, one event per number (and a few lines between). */
export type CheckEvent =
  | { type: 'info' | 'warning' | 'debug'; text: string }
  | ClockSkewEvent
  /** On the internal list: never sent, nothing charged. */
  | { type: 'suppressed'; number: CheckedNumber; decision: Suppressed; calling: CallingAnswer }
  /** Another machine of the team is looking the number up now: its answer is awaited, nothing sent. */
  | { type: 'waiting_for_colleague'; number: CheckedNumber; claimant: string }
  /** A verdict from the results cache (--reuse-within), exempted as a fresh one would be. */
  | {
      type: 'reused';
      number: CheckedNumber;
      verdict: CachedVerdict;
      decision: ComplianceDecision;
      registerDnc: boolean;
      exempted: boolean;
      /** Another machine of the team that looked it up at the same moment (not the results cache). */
      sharedBy?: string;
      /** Waited for while that lookup was in flight (else it had ended before this run asked). */
      sharedInFlight?: boolean;
      calling: CallingAnswer;
    }
  /** The service's answer, judged: a verdict, a webhook lookup started, or a failure of the lookup. */
  | {
      type: 'answered';
      number: CheckedNumber;
      outcome: Exclude<LookupOutcome, { kind: 'bad_response' }>;
      decision: ComplianceDecision;
      /** The register said do not call (the only verdict an exemption turns). */
      registerDnc: boolean;
      exempted: boolean;
      calling: CallingAnswer;
    }
  /** An answer the judge refused: no verdict. */
  | {
      type: 'refused_answer';
      number: CheckedNumber;
      outcome: Extract<LookupOutcome, { kind: 'bad_response' }>;
      calling: CallingAnswer;
    }
  /** The request got no answer about the number (refused, unreachable, a second Ctrl-C). */
  | { type: 'request_error'; number: CheckedNumber; error: DncError; calling: CallingAnswer }
  /** Numbers left unsent: after an interrupt, or after a failure that would only repeat. */
  | { type: 'not_sent'; numbers: string[]; interrupted: boolean };

export interface CheckTally {
  callable: number;
  listed: number;
  internal: number;
  started: number;
  failed: number;
  bad_response: number;
  errors: number;
  notSent: number;
  credits: number;
  held: number;
}

export interface CheckResult {
  /** Distinct numbers checked. */
  numbers: number;
  tally: CheckTally;
  /** Ctrl-Cs received (the first lets the lookup in flight finish; a second drops it). */
  interrupts: number;
}

export interface CheckDeps extends ComplianceContext, EvidenceEnv {
  /** The time-zone database's version, named in each calling window's rules_version. */
  tzdataVersion: string;
  interrupts: Interrupts;
  serviceConfig(): Promise<ServiceConfig>;
  createClient(options?: ClientRequest): Promise<ServiceClient>;
  onEvent(event: CheckEvent): void;
}

/** The check's lines beside its events. */
interface Say {
  info(text: string): void;
  warn(text: string): void;
  debug(text: string): void;
}

/** What the check of each number tells and counts. */
interface Telling {
  emit: (event: CheckEvent) => void;
  say: Say;
  tally: CheckTally;
  /** The number's calling answer at --at, or at the moment its outcome is told: its window weighed with its verdict. */
  windowOf: (number: CheckedNumber, standing: Standing) => CallingAnswer;
}

export async function runCheck(
  deps: CheckDeps,
  given: readonly GivenNumber[],
  options: CheckOptions,
): Promise<CheckResult> {
  const emit = deps.onEvent;
  const say: Say = {
    info: (text: string) => emit({ type: 'info', text }),
    warn: (text: string) => emit({ type: 'warning', text }),
    debug: (text: string) => emit({ type: 'debug', text }),
  };
  const { distinct, compliance, config, calling } = await numbersToCheck(deps, given, options, say);
  const client = await deps.createClient({ connections: 1, onClockSkew: (skew) => emit({ type: 'clock_skew', skew }) });
  const evidence = await openCheckEvidence(
    deps,
    say,
    new URL(config.baseUrl.value).origin,
    options.reuseWithinMs ?? null,
  );
  const claims = await teamClaimsOf(deps, config);
  const tally = emptyTally();
  const windowOf = (number: CheckedNumber, standing: Standing): CallingAnswer => {
    const window = calling.window(number.phone, options.at ?? deps.now());
    if (window.override) {
      say.warn(
        `dnc: ${number.phone.international}: a calling override sets the law's hours aside ` +
          `(${window.weekly_rule}): ${window.override.reason}`,
      );
    }
    return callingAnswer(window, standing);
  };
  const telling: Telling = { emit, say, tally, windowOf };
  const leaveUnsent = (from: number, interrupted: boolean) => {
    const rest = distinct.slice(from).map((t) => t.phone.e164);
    tally.notSent = rest.length;
    if (rest.length > 0) emit({ type: 'not_sent', numbers: rest, interrupted });
  };
  // Ctrl-C: the lookup in flight may already be charged, so the first one lets it finish and be shown,
  // then stops; a second one drops the connection at once.
  let interrupts = 0;
  const stopListening = deps.interrupts.on((count) => {
    interrupts = count;
    if (count >= 2) void client.destroy?.();
  });
  try {
    for (let i = 0; i < distinct.length; i++) {
      const number = distinct[i]!;
      if (interrupts > 0) {
        leaveUnsent(i, true);
        break;
      }
      const label = number.phone.international;
      // The user's own list comes before any lookup: such a number is never sent and costs nothing.
      const decision = await compliance.decide(number.phone.e164);
      if (decision.kind === 'suppressed') {
        tally.internal++;
        emit({ type: 'suppressed', number, decision, calling: windowOf(number, 'suppressed') });
        continue;
      }
      const reused = await evidence.reusable(number.phone.e164);
      if (reused) {
        tellReused(telling, number, decision, reused, {});
        continue;
      }
      if (claims) {
        const turn = await claimOrWait(claims, number.phone.e164, number.phone.country ?? '', (claimant) =>
          emit({ type: 'waiting_for_colleague', number, claimant }),
        );
        if (turn.kind === 'verdict') {
          tellReused(telling, number, decision, turn.verdict, {
            sharedBy: turn.claimant,
            sharedInFlight: turn.inFlight,
          });
          continue;
        }
        if (turn.kind === 'other') {
          say.warn(`dnc: ${label}: not sent: ${turn.text}`);
          tally.notSent++;
          continue;
        }
      }
      const requestedAt = deps.now();
      let outcome: LookupOutcome;
      try {
        outcome = await client.lookup({ phoneNumber: number.phone.e164, webhookUrl: options.webhookUrl });
        await claims?.settle([[number.phone.e164, settlementOf(outcome, number.phone.country ?? '')]]);
      } catch (err) {
        if (claims && err instanceof DncError && err.code !== 'E_STORE_UNAVAILABLE')
          await claims.settle([[number.phone.e164, settlementOf(err, number.phone.country ?? '')]]);
        if (interrupts >= 2) {
          // The second Ctrl-C dropped this lookup's connection: not a service failure. The closing warning says it may
          // be charged.
          tally.errors++;
          leaveUnsent(i + 1, true);
          break;
        }
        if (!(err instanceof DncError)) throw err;
        tally.errors++;
        emit({ type: 'request_error', number, error: withNumber(err, label), calling: windowOf(number, 'no_verdict') });
        if (stopsTheRest(err)) {
          leaveUnsent(i + 1, false);
          break;
        }
        continue;
      }
      await evidence.record(outcome, requestedAt, options.webhookUrl, number.phone.e164);
      if (tellOutcome(telling, number, decision, outcome) === 'stop') {
        leaveUnsent(i + 1, false);
        break;
      }
    }
  } finally {
    stopListening();
    await claims?.close();
    await compliance.close();
    await evidence.close();
    await client.close();
  }
  return { numbers: distinct.length, tally, interrupts };
}

/**
 * The numbers to look up, each once, and the internal list they are checked against: the options checked, the numbers
 * read and those refused locally said, before anything is sent.
 */
async function numbersToCheck(deps: CheckDeps, given: readonly GivenNumber[], options: CheckOptions, say: Say) {
  const country = await parseCountryOption(options.country);
  await checkWebhookUrlOption(
    options.webhookUrl,
    options.allowInsecureWebhookUrl,
    options.webhookUrl !== undefined ? [(await deps.serviceConfig()).apiKey.value] : [],
  );
  if (given.length === 0) {
    throw usageError('E_USAGE', 'no numbers to check: standard input held none', {
      hint: 'give numbers as arguments, or one per line on stdin with "-"',
    });
  }
  const calling = await callingWindowsOf(deps, options.callingSettings);
  const targets = given.map((g) => ({
    ...g,
    phone: normalizePhone(g.input, { defaultCountry: country, validate: options.validate }),
  }));
  // Configuration problems first, so that nothing between opening the list and the loop below can fail but refusals.
  const config = await deps.serviceConfig();
  const numbers = targets.flatMap((t) => (t.phone.ok ? [t.phone.e164] : []));
  // The whole list verified, exactly as batch verifies it: a forged entry of another number's is a forged list.
  const compliance = checkCompliance(
    await openListForScrub(deps, await complianceSettings(deps, { suppressionList: options.suppressionList })),
    deps.now,
  );
  let accepted: CheckedNumber[];
  try {
    // A number on the internal list is never sent, so it needs no --webhook-url.
    const onList = new Set<string>();
    for (const n of numbers) if ((await compliance.decide(n)).kind === 'suppressed') onList.add(n);
    accepted = refuseLocally(say, targets, options, (e164) => onList.has(e164));
  } catch (err) {
    await compliance.close();
    throw err;
  }
  // One lookup per distinct number: a repeat would only spend credits again.
  const distinct = [...new Map(accepted.map((t) => [t.phone.e164, t])).values()];
  if (distinct.length < accepted.length) {
    say.info(`${accepted.length - distinct.length} repeated number(s) will be looked up once`);
  }
  return { distinct, compliance, config, calling };
}

function emptyTally(): CheckTally {
  return {
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
}

/**
 * A team store: each number is claimed before it is sent (another machine's lookup of it is waited for); the local
 * store keeps no claims (null).
 */
async function teamClaimsOf(deps: CheckDeps, config: ServiceConfig) {
  const stores = await deps.stores();
  return stores.claims(
    { service: new URL(config.baseUrl.value).origin, apiKey: config.apiKey.value },
    `${operatorOf(deps.env)} dnc check ${randomUUID().slice(0, 8)}`,
    claimLeaseMs(deps.flags.timeout ?? DEFAULT_TIMEOUT_MS, deps.flags.retries ?? DEFAULT_RETRIES),
  );
}

/**
 * A verdict not looked up by this run (the results cache's, or a colleague's of the same moment): exempted (or its
 * ended exemption reported) as a fresh one is.
 */
function tellReused(
  t: Telling,
  number: CheckedNumber,
  decision: ComplianceDecision,
  verdict: CachedVerdict,
  shared: { sharedBy?: string; sharedInFlight?: boolean },
): void {
  const registerDnc = verdict.result === 'do_not_call';
  const exempted = exemptedOutcome(decision, registerDnc);
  t.tally[registerDnc && !exempted ? 'listed' : 'callable']++;
  if (registerDnc) warnExpiredExemption(t.say, decision, number.phone.international);
  const calling = t.windowOf(number, registerDnc && !exempted ? 'do_not_call' : 'callable');
  t.emit({ type: 'reused', number, verdict, decision, registerDnc, exempted, ...shared, calling });
}

/** The service's answer told and counted; 'stop' when no other number should be sent after it. */
function tellOutcome(
  t: Telling,
  number: CheckedNumber,
  decision: ComplianceDecision,
  outcome: LookupOutcome,
): 'next' | 'stop' {
  const { tally } = t;
  if (outcome.kind === 'bad_response') {
    // No verdict: whatever the body says, the number is neither callable nor listed (src/service/answers.ts).
    tally.bad_response++;
    t.emit({ type: 'refused_answer', number, outcome, calling: t.windowOf(number, 'no_verdict') });
    return outcome.stop ? 'stop' : 'next';
  }
  tally[outcome.kind === 'started' ? 'held' : 'credits'] += outcome.meta.creditCost ?? 0;
  const registerDnc = registerSaysDnc(outcome);
  const exempted = exemptedOutcome(decision, registerDnc);
  if (outcome.kind === 'succeeded') tally[outcome.body.do_not_call && !exempted ? 'listed' : 'callable']++;
  else tally[outcome.kind]++;
  if (outcome.kind === 'succeeded' && outcome.body.do_not_call)
    warnExpiredExemption(t.say, decision, number.phone.international);
  t.emit({
    type: 'answered',
    number,
    outcome,
    decision,
    registerDnc,
    exempted,
    calling: t.windowOf(number, standingOf(outcome, exempted)),
  });
  return 'next';
}

/** The calling windows under the team's settings, refused (exit 2) before anything is sent when they are not valid. */
async function callingWindowsOf(deps: CheckDeps, file: string | undefined) {
  const { settings, name } = await resolveCallingSettings(deps.flags, deps.env, deps.homedir, deps.cwd, file);
  return createCallingWindows({ tzdataVersion: deps.tzdataVersion, settings, settingsName: name });
}

/** What an answer of the service says of the number, for its calling answer. */
function standingOf(outcome: Exclude<LookupOutcome, { kind: 'bad_response' }>, exempted: boolean): Standing {
  switch (outcome.kind) {
    case 'succeeded':
      return outcome.body.do_not_call && !exempted ? 'do_not_call' : 'callable';
    case 'started':
      return 'pending';
    case 'failed':
      return outcome.body.error_code === 'invalid_phone_number' ? 'invalid' : 'no_verdict';
  }
}

function warnExpiredExemption(say: { warn(text: string): void }, decision: ComplianceDecision, label: string): void {
  if (decision.kind !== 'expired_exemption') return;
  say.warn(
    `dnc: ${label}: the exemption (${decision.exemption.basis}) expired ${decision.exemption.until} and was ignored`,
  );
}

/**
 * Every number is judged before anything is sent: credits are money, and a list that is half
 * sent when a later number turns out bad is worse than one refused whole.
 */
function refuseLocally(
  say: { warn(text: string): void },
  targets: Array<GivenNumber & { phone: NormalizedPhone }>,
  options: CheckOptions,
  suppressed: (e164: string) => boolean,
): CheckedNumber[] {
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
  if (problems.length === 0) return targets as CheckedNumber[];
  if (problems.length === 1) throw problems[0]!;
  for (const p of problems) say.warn(`dnc: ${p.message.replace(/; nothing was sent$/, '')}`);
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
