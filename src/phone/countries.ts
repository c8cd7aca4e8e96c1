// A row's country as people write it in a call list (`DE`, `DEU`, `Germany`, `Deutschland`, `+49`), read as the
// region its national-format numbers are read in. An unknown value is said to be unknown, never guessed.
import metadata from 'libphonenumber-js/metadata.max.json';
import { ALPHA3_TO_ALPHA2, ENGLISH_NAMES } from './country-data.js';

/** A row's country: none given (the default applies), a region, or a value that names no country dnc knows. */
export type RowCountry = { kind: 'none' } | { kind: 'known'; region: string } | { kind: 'unknown'; value: string };

export const NO_COUNTRY: RowCountry = { kind: 'none' };

/**
 * Names people write that neither ISO nor ICU's English and own-language names give: other official languages of
 * multilingual countries, the nations of the United Kingdom, and common short forms. Documented in docs/batch.md.
 */
export const COUNTRY_ALIASES: Readonly<Record<string, string>> = {
  UK: 'GB',
  'U.K.': 'GB',
  Britain: 'GB',
  England: 'GB',
  Scotland: 'GB',
  Wales: 'GB',
  'Northern Ireland': 'GB',
  America: 'US',
  'United States of America': 'US',
  Holland: 'NL',
  Nederland: 'NL',
  Suisse: 'CH',
  Svizzera: 'CH',
  Switzerland: 'CH',
  Belgique: 'BE',
  Belgien: 'BE',
  Luxemburg: 'LU',
  Österreich: 'AT',
  Czechia: 'CZ',
  'South Korea': 'KR',
  Korea: 'KR',
  Russia: 'RU',
  Vietnam: 'VN',
  'Ivory Coast': 'CI',
  'Hong Kong': 'HK',
  Macau: 'MO',
  Éire: 'IE',
  Eire: 'IE',
  'Republic of Ireland': 'IE',
  'Rep. of Ireland': 'IE',
  'Irish Republic': 'IE',
  // ISO 3166's full names, and official names, people paste from forms: those the state-form rule below cannot
  // read (no "X of" shape, or a name that would read as another country once shortened).
  'United Kingdom of Great Britain and Northern Ireland': 'GB',
  'Hellenic Republic': 'GR',
  'Bundesrepublik Deutschland': 'DE',
  'Reino de España': 'ES',
  'Republic of China': 'TW',
  "Democratic People's Republic of Korea": 'KP',
  'Korea, Democratic People’s Republic of': 'KP',
  "Korea, Democratic People's Republic of": 'KP',
  'Estados Unidos de América': 'US',
  'République française': 'FR',
  'Royaume de Belgique': 'BE',
  'Koninkrijk België': 'BE',
  'Königreich Belgien': 'BE',
  'Republik Österreich': 'AT',
};

/**
 * The state form around a country's name in its official one: "Federal Republic of Germany", "Kingdom of Spain",
 * "Commonwealth of Australia", "Ireland, Republic of". The name left is read like any other, and only by the
 * names table (never as a code): "Republic of China" and the Koreas are aliases above, since shortening them
 * would name another country.
 */
const STATE_FORM = new RegExp(
  '^(?:the\\s+)?(?:(?:federal|federative|islamic|socialist|united|oriental|plurinational|bolivarian|co-operative)' +
    '\\s+)*(?:republic|rep\\.?|kingdom|commonwealth|state|principality|grand\\s+duchy|federation|sultanate|union)' +
    '\\s+of\\s+(?:the\\s+)?(.+)$',
  'i',
);
const STATE_FORM_AFTER =
  /^(.+?),\s*(?:the\s+)?(?:republic|rep\.?|kingdom|commonwealth|state|federation)\s+of(?:\s+the)?$/i;

/**
 * Languages whose names for countries (CLDR's, through ICU) are read beside English and each country's own: the
 * languages call lists are written in. A name in one of them never displaces an English or own-language one, and a
 * name two countries share among them is read as neither.
 */
const OTHER_LANGUAGES = [
  'fr',
  'de',
  'es',
  'it',
  'pt',
  'nl',
  'pl',
  'sv',
  'da',
  'nb',
  'fi',
  'cs',
  'ro',
  'hu',
  'tr',
  'ga',
];

