// Each number's time zones and US state, from the generated tables of zone-data.ts (read once, on first use).
import { getCountryCallingCode, isSupportedCountry, type CountryCode } from 'libphonenumber-js/max';
import { NON_GEOGRAPHIC_PREFIXES, PREFIX_ZONES, REGION_ZONES, US_AREA_CODE_STATES } from './zone-data.js';
import { ZONE_DATA_PROVENANCE, ZONE_NAMES, ZONE_SETS } from './zone-data.js';

/** Where a number is, as far as the data says. */
export interface NumberPlace {
  /** IANA zones, sorted; empty when neither the number nor its country has any. */
  readonly timeZones: readonly string[];
  /** The zones space-separated ('America/Chicago America/Denver'): the `dnc_time_zones` column, and a cache key. */
  readonly zonesText: string;
  /** False when the data knows only the number's country: the zones are then all of the country's. */
  readonly locationKnown: boolean;
  /** USPS code of a US number's state (or DC), from its area code; undefined elsewhere or when unknown. */
  readonly state: string | undefined;
}

/** Version of the zone tables: libphonenumber's release whose data they hold. */
export const ZONE_DATA_VERSION = `libphonenumber/${ZONE_DATA_PROVENANCE.libphonenumber.replace(/^v/, '')}`;

interface Tables {
  /** E.164 digits prefix → zone set. */
  prefixes: Map<string, readonly string[]>;
  /** A prefix's first LEAD digits → the longest prefix starting with them, so a lookup starts where data exists. */
  longestUnder: Map<string, number>;
  regions: Map<string, readonly string[]>;
  states: Map<string, string>;
  nonGeographic: Set<string>;
}

const LEAD = 4;

let tables: Tables | undefined;

function items(lines: readonly string[]): string[][] {
  return lines.flatMap((line) => line.split(' ')).map((item) => item.split(':'));
}

function load(): Tables {
  const names = allZones();
  const sets = ZONE_SETS.flatMap((line) => line.split(' ')).map((packed) => {
    const zones: string[] = [];
    for (let i = 0; i < packed.length; i += 2) zones.push(names[parseInt(packed.slice(i, i + 2), 36)]!);
    return Object.freeze(zones.sort());
  });
  const setOf = (index: string): readonly string[] => sets[parseInt(index, 36)]!;
  const prefixes = new Map<string, readonly string[]>();
  const longestUnder = new Map<string, number>();
  for (const [prefix, set] of items(PREFIX_ZONES)) {
    prefixes.set(prefix!, setOf(set!));
    const lead = prefix!.slice(0, LEAD);
    longestUnder.set(lead, Math.max(longestUnder.get(lead) ?? 0, prefix!.length));
  }
  const regions = new Map(items(REGION_ZONES).map(([region, set]) => [region!, setOf(set!)]));
  const states = new Map(items(US_AREA_CODE_STATES).map(([npa, state]) => [npa!, state!]));
  const nonGeographic = new Set(NON_GEOGRAPHIC_PREFIXES.flatMap((line) => line.split(' ')));
  return { prefixes, longestUnder, regions, states, nonGeographic };
}

function data(): Tables {
  tables ??= load();
  return tables;
}

/** The longest prefix of `digits` libphonenumber has zones for ('' when none). */
function longestMatch(t: Tables, digits: string): string {
  // Every prefix of LEAD digits or more starts with the number's first LEAD digits; shorter ones are tried below.
  const longest = t.longestUnder.get(digits.slice(0, LEAD)) ?? LEAD - 1;
  for (let length = Math.min(digits.length, longest); length > 0; length--) {
    const prefix = digits.slice(0, length);
    if (t.prefixes.has(prefix)) return prefix;
  }
  return '';
}

const callingCodes = new Map<string, number>();

/**
 * The length of the country calling code at the start of E.164 digits: the country's, or else the shortest prefix
 * the data has (calling codes are prefix-free, and the data has an entry for each whole code).
 */
function callingCodeLength(t: Tables, digits: string, country: string | undefined): number {
  if (country !== undefined) {
    let length = callingCodes.get(country);
    if (length === undefined) {
      length = isSupportedCountry(country as CountryCode) ? getCountryCallingCode(country as CountryCode).length : 0;
      callingCodes.set(country, length);
    }
    if (length > 0) return length;
  }
  for (let length = 1; length <= 3; length++) if (t.prefixes.has(digits.slice(0, length))) return length;
  return 0;
}

