// A row's country as people write it: codes, names in English and in the country's own language, aliases, calling
// codes; an unknown value said to be unknown. The alpha-3 table is checked against the generator's package.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALPHA3_TO_ALPHA2, ENGLISH_NAMES } from '../../src/phone/country-data.js';
import { COUNTRY_ALIASES, CountryReader, readCountry } from '../../src/phone/countries.js';

const region = (value: string) => {
  const c = readCountry(value);
  return c.kind === 'known' ? c.region : c.kind;
};

describe('readCountry', () => {
  it.each([
    ['DE', 'DE'],
    ['de', 'DE'],
    [' D.E. ', 'DE'],
    ['DEU', 'DE'],
    ['gbr', 'GB'],
    ['Germany', 'DE'],
    ['Deutschland', 'DE'],
    ['España', 'ES'],
    ['espana', 'ES'],
    ['United Kingdom', 'GB'],
    ['UK', 'GB'],
    ['Great Britain', 'GB'],
    ['England', 'GB'],
    ['USA', 'US'],
    ['U.S.A.', 'US'],
    ['United States of America', 'US'],
    ['+49', 'DE'],
    ['49', 'DE'],
    ['0049', 'DE'],
    ['+1', 'US'],
    ['44', 'GB'],
    ['+7', 'RU'],
    ['Österreich', 'AT'],
    ['Suisse', 'CH'],
    ['Schweiz', 'CH'],
    ['The Netherlands', 'NL'],
    ["Côte d'Ivoire", 'CI'],
    ['日本', 'JP'],
    ['', 'none'],
    ['   ', 'none'],
    ['Atlantis', 'unknown'],
    ['XX', 'unknown'],
    ['+999', 'unknown'],
    // Both Congos are "Congo": a name two countries share is never guessed.
    ['Congo', 'unknown'],
    // Issue 48: names people write that were not read. ISO 3166's full names and official forms …
    ['Republic of Ireland', 'IE'],
    ['Rep. of Ireland', 'IE'],
    ['United Kingdom of Great Britain and Northern Ireland', 'GB'],
    ['Federal Republic of Germany', 'DE'],
    ['Kingdom of Spain', 'ES'],
    ['Commonwealth of Australia', 'AU'],
    ['Kingdom of Belgium', 'BE'],
    ['Ireland, Republic of', 'IE'],
    ['Moldova, Republic of', 'MD'],
    // … where shortening would name another country, the whole name is known instead …
    ['Republic of China', 'TW'],
    ["Democratic People's Republic of Korea", 'KP'],
    ['Republic of Korea', 'KR'],
    ['Republic of the Congo', 'CG'],
    ['Republic of Congo', 'unknown'],
    // … and other languages' names (CLDR's, as ICU has them).
    ['Irlande', 'IE'],
    ['Allemagne', 'DE'],
    ['Espagne', 'ES'],
    ['Estados Unidos', 'US'],
    ['Royaume-Uni', 'GB'],
    ['Vereinigtes Königreich', 'GB'],
    ['Nouvelle-Zélande', 'NZ'],
    ['Bélgica', 'BE'],
    ['Irland', 'IE'],
    ['Narnia', 'unknown'],
  ])('%j is %s', (value, expected) => {
    expect(region(value)).toBe(expected);
  });

  it('reads each country the service covers by its name in each language call lists are written in', () => {
    // The oracle is CLDR's name as ICU gives it; a name that stopped reading (made ambiguous by another language's
    // name for another country) fails here.
    for (const language of ['en', 'fr', 'de', 'es', 'it', 'pt', 'nl', 'pl', 'sv', 'da', 'nb', 'fi', 'ga']) {
      const display = new Intl.DisplayNames(language, { type: 'region' });
      for (const country of ['US', 'GB', 'DE', 'IE', 'BE', 'NZ', 'ES', 'AU', 'CA', 'FR', 'IT', 'NL', 'AT', 'CH'])
        expect(`${language} ${display.of(country)}: ${region(display.of(country)!)}`).toBe(
          `${language} ${display.of(country)}: ${country}`,
        );
    }
  });

  it('reads every country by its alpha-2 code, its alpha-3 code and its English names', () => {
    for (let i = 0; i < ALPHA3_TO_ALPHA2.length; i += 5) {
      const a3 = ALPHA3_TO_ALPHA2.slice(i, i + 3);
      const a2 = ALPHA3_TO_ALPHA2.slice(i + 3, i + 5);
      const got = region(a3);
      // (A few ISO countries have no telephone region of their own, Antarctica or Bouvet Island: unknown, not another.)
      expect([a2, 'unknown']).toContain(got);
      if (got === a2) expect(region(a2)).toBe(a2);
    }
    for (const [a2, names] of Object.entries(ENGLISH_NAMES)) {
      for (const name of names) expect([a2, 'unknown']).toContain(region(name));
    }
  });

  it('maps every alias to a region dnc reads numbers in', () => {
    for (const [alias, a2] of Object.entries(COUNTRY_ALIASES)) expect(region(alias)).toBe(a2);
  });

  it('ignores case, spaces, dots and accents, and never throws (generated values)', () => {
    const seed = Number(process.env.DNC_PROPERTY_SEED ?? Date.now() % 2 ** 31);
    console.log(`countries property seed: ${seed}`);
    fc.assert(
      fc.property(fc.constantFrom('Germany', 'United Kingdom', 'España', 'USA'), fc.string(), (name, junk) => {
        const spaced = name
          .split('')
          .map((ch, i) => (i % 2 ? ch.toUpperCase() : ch.toLowerCase()))
          .join(' ');
        expect(region(spaced)).toBe(region(name));
        expect(['known', 'unknown', 'none']).toContain(readCountry(junk).kind);
      }),
      { seed },
    );
  });

  it('reads each distinct value once and keeps no more than it should', () => {
    const reader = new CountryReader();
    expect(reader.read('Germany')).toEqual({ kind: 'known', region: 'DE' });
    expect(reader.read('Germany')).toBe(reader.read('Germany'));
  });
});
