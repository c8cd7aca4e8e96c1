// A fast path for cells already written in E.164 ("+12025550123"): libphonenumber's own rules, without its text
// parsing.
// The package maps this path to an ES module (metadata.max.json.js) for import.
import metadata from 'libphonenumber-js/metadata.max.json';
import { Metadata, type CountryCode, type MetadataJson } from 'libphonenumber-js/core';

// libphonenumber's generic parser (extraction of a number from free text, punctuation, extensions) costs
// about 9–15 µs a call; a million-row call list in E.164 pays that a million times. For plain E.164 the
// calling code and national number are known at a glance, and the country and validity can be decided
// by the same steps its parser takes (getCountryByCallingCode: the only country of the calling code, else
// the first one whose leading digits match, or, without leading digits, whose number types match).
// Anything this path is not sure of returns undefined and goes through the full parser;
// test/phone/fast-e164.test.ts checks it agrees with the parser.

const META = metadata as unknown as MetadataJson;
const E164 = /^\+[1-9]\d{6,14}$/;
const callingCodes = (META as unknown as { country_calling_codes: Record<string, CountryCode[]> })
  .country_calling_codes;

// The type patterns libphonenumber tries (getNumberType), FIXED_LINE first.
const NUMBER_TYPES = [
  'FIXED_LINE',
  'MOBILE',
  'PREMIUM_RATE',
  'TOLL_FREE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
];

interface TypeDefinition {
  pattern(): string;
  possibleLengths(): number[] | undefined;
}
interface PlanMetadata {
  selectNumberingPlan(country: string): void;
  leadingDigits(): string | undefined;
  nationalNumberPattern(): string;
  hasTypes(): boolean;
  type(name: string): TypeDefinition | undefined;
}

/** A country's numbering plan with its patterns compiled once (libphonenumber compiles them on every call). */
interface Plan {
  leadingDigits: RegExp | null;
  nationalNumber: RegExp;
  hasTypes: boolean;
  types: Array<{ pattern: RegExp; lengths: number[] | undefined }>;
}

const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`);
const plans = new Map<string, Plan>();
function planOf(country: string): Plan {
  let plan = plans.get(country);
  if (!plan) {
    const m = new Metadata(META) as unknown as PlanMetadata;
    m.selectNumberingPlan(country);
    const lead = m.leadingDigits();
    plan = {
      leadingDigits: lead ? new RegExp(`^(?:${lead})`) : null,
      nationalNumber: whole(m.nationalNumberPattern()),
      hasTypes: m.hasTypes(),
      types: NUMBER_TYPES.flatMap((name) => {
        const t = m.type(name);
        return t && t.pattern() ? [{ pattern: whole(t.pattern()), lengths: t.possibleLengths() }] : [];
      }),
    };
    plans.set(country, plan);
  }
  return plan;
}

/** libphonenumber's getNumberType(…) !== undefined: the national pattern, then any number type's length and pattern. */
function hasNumberType(plan: Plan, national: string): boolean {
  if (!plan.nationalNumber.test(national)) return false;
  return plan.types.some((t) => (!t.lengths || t.lengths.includes(national.length)) && t.pattern.test(national));
}

/** libphonenumber's isValid() for a number of a known country. */
function isValidIn(plan: Plan, national: string): boolean {
  return plan.hasTypes ? hasNumberType(plan, national) : plan.nationalNumber.test(national);
}

/** A valid number's E.164 and country, shaped as a CellNumber that was read (one object a cell, not two). */
export interface FastE164 {
  readonly ok: true;
  readonly e164: string;
  readonly country: string;
}

/** E.164 and country of a valid number written exactly in E.164, or undefined (not sure: use the full parser). */
export function fastValidE164(value: string): FastE164 | undefined {
  if (!E164.test(value)) return undefined;
  for (let length = 1; length <= 3; length++) {
    const countries = callingCodes[value.slice(1, 1 + length)];
    if (!countries) continue;
    const national = value.slice(1 + length);
    let country: CountryCode | undefined;
    // A country chosen by its number types has just been found valid there (isValidIn would ask the same again).
    let valid = false;
    if (countries.length === 1) country = countries[0];
    else {
      for (const candidate of countries) {
        const plan = planOf(candidate);
        if (plan.leadingDigits ? plan.leadingDigits.test(national) : (valid = hasNumberType(plan, national))) {
          country = candidate;
          break;
        }
      }
    }
    if (!country) return undefined;
    return valid || isValidIn(planOf(country), national) ? { ok: true, e164: value, country } : undefined;
  }
  return undefined;
}

/** How a country's numbers written nationally lose their trunk prefix, when it is as plain as "0" (null: not so). */
interface TrunkPlan {
  callingCode: string;
  prefix: RegExp;
  idd: RegExp | null;
}

const trunkPlans = new Map<string, TrunkPlan | null>();
function trunkPlanOf(country: string): TrunkPlan | null {
  let plan = trunkPlans.get(country);
  if (plan === undefined) {
    plan = null;
    const m = new Metadata(META) as unknown as { hasCountry(c: string): boolean } & PlanMetadata & NumberingPlanOf;
    if (m.hasCountry(country)) {
      m.selectNumberingPlan(country);
      const p = m.numberingPlan;
      const parsing = p.nationalPrefixForParsing();
      // A rule that rewrites the digits (JE, BR, AR …) is the full parser's to apply.
      if (parsing && !p.nationalPrefixTransformRule()) {
        const idd = p.IDDPrefix();
        plan = {
          callingCode: p.callingCode(),
          prefix: new RegExp(`^(?:${parsing})`),
          idd: idd ? new RegExp(`^(?:${idd})`) : null,
        };
      }
    }
    trunkPlans.set(country, plan);
  }
  return plan;
}
interface NumberingPlanOf {
  numberingPlan: {
    callingCode(): string;
    nationalPrefixForParsing(): string | undefined;
    nationalPrefixTransformRule(): string | undefined;
    IDDPrefix(): string | undefined;
  };
}

const NATIONAL = /^[\d ().-]{6,24}$/;

/**
 * E.164 and country of a valid number written nationally in `country` with its trunk prefix ("020 7946 0018" in
 * GB), by the steps libphonenumber's parser takes for it: the prefix stripped as its national-prefix-for-parsing
 * pattern matches (no capture, no rewrite), and the rest valid in `country` itself. Anything else (an international
 * prefix, a number of another region of the calling code, a rewrite rule, no prefix) returns undefined: not sure.
 */
export function fastValidNational(value: string, country: string): FastE164 | undefined {
  if (!NATIONAL.test(value)) return undefined;
  const digits = value.replace(/[ ().-]/g, '');
  if (!/^\d+$/.test(digits)) return undefined;
  const plan = trunkPlanOf(country);
  if (!plan || plan.idd?.test(digits)) return undefined;
  const trunk = plan.prefix.exec(digits);
  if (!trunk || trunk[0] === '' || trunk.slice(1).some((g) => g !== undefined)) return undefined;
  const found = fastValidE164(`+${plan.callingCode}${digits.slice(trunk[0].length)}`);
  return found?.country === country ? found : undefined;
}