/** The letters that count: case, spaces, dots, hyphens, apostrophes and accents are ignored. */
function keyOf(value: string): string {
  return value
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[\s.\-'’_()]/g, '');
}

const countryCallingCodes = (metadata as { country_calling_codes: Record<string, string[]> }).country_calling_codes;

/** Every region libphonenumber knows (the regions a number can be read in). */
const REGIONS: ReadonlySet<string> = new Set(Object.values(countryCallingCodes).flat());

let names: Map<string, string> | null = null;

/** Names and codes of every region, by key: built once, when a row first names its country in words. */
function nameTable(): Map<string, string> {
  if (names) return names;
  const table = new Map<string, string>();
  const add = (name: string | undefined, region: string) => {
    if (!name) return;
    const key = keyOf(name);
    // The first region to claim a name keeps it ("Congo" is in both Congos' alternates): an ambiguous name is
    // taken out below, never guessed.
    if (!table.has(key)) table.set(key, region);
    else if (table.get(key) !== region) table.set(key, '');
  };
  const english = new Intl.DisplayNames('en', { type: 'region' });
  for (const region of REGIONS) {
    add(english.of(region), region);
    for (const name of ENGLISH_NAMES[region] ?? []) add(name, region);
    // The country's own name, in its first language (ICU's likely subtags: de for DE, es for ES).
    const language = new Intl.Locale('und', { region }).maximize().language;
    if (language !== 'und') add(new Intl.DisplayNames(language, { type: 'region' }).of(region), region);
  }
  // Other languages' names, each only where no English or own-language name claims it.
  const others = new Map<string, string>();
  for (const language of OTHER_LANGUAGES) {
    const display = new Intl.DisplayNames(language, { type: 'region' });
    for (const region of REGIONS) {
      const name = display.of(region);
      if (!name || name === region) continue;
      const key = keyOf(name);
      if (table.has(key)) continue;
      others.set(key, others.has(key) && others.get(key) !== region ? '' : region);
    }
  }
  for (const [key, region] of others) table.set(key, region);
  for (const [alias, region] of Object.entries(COUNTRY_ALIASES)) table.set(keyOf(alias), region);
  for (const [key, region] of table) if (region === '') table.delete(key);
  names = table;
  return table;
}

function alpha3(code: string): string | undefined {
  for (let i = 0; i < ALPHA3_TO_ALPHA2.length; i += 5) {
    if (ALPHA3_TO_ALPHA2.startsWith(code, i)) return ALPHA3_TO_ALPHA2.slice(i + 3, i + 5);
  }
  return undefined;
}

/** The region a row's country cell names, read as people write it. */
export function readCountry(value: string): RowCountry {
  const text = value.trim();
  if (text === '') return NO_COUNTRY;
  const known = (region: string | undefined): RowCountry =>
    region && REGIONS.has(region) ? { kind: 'known', region } : { kind: 'unknown', value: text };
  // A calling code (+49, 49, 00 49): the code's main region (+1 is the US, +44 GB, +7 RU), as libphonenumber orders.
  const calling = /^(?:\+|00)?\s*(\d{1,3})$/.exec(text);
  if (calling) return known(countryCallingCodes[calling[1]!]?.[0]);
  const letters = text.replace(/[\s.]/g, '').toUpperCase();
  if (/^[A-Z]{2}$/.test(letters) && REGIONS.has(letters)) return known(letters);
  if (/^[A-Z]{3}$/.test(letters) && alpha3(letters)) return known(alpha3(letters));
  const table = nameTable();
  const named = table.get(keyOf(text));
  if (named) return known(named);
  const shortened = STATE_FORM.exec(text)?.[1] ?? STATE_FORM_AFTER.exec(text)?.[1];
  return known(shortened === undefined ? undefined : table.get(keyOf(shortened)));
}

/** Reads country cells, each distinct value once. */
export class CountryReader {
  private readonly cache = new Map<string, RowCountry>();

  read(value: string): RowCountry {
    let hit = this.cache.get(value);
    if (hit === undefined) {
      hit = readCountry(value);
      // A country column holds a few hundred distinct values at most; a column of something else is not cached
      // without end.
      if (this.cache.size < 10_000) this.cache.set(value, hit);
    }
    return hit;
  }
}

/**
 * Regions whose numbers the service files under another country's register: Guernsey, Jersey and the Isle of Man
 * share +44 with the UK, and the service answers GB (with the GB register) for them. That country's calling rules
 * and validity window govern such a number, whatever region libphonenumber's numbering plan places it in.
 */
const SERVICE_COUNTRY: Readonly<Record<string, string>> = { GG: 'GB', JE: 'GB', IM: 'GB' };

/** The country whose register, rules and validity window govern a number of `region` (upper case). */
export function governingCountry(region: string | undefined): string | undefined {
  return region === undefined ? undefined : (SERVICE_COUNTRY[region] ?? region);
}

/** The countries a number of this calling code could be in, each as its governing country, once. */
export function countriesOfCallingCode(code: string): string[] {
  return [...new Set((countryCallingCodes[code] ?? []).map((r) => governingCountry(r)!))];
}
