// E.164 normalisation and country detection (libphonenumber-js, full metadata), before any credit is spent.
import { parsePhoneNumberFromString, validatePhoneNumberLength, type CountryCode } from 'libphonenumber-js/max';
import { getCountryCallingCode, isSupportedCountry, Metadata } from 'libphonenumber-js/max';

export type PhoneProblem =
  'empty' | 'not_a_number' | 'invalid_country' | 'too_short' | 'too_long' | 'invalid_length' | 'invalid';

export type NormalizedPhone =
  | {
      ok: true;
      /** E.164, e.g. +12025550123 */
      e164: string;
      /** ISO 3166-1 alpha-2, as libphonenumber assigns it (may be undefined for non-geographic numbers). */
      country: string | undefined;
      /** Human form, e.g. "+1 202 555 0123". */
      international: string;
      /** False when parsed but not valid, and validation was switched off (--no-validate). */
      valid: boolean;
    }
  | {
      ok: false;
      problem: PhoneProblem;
      /** Says what is wrong with the value, for an error message. */
      message: string;
      e164?: string;
      country?: string;
    };

export interface NormalizeOptions {
  /** Region for numbers written in national format, e.g. 'US'. */
  defaultCountry?: string | undefined;
  /** false: accept numbers that parse but are not valid (`--no-validate`). Default true. */
  validate?: boolean;
}

/** Is `code` a region libphonenumber knows (for checking --country)? */
export function isKnownRegion(code: string): boolean {
  return isSupportedCountry(code.toUpperCase() as CountryCode);
}

/**
 * Whether `region` is one of the regions of the calling code `e164` starts with: GB, GG, JE and IM for +44; US, CA,
 * PR … for +1. Calling codes are prefix-free (ITU-T E.164), so a prefix names exactly one.
 */
export function isRegionOfCallingCode(region: string, e164: string): boolean {
  return (
    isSupportedCountry(region as CountryCode) && e164.startsWith(`+${getCountryCallingCode(region as CountryCode)}`)
  );
}

const LENGTH_PROBLEMS: Record<string, PhoneProblem> = {
  TOO_SHORT: 'too_short',
  TOO_LONG: 'too_long',
  INVALID_LENGTH: 'invalid_length',
  INVALID_COUNTRY: 'invalid_country',
  NOT_A_NUMBER: 'not_a_number',
};

/**
 * The region an invalid number is most likely meant for, so an error can say "too short for US"
 * rather than "for +1": the default region when it shares the calling code, else the code's main country.
 */
function regionOfCallingCode(callingCode: string, region: CountryCode | undefined): string | undefined {
  if (region && isSupportedCountry(region) && getCountryCallingCode(region) === callingCode) return region;
  // countryCallingCodes() exists at runtime but not in the typings; each list starts with the code's main country.
  const metadata = new Metadata() as unknown as { countryCallingCodes(): Record<string, string[] | undefined> };
  return metadata.countryCallingCodes()[callingCode]?.[0];
}

export function normalizePhone(raw: string, options: NormalizeOptions = {}): NormalizedPhone {
  const value = raw.trim();
  if (value === '') return { ok: false, problem: 'empty', message: 'the phone number is empty' };
  const region = options.defaultCountry?.toUpperCase() as CountryCode | undefined;
  // "00" international prefix (common in European exports) means the same as "+".
  const text = /^00[1-9]/.test(value) ? `+${value.slice(2)}` : value;
  const parsed = parsePhoneNumberFromString(text, region ? { defaultCountry: region } : {});
  if (!parsed) {
    const lengthProblem = validatePhoneNumberLength(text, region ? { defaultCountry: region } : {});
    const problem = (lengthProblem && LENGTH_PROBLEMS[lengthProblem]) || 'not_a_number';
    const message =
      problem === 'invalid_country'
        ? region || text.startsWith('+')
          ? `'${value}' has no country calling code that exists`
          : `'${value}' is in national format: give --country, or write it with + and the country code`
        : problem === 'too_short'
          ? `'${value}' is too short to be a phone number`
          : problem === 'too_long'
            ? `'${value}' is too long to be a phone number`
            : `'${value}' is not a phone number`;
    return { ok: false, problem, message };
  }
  const e164 = parsed.number;
  const country = parsed.country;
  const valid = parsed.isValid();
  if (!valid && options.validate !== false) {
    const lengthProblem = validatePhoneNumberLength(text, region ? { defaultCountry: region } : {});
    const problem = (lengthProblem && LENGTH_PROBLEMS[lengthProblem]) || 'invalid';
    const where = country ?? regionOfCallingCode(parsed.countryCallingCode, region) ?? `+${parsed.countryCallingCode}`;
    const detail =
      problem === 'too_short'
        ? 'is too short for'
        : problem === 'too_long'
          ? 'is too long for'
          : 'is not a valid number in';
    return {
      ok: false,
      problem,
      message: `'${value}' ${detail} ${where}`,
      e164,
      ...(country ? { country } : {}),
    };
  }
  return { ok: true, e164, country, international: parsed.formatInternational(), valid };
}
