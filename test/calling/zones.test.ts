// The zone tables against libphonenumber's own text files (fixtures of its release v9.0.27), read here by a second,
// plain implementation: the longest prefix of the number in map_data.txt, and the area code's name in 1.txt.
// Generated numbers; the seed is printed, and DNC_PROPERTY_SEED=<seed> runs the same cases again.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { allZones, placeOf, significantDigits, ZONE_DATA_VERSION } from '../../src/calling/zones.js';
import { ZONE_DATA_PROVENANCE } from '../../src/calling/zone-data.js';
import { isKnownZone } from '../../src/calling/tz.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures', 'libphonenumber-v9.0.27');
const seed = Number(process.env.DNC_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** map_data.txt as it is: prefix → zones. */
function rawMap(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of readFileSync(path.join(FIXTURES, 'map_data.txt'), 'utf8').split('\n')) {
    const m = /^([0-9]+)\|(.+)$/.exec(line);
    if (m) map.set(m[1]!, m[2]!.split('&'));
  }
  return map;
}
const RAW = rawMap();

/** The oracle: libphonenumber's longest-prefix rule over the raw text. */
function rawLongest(digits: string): { prefix: string; zones: string[] } | undefined {
  for (let n = digits.length; n > 0; n--) {
    const zones = RAW.get(digits.slice(0, n));
    if (zones) return { prefix: digits.slice(0, n), zones };
  }
  return undefined;
}