const places = new Map<string, NumberPlace>();

/**
 * The digits of `e164` that decide its place: as many as the longest prefix in the data that starts like it (and
 * at least the calling code and a US area code). Numbers of one country that start with the same significant
 * digits are in the same place.
 */
export function significantDigits(e164: string): string {
  const t = data();
  const digits = e164.startsWith('+') ? e164.slice(1) : e164;
  return digits.slice(0, Math.max(LEAD, t.longestUnder.get(digits.slice(0, LEAD)) ?? 0));
}

/**
 * Where `e164` (a '+' and digits) is, for a number of `country` (ISO 3166-1 alpha-2, as libphonenumber assigns it).
 * The zones are libphonenumber's for the longest prefix it has, less any zone of another country (+44's country
 * entry names Guernsey, Jersey and the Isle of Man too); when only the calling code matches, the location is not
 * known and the zones are the country's; so too for a mobile range outside NANP, where libphonenumber's single
 * zone is only where most of them are (every AU mobile is in Sydney for it, every ES one in Madrid).
 */
export function placeOf(e164: string, country: string | undefined): NumberPlace {
  const t = data();
  const digits = e164.startsWith('+') ? e164.slice(1) : e164;
  const region = country?.toUpperCase();
  const prefix = longestMatch(t, digits);
  const state = region === 'US' && digits.startsWith('1') ? t.states.get(digits.slice(1, 4)) : undefined;
  // Numbers of one prefix, country and state are in one place: a million rows make a few thousand of these.
  const key = `${region ?? ''}|${prefix}|${state ?? ''}`;
  let place = places.get(key);
  if (place === undefined) {
    const countryZones = region === undefined ? undefined : t.regions.get(region);
    const codeLength = callingCodeLength(t, digits, region);
    const locationKnown = prefix.length > codeLength && !t.nonGeographic.has(prefix);
    // Not known where: the calling code's own entry (all the zones its numbers are in), else the country's zones.
    const entry = t.prefixes.get(locationKnown ? prefix : digits.slice(0, codeLength));
    let zones = entry ?? countryZones ?? [];
    if (countryZones !== undefined) {
      const own = zones.filter((zone) => countryZones.includes(zone));
      // An entry that names none of the country's zones is of no use for it: the country's own apply.
      zones = own.length > 0 ? own : locationKnown ? zones : countryZones;
    }
    place = Object.freeze({ timeZones: Object.freeze([...zones]), zonesText: zones.join(' '), locationKnown, state });
    places.set(key, place);
  }
  return place;
}

/** Every zone the tables name (for checking that this runtime's Intl knows each one). */
export function allZones(): string[] {
  return ZONE_NAMES.flatMap((line) => line.split(' '));
}

/** NANP toll-free area codes (800, 833, 844, 855, 866, 877, 888): a subscriber anywhere in the US or Canada. */
const NANP_TOLL_FREE = /^\+?18(00|33|44|55|66|77|88)/;

const spans = new Map<string, NumberPlace>();

/**
 * Where a number is and which countries' rules reach it: its own place and country, or, for a NANP toll-free
 * number, the US's zones and Canada's with both countries' rules (the strictest of all it could fall under), and
 * for a number whose country is not known, every country of its calling code.
 */
export function reachOf(
  e164: string,
  country: string | undefined,
  candidates: (code: string) => string[],
): { place: NumberPlace; countries: string[] } {
  const own = placeOf(e164, country);
  let countries: string[];
  if (country === 'US' && NANP_TOLL_FREE.test(e164)) countries = ['US', 'CA'];
  else if (country === undefined) {
    const digits = e164.startsWith('+') ? e164.slice(1) : e164;
    const length = callingCodeLength(data(), digits, undefined);
    countries = length > 0 ? candidates(digits.slice(0, length)) : [];
  } else return { place: own, countries: [country] };
  if (countries.length <= 1) return { place: own, countries };
  const key = `${countries.join(',')}|${own.zonesText}`;
  let place = spans.get(key);
  if (place === undefined) {
    const zones = [...new Set(countries.flatMap((c) => [...placeOf(e164, c).timeZones]))].sort();
    place = Object.freeze({
      ...own,
      timeZones: Object.freeze(zones),
      zonesText: zones.join(' '),
      locationKnown: false,
    });
    spans.set(key, place);
  }
  return { place, countries };
}
