// `dnc window --number N…`: when numbers may be called, by the calling rules alone. Nothing is looked up and no
// credit is spent: the service is never reached (no client is made, no key is read). The internal do-not-call list,
// local and free, is read: a number on it is never callable. The answer is no do-not-call verdict, and says so.
import { callingAnswer, createCallingWindows, type CallingAnswer, type Standing } from '../calling/index.js';
import { checkCompliance } from '../compliance/check-compliance.js';
import { complianceSettings, openListForScrub, type ComplianceContext } from '../compliance/settings.js';
import { parseCountryOption } from '../config.js';
import { resolveCallingSettings } from '../calling-settings.js';
import { usageError } from '../errors.js';
import { governingCountry } from '../phone/countries.js';
import { normalizePhone } from '../phone/normalize.js';
import type { ComplianceDecision } from '../stores/suppression-types.js';

export interface NumberWindowOptions {
  /** The numbers as given: E.164, or national with `country`. */
  numbers: readonly string[];
  country?: string | undefined;
  /** --at: the instant asked about (default: now, by the injected clock). */
  at?: Date | undefined;
  callingSettings?: string | undefined;
  suppressionList?: string | undefined;
}

export type Suppressed = Extract<ComplianceDecision, { kind: 'suppressed' }>;

/** One number's answer. */
export interface NumberWindow {
  /** As given. */
  input: string;
  /** Null when the text is no phone number at all. */
  e164: string | null;
  /** '+1 202 555 0100', else the text as given. */
  label: string;
  country: string | null;
  /** Why the number cannot be valid; null for a valid one. */
  problem: string | null;
  /** On the internal do-not-call list. */
  suppressed: Suppressed | null;
  calling: CallingAnswer;
}

export type NumberWindowEvent =
  { type: 'info' | 'warning' | 'debug'; text: string } | { type: 'number'; answer: NumberWindow };

export interface NumberWindowDeps extends ComplianceContext {
  now(): Date;
  tzdataVersion: string;
  onEvent(event: NumberWindowEvent): void;
}

export interface NumberWindowResult {
  /** Distinct numbers answered. */
  numbers: number;
  invalid: number;
  suppressed: number;
  /** The instant asked about (UTC ISO 8601). */
  at: string;
  rulesVersion: string;
}

export async function runNumberWindows(deps: NumberWindowDeps, o: NumberWindowOptions): Promise<NumberWindowResult> {
  if (o.numbers.length === 0) {
    throw usageError('E_USAGE', 'no numbers: give --number N (repeat it for several)');
  }
  const country = await parseCountryOption(o.country);
  const calling = await resolveCallingSettings(deps.flags, deps.env, deps.homedir, deps.cwd, o.callingSettings);
  const windows = createCallingWindows({
    tzdataVersion: deps.tzdataVersion,
    settings: calling.settings,
    settingsName: calling.name,
  });
  const at = o.at ?? deps.now();
  // Each number once, in the order given: by its E.164 when it has one, else by its text.
  const given = new Map<string, { input: string; phone: ReturnType<typeof normalizePhone> }>();
  for (const input of o.numbers) {
    const phone = normalizePhone(input, { defaultCountry: country, validate: true });
    const key = phone.e164 ?? `text:${input}`;
    if (!given.has(key)) given.set(key, { input, phone });
  }
  const valid = [...given.values()].flatMap((g) => (g.phone.ok ? [g.phone.e164] : []));
  const compliance = checkCompliance(
    await openListForScrub(deps, await complianceSettings(deps, { suppressionList: o.suppressionList }), valid),
    deps.now,
  );
  let invalid = 0;
  let suppressed = 0;
  try {
    for (const { input, phone } of given.values()) {
      const e164 = phone.e164 ?? null;
      // The country whose register and rules govern it: the service files +44 7911 (Guernsey) under GB.
      const numberCountry = governingCountry(phone.country);
      const decision = phone.ok ? await compliance.decide(phone.e164) : null;
      const onList = decision?.kind === 'suppressed' ? decision : null;
      const standing: Standing = !phone.ok ? 'invalid' : onList ? 'suppressed' : 'not_checked';
      if (!phone.ok) invalid++;
      if (onList) suppressed++;
      const window = windows.window({ e164: e164 ?? '', country: numberCountry }, at);
      const label = phone.ok ? phone.international : input;
      if (window.override) {
        deps.onEvent({
          type: 'warning',
          text:
            `dnc: ${label}: a calling override sets the law's hours aside (${window.weekly_rule}): ` +
            window.override.reason,
        });
      }
      deps.onEvent({
        type: 'number',
        answer: {
          input,
          e164,
          label,
          country: numberCountry ?? null,
          problem: phone.ok ? null : phone.message,
          suppressed: onList,
          calling: callingAnswer(window, standing),
        },
      });
    }
  } finally {
    await compliance.close();
  }
  return {
    numbers: given.size,
    invalid,
    suppressed,
    at: at.toISOString().replace('.000Z', 'Z'),
    rulesVersion: windows.rulesVersion,
  };
}