describe('zone data', () => {
  it('is the release the fixtures are, and every zone it names is one this runtime knows', () => {
    expect(ZONE_DATA_PROVENANCE.libphonenumber).toBe('v9.0.27');
    expect(ZONE_DATA_VERSION).toBe('libphonenumber/9.0.27');
    const unknown = allZones().filter((zone) => !isKnownZone(zone));
    expect(unknown).toEqual([]);
    expect(allZones().length).toBeGreaterThan(300);
  });

  it('gives known prefixes the zones map_data.txt gives them', () => {
    const cases: Array<[string, string, string[]]> = [
      ['+12125551234', 'US', ['America/New_York']],
      ['+16025551234', 'US', ['America/Phoenix']],
      ['+15205551234', 'US', ['America/Phoenix']],
      ['+16055551234', 'US', ['America/Denver', 'America/North_Dakota/Center']],
      ['+12082011234', 'US', ['America/Denver']],
      ['+12082151234', 'US', ['America/Los_Angeles']],
      ['+19075551234', 'US', ['America/Adak', 'America/Anchorage']],
      ['+14165551234', 'CA', ['America/Toronto']],
      ['+441534123456', 'JE', ['Europe/Jersey']],
      ['+442079460123', 'GB', ['Europe/London']],
      ['+61298765432', 'AU', ['Australia/Sydney']],
      ['+61731234567', 'AU', ['Australia/Brisbane']],
      ['+34912345678', 'ES', ['Europe/Madrid']],
      ['+34928123456', 'ES', ['Atlantic/Canary']],
    ];
    for (const [e164, country, zones] of cases) {
      const digits = e164.slice(1);
      expect(rawLongest(digits)!.zones.sort(), `${e164} in the raw text`).toEqual(zones);
      const place = placeOf(e164, country);
      expect([...place.timeZones], e164).toEqual(zones);
      expect(place.locationKnown, e164).toBe(true);
    }
    // A country of one zone has only its country entry: the zone is right, the place within it not known.
    expect(rawLongest('4930123456')!.prefix).toBe('49');
    expect(placeOf('+4930123456', 'DE')).toMatchObject({ timeZones: ['Europe/Berlin'], locationKnown: false });
  });

  it('agrees with the raw text on generated numbers of every prefix (zones a subset; equal when only one)', () => {
    const prefixes = [...RAW.keys()];
    console.log(`zone table property: seed ${seed} (DNC_PROPERTY_SEED=${seed} runs it again)`);
    fc.assert(
      fc.property(fc.constantFrom(...prefixes), fc.stringMatching(/^[0-9]{4,9}$/), (prefix, rest) => {
        const digits = (prefix + rest).slice(0, 15);
        const parsed = parsePhoneNumberFromString(`+${digits}`);
        if (!parsed?.isValid()) return;
        const raw = rawLongest(digits)!;
        const place = placeOf(`+${digits}`, parsed.country);
        expect(place.timeZones.length, digits).toBeGreaterThan(0);
        if (place.locationKnown) {
          for (const zone of place.timeZones) expect(raw.zones, `${digits}: ${zone}`).toContain(zone);
          // One zone in the raw entry: nothing to choose, it must be that one.
          if (raw.zones.length === 1) expect([...place.timeZones]).toEqual(raw.zones);
        } else {
          // Not known where: at least the zones of the calling code's own entry that are the country's.
          expect(place.timeZones.length, digits).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 5_000, seed },
    );
  });

  it('numbers that share their significant digits share their place (what the per-place cache relies on)', () => {
    const prefixes = [...RAW.keys()];
    fc.assert(
      fc.property(
        fc.constantFrom(...prefixes),
        fc.stringMatching(/^[0-9]{6}$/),
        fc.stringMatching(/^[0-9]{6}$/),
        (prefix, a, b) => {
          const first = `+${prefix}${a}`;
          const second = `+${significantDigits(first)}${b}`.slice(0, 16);
          const country = parsePhoneNumberFromString(first)?.country;
          expect(placeOf(second, country), `${first} and ${second}`).toEqual(placeOf(first, country));
        },
      ),
      { numRuns: 5_000, seed },
    );
  });

  it('names the state of every US area code 1.txt names a state for', () => {
    // USPS codes, in the order of the Census Bureau's list of states.
    const codes = (
      'AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND ' +
      'OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY'
    ).split(' ');
    const names = (
      'Alabama,Alaska,Arizona,Arkansas,California,Colorado,Connecticut,Delaware,Florida,Georgia,Hawaii,Idaho,' +
      'Illinois,Indiana,Iowa,Kansas,Kentucky,Louisiana,Maine,Maryland,Massachusetts,Michigan,Minnesota,' +
      'Mississippi,Missouri,Montana,Nebraska,Nevada,New Hampshire,New Jersey,New Mexico,New York,North Carolina,' +
      'North Dakota,Ohio,Oklahoma,Oregon,Pennsylvania,Rhode Island,South Carolina,South Dakota,Tennessee,Texas,' +
      'Utah,Vermont,Virginia,Washington State,West Virginia,Wisconsin,Wyoming'
    ).split(',');
    const STATES: Record<string, string> = Object.fromEntries(names.map((name, i) => [name, codes[i]!]));
    STATES['Washington D.C.'] = 'DC';
    let checked = 0;
    for (const line of readFileSync(path.join(FIXTURES, 'geocoding-en-1-area-codes.txt'), 'utf8').split('\n')) {
      const m = /^1([0-9]{3})\|(.+)$/.exec(line);
      if (!m) continue;
      const state = STATES[m[2]!] ?? /, ([A-Z]{2})$/.exec(m[2]!)?.[1];
      const number = `+1${m[1]}2345678`;
      const country = parsePhoneNumberFromString(number)?.country;
      if (state === undefined || country !== 'US') continue;
      expect(placeOf(number, 'US').state, `${m[1]} ${m[2]}`).toBe(state);
      checked++;
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('gives a number whose location the data does not know its country zones, and says so', () => {
    // Toll-free: only +1's country entry matches; every US zone of it.
    const tollFree = placeOf('+18005551234', 'US');
    expect(tollFree.locationKnown).toBe(false);
    expect(tollFree.state).toBeUndefined();
    const some = ['America/New_York', 'America/Los_Angeles', 'Pacific/Honolulu', 'America/Phoenix'];
    expect(tollFree.timeZones).toEqual(expect.arrayContaining(some));
    expect(tollFree.timeZones).not.toContain('America/Toronto');
    // AU mobiles: libphonenumber says Sydney for all of them; a Perth mobile is not in Sydney.
    const mobile = placeOf('+61412345678', 'AU');
    expect(mobile.locationKnown).toBe(false);
    const australia = ['Adelaide', 'Brisbane', 'Eucla', 'Lord_Howe', 'Perth', 'Sydney'].map(
      (city) => `Australia/${city}`,
    );
    expect([...mobile.timeZones]).toEqual(australia);
    // ES mobiles may be on the Canary Islands, an hour behind Madrid.
    expect([...placeOf('+34612345678', 'ES').timeZones]).toEqual(['Atlantic/Canary', 'Europe/Madrid']);
    // GB mobiles: +44's entry also names Guernsey, Jersey and the Isle of Man, which are not GB.
    expect([...placeOf('+447911123456', 'GB').timeZones]).toEqual(['Europe/London']);
  });
});
