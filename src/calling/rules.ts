// The calling rules pack dnc ships: for every US state, DC and territory, Canada and its provinces, and every country
// the service covers, when the law (or a code the industry keeps) lets a number be called, since when, and from where.
//
// Local time at the called number. `hours` maps days ('mon', 'mon-fri', 'sat-sun' …) to 'HH:MM-HH:MM' (start
// inclusive, end exclusive); a day not named is a day without calls; `hours: null` says the jurisdiction has no rule
// of its own, and which one applies instead, in its note. `closed_on: ['public_holidays']` adds the rule's own
// region's public holidays (the country's national ones, or the state's for a state rule). A rule is in force from
// `effective_from` (a local date; null: long-standing, its start not established, so applied at every date: the
// stricter reading) until the day before `until`. Where the law is unclear the pack takes the stricter reading and
// says so in the note. Change a rule only with its source, and give the pack a new version: results name it.
// This pack is not legal advice: the citations were written from public summaries and statute text, not reviewed
// by counsel.

/** Days mapped to a window: 'mon-fri': '09:00-20:00'. */
export type HoursSpec = Readonly<Record<string, string>>;
export type ClosedOn = 'public_holidays';

export interface RuleSource {
  /** The statute, regulation or code, as cited. */
  readonly law: string;
  readonly url: string;
}

/** What every rule of the pack says: its hours, its days off, its source, and when it is in force. */
export interface RuleRecord {
  /** Unique in the pack: 'US-TX'; an earlier version of a rule is suffixed with the year it began ('US-PA-1996'). */
  readonly id: string;
  /** Null: no rule of its own (the note says which applies). */
  readonly hours: HoursSpec | null;
  readonly closed_on?: readonly ClosedOn[];
  /** 'YYYY-MM-DD', local date; null when long-standing and its start not established (applied at every date). */
  readonly effective_from: string | null;
  /** The first local date it no longer applies (repealed or replaced); absent while in force. */
  readonly until?: string;
  readonly source: RuleSource;
  /** Where the law is unclear, the reading dnc takes (always the stricter) and why. */
  readonly note?: string;
}

export interface CountryRule extends RuleRecord {
  /** ISO 3166-1 alpha-2 codes the rule applies to. */
  readonly countries: readonly string[];
}

export interface StateRule extends RuleRecord {
  readonly country: string;
  /** USPS code, or a Canadian province's two-letter code. */
  readonly state: string;
}

export interface RulesFile {
  readonly version: string;
  /**
   * Countries without a published rule, named or not: a conservative default (a team may set other hours,
   * `default_hours` of the calling settings). Never silent: a rule of the pack without hours names it in its note.
   */
  readonly default: RuleRecord & { readonly hours: HoursSpec };
  readonly countries: readonly CountryRule[];
  /** Rules of states and provinces, on top of their country's (every one listed, those without a rule too). */
  readonly states: readonly StateRule[];
}

const ECFR = 'https://www.ecfr.gov/current';
const PA_AG = 'https://www.attorneygeneral.gov/protect-yourself/consumer-advisories';
const HOLIDAYS: ClosedOn[] = ['public_holidays'];

interface StateFields {
  readonly hours: HoursSpec | null;
  readonly law: string;
  readonly url: string;
  readonly from?: string | null;
  readonly until?: string;
  readonly holidays?: boolean;
  readonly note?: string;
  /** The id's suffix for an earlier version of a state's rule. */
  readonly suffix?: string;
}

/** A state's (or province's) rule; its holidays are the state's own calendar, which holds the national ones too. */
function state(country: string, code: string, f: StateFields): StateRule {
  return {
    id: `${country}-${code}${f.suffix ? `-${f.suffix}` : ''}`,
    country,
    state: code,
    hours: f.hours,
    ...(f.holidays ? { closed_on: HOLIDAYS } : {}),
    effective_from: f.from ?? null,
    ...(f.until ? { until: f.until } : {}),
    source: { law: f.law, url: f.url },
    ...(f.note ? { note: f.note } : {}),
  };
}

const us = (code: string, f: StateFields): StateRule => state('US', code, f);

/** US states and DC without a calling-hours rule stricter than the federal one (theirs repeat 8 a.m.–9 p.m.). */
const US_FEDERAL_ONLY =
  'AK AZ AR CA CO DE DC GA HI ID IL IN IA KS ME MO MT NE NH NJ NY NC ND OH OR SC SD TN VT VA WV WI WY'.split(' ');

const EVERY_DAY_8_TO_8 = { 'mon-sun': '08:00-20:00' };

const US_STATES: readonly StateRule[] = [
  us('AL', {
    hours: { 'mon-sat': '08:00-20:00' },
    holidays: true,
    law: 'Alabama Public Service Commission telephone solicitation rules (Ala. Admin. Code r. 770-2-19)',
    url: 'https://psc.alabama.gov/',
    note: 'no calls on Sundays or state holidays (a holiday on a Sunday is kept on the Monday, Ala. Code 1-3-8)',
  }),
  us('CT', {
    hours: { 'mon-sun': '09:00-20:00' },
    law: 'Conn. Gen. Stat. 42-288a, as amended by P.A. 23-98',
    url: 'https://www.cga.ct.gov/current/pub/chap_743c.htm',
    note: 'applied at every date: the hours before P.A. 23-98 are not established here (09:00-20:00 is stricter)',
  }),
  us('FL', {
    hours: EVERY_DAY_8_TO_8,
    from: '2021-07-01',
    law: 'Fla. Stat. 501.616(6)(a), as amended by ch. 2021-173 (SB 1120)',
    url: 'https://www.flsenate.gov/Laws/Statutes/2024/501.616',
  }),
  us('KY', {
    hours: { 'mon-sun': '10:00-21:00' },
    law: 'KRS 367.46955(15)',
    url: 'https://apps.legislature.ky.gov/law/statutes/statute.aspx?id=30897',
  }),
  us('LA', {
    hours: { 'mon-sat': '08:00-20:00' },
    holidays: true,
    law: 'Louisiana Telephone Solicitation Relief Act, La. R.S. 45:844.11 et seq.; LPSC rules',
    url: 'https://www.lpsc.louisiana.gov/',
    note: 'no calls on Sundays or legal holidays; the LPSC names those it enforces: dnc closes on all (stricter)',
  }),
  us('MA', {
    hours: EVERY_DAY_8_TO_8,
    law: 'M.G.L. c. 159C, s. 3; 201 CMR 12.02',
    url: 'https://malegislature.gov/Laws/GeneralLaws/PartI/TitleXXII/Chapter159C',
  }),
  us('MD', {
    hours: EVERY_DAY_8_TO_8,
    from: '2024-01-01',
    law: 'Maryland Stop the Spam Calls Act of 2023, Md. Code, Com. Law title 14, subtitle 45',
    url: 'https://mgaleg.maryland.gov/mgawebsite/Legislation/Details/sb0090?ys=2023RS',
  }),
  us('MI', {
    hours: { 'mon-sun': '09:00-21:00' },
    law: 'Mich. Comp. Laws 445.111c(1)(f) (Home Solicitation Sales Act)',
    url: 'https://www.legislature.mi.gov/Laws/MCL?objectName=mcl-445-111c',
    note: 'summaries give 9 a.m.-9 p.m.; whether it reaches every live call is unclear: dnc takes the stricter reading',
  }),
  us('MN', {
    hours: { 'mon-sun': '09:00-21:00' },
    law: 'Minn. Stat. 325E.27',
    url: 'https://www.revisor.mn.gov/statutes/cite/325E.27',
    note: 'the section speaks of prerecorded messages; whether it reaches live calls is unclear: dnc applies it to all',
  }),
  us('MS', {
    hours: { 'mon-sat': '08:00-20:00' },
    holidays: true,
    law: 'Miss. Code Ann. 77-3-725; Mississippi Public Service Commission Telephone Solicitation rules',
    url: 'https://www.psc.ms.gov/',
    note: 'no calls on Sundays; summaries differ on legal holidays (Miss. Code 3-3-7): dnc closes on them (stricter)',
  }),
  us('NM', {
    hours: { 'mon-sun': '09:00-21:00' },
    law: 'N.M. Stat. 57-12-22',
    url: 'https://nmonesource.com/nmos/nmsa/en/item/4398/index.do',
  }),
  us('NV', {
    hours: { 'mon-sun': '09:00-20:00' },
    law: 'Nevada telephone solicitation law (NRS 228)',
    url: 'https://www.leg.state.nv.us/NRS/NRS-228.html',
  }),
  us('OK', {
    hours: EVERY_DAY_8_TO_8,
    from: '2022-11-01',
    law: 'Oklahoma Telephone Solicitation Act of 2022, 15 O.S. 775C.4 (HB 3168)',
    url: 'https://oksenate.gov/',
  }),
  us('PA', {
    hours: { 'mon-sat': '08:00-21:00', sun: '13:30-21:00' },
    from: null,
    until: '2019-12-03',
    suffix: '1996',
    law: 'Telemarketer Registration Act, 73 P.S. 2245(a), before Act 73 of 2019',
    url: `${PA_AG}/telemarketing-information-you-need-to-know/`,
    note: 'summaries differ on Sundays (8 a.m. or 1:30 p.m.): dnc takes 13:30 (stricter)',
  }),
  us('PA', {
    hours: { 'mon-sat': '08:00-21:00', sun: '13:30-21:00' },
    holidays: true,
    from: '2019-12-03',
    law: 'Telemarketer Registration Act, 73 P.S. 2245(a)(10), as amended by Act 73 of 2019 (HB 318): legal holidays',
    url: 'https://mslawgroup.com/regulatory-alert-pennsylvania-amends-telemarketing-registration-act/',
    note: 'summaries differ on Sundays (8 a.m. or 1:30 p.m.): dnc takes 13:30 (stricter)',
  }),
  us('RI', {
    hours: { 'mon-fri': '09:00-18:00', sat: '10:00-17:00' },
    holidays: true,
    law: 'R.I. Gen. Laws 5-61-3.4',
    url: 'http://webserver.rilin.state.ri.us/Statutes/TITLE5/5-61/5-61-3.4.htm',
    note: 'no calls on Sundays or legal holidays',
  }),
  us('TX', {
    hours: { 'mon-sat': '09:00-21:00', sun: '12:00-21:00' },
    from: '2009-04-01',
    until: '2025-09-01',
    suffix: '2009',
    law: 'Tex. Bus. & Com. Code 301.051 (Acts 2007, 80th Leg., ch. 885)',
    url: 'https://statutes.capitol.texas.gov/Docs/BC/htm/BC.301.htm#301.051',
  }),
  us('TX', {
    hours: { 'mon-sat': '09:00-21:00', sun: '12:00-21:00' },
    from: '2025-09-01',
    law: 'Tex. Bus. & Com. Code 301.051, with SB 140 (89th Leg.): texts included, private action $500-$10,000 a call',
    url: 'https://statutes.capitol.texas.gov/Docs/BC/htm/BC.301.htm#301.051',
  }),
  us('UT', {
    hours: { 'mon-sat': '08:00-21:00' },
    holidays: true,
    law: 'Utah Code 13-25a-103 (Telephone and Facsimile Solicitation Act)',
    url: 'https://le.utah.gov/xcode/Title13/Chapter25A/13-25a-S103.html',
    note: 'no calls on Sundays or legal holidays',
  }),
  us('WA', {
    hours: EVERY_DAY_8_TO_8,
    law: 'RCW 80.36.390; RCW 19.158.110, as amended by HB 1497 (2022)',
    url: 'https://app.leg.wa.gov/RCW/default.aspx?cite=80.36.390',
  }),
  ...US_FEDERAL_ONLY.map((code) =>
    us(code, {
      hours: null,
      law: 'no stricter state calling-hours rule found',
      url: `${ECFR}/title-16/chapter-I/subchapter-C/part-310/section-310.4`,
      note: 'the US rule applies (08:00-21:00)',
    }),
  ),
];

/** Provinces and territories of Canada: none with published hours stricter than the CRTC's. */
const CA_PROVINCES = 'AB BC MB NB NL NS NT NU ON PE QC SK YT'.split(' ').map((code) =>
  state('CA', code, {
    hours: null,
    law: 'no provincial calling-hours rule stricter than the CRTC Telemarketing Rules found',
    url: 'https://crtc.gc.ca/eng/phone/telemarketing/reg.htm',
    note: 'the CA rule applies',
  }),
);

export const CALLING_RULES: RulesFile = {
  version: '2026.12.1',
  default: {
    id: 'default',
    hours: { 'mon-fri': '09:00-20:00' },
    closed_on: HOLIDAYS,
    effective_from: null,
    source: {
      law: 'no published rule: dnc conservative default (configurable: default_hours)',
      url: 'docs/calling.md',
    },
    note: 'weekdays 09:00-20:00, never on weekends or public holidays',
  },
  countries: [
    {
      id: 'US',
      // The TSR and the TCPA rules reach the territories, which libphonenumber gives regions of their own.
      countries: ['US', 'PR', 'VI', 'GU', 'MP', 'AS'],
      hours: { 'mon-sun': '08:00-21:00' },
      effective_from: '1995-12-31',
      source: {
        law: 'Telemarketing Sales Rule, 16 CFR 310.4(c); TCPA rules, 47 CFR 64.1200(c)(1)',
        url: `${ECFR}/title-16/chapter-I/subchapter-C/part-310/section-310.4`,
      },
      note: 'the territories have no stricter rule of their own in the pack',
    },
    {
      id: 'CA',
      countries: ['CA'],
      hours: { 'mon-fri': '09:00-21:30', 'sat-sun': '10:00-18:00' },
      effective_from: '2008-09-30',
      source: {
        law: 'CRTC Unsolicited Telecommunications Rules, Part III (Telemarketing Rules), calling hours',
        url: 'https://crtc.gc.ca/eng/trules-reglest.htm',
      },
      note: 'no holiday closure in the Rules; a province could be stricter: none found',
    },
    {
      id: 'AU',
      countries: ['AU'],
      hours: { 'mon-fri': '09:00-20:00', sat: '09:00-17:00' },
      closed_on: HOLIDAYS,
      effective_from: null,
      source: {
        law: 'Telecommunications (Telemarketing and Research Calls) Industry Standard 2017, calling times',
        url: 'https://www.acma.gov.au/telemarketing-calls-and-research-calls',
      },
      note: 'national public holidays; the 2007 Standard before it had the same hours',
    },
    {
      id: 'ES',
      countries: ['ES'],
      hours: { 'mon-fri': '09:00-21:00' },
      closed_on: HOLIDAYS,
      effective_from: null,
      source: {
        law: 'Ley General para la Defensa de los Consumidores y Usuarios (RDL 1/2007), art. 96, as amended in 2022',
        url: 'https://www.boe.es/buscar/act.php?id=BOE-A-2007-20555',
      },
      note: 'applied at every date (stricter): the 2022 amendment is the first to set these hours',
    },
    {
      id: 'GB',
      countries: ['GB'],
      hours: { 'mon-fri': '08:00-21:00', 'sat-sun': '09:00-21:00' },
      effective_from: null,
      source: {
        law: 'DMA Code (Data & Marketing Association), telephone marketing',
        url: 'https://dma.org.uk/the-dma-code',
      },
      note: 'PECR (ICO) and Ofcom set no hours; the DMA Code is the published rule',
    },
    {
      id: 'NZ',
      countries: ['NZ'],
      hours: { 'mon-sat': '09:00-21:00' },
      closed_on: HOLIDAYS,
      effective_from: null,
      source: {
        law: 'Marketing Association Telemarketing Code of Practice, calling times',
        url: 'https://www.marketing.org.nz/',
      },
      note: 'no calls on Sundays or public holidays; summaries give 8 or 9 a.m. to start: dnc takes 09:00 (stricter)',
    },
    {
      id: 'IE',
      countries: ['IE'],
      hours: { 'mon-sat': '09:00-21:00' },
      closed_on: HOLIDAYS,
      effective_from: null,
      source: {
        law: 'Central Bank of Ireland Consumer Protection Code 2012, provision 3.41 (unsolicited contact)',
        url: 'https://www.centralbank.ie/regulation/consumer-protection/consumer-protection-codes-regulations',
      },
      note: 'binds regulated financial firms; S.I. 336/2011 sets no hours: dnc applies it to every call (stricter)',
    },
    {
      id: 'DE',
      countries: ['DE'],
      hours: null,
      effective_from: null,
      source: {
        law: 'no published rule: UWG 7(2) requires prior consent, and sets no hours',
        url: 'https://www.gesetze-im-internet.de/uwg_2004/__7.html',
      },
      note: 'the default applies: weekdays 09:00-20:00, not on national public holidays',
    },
    {
      id: 'BE',
      countries: ['BE'],
      hours: null,
      effective_from: null,
      source: {
        law: 'no published rule: Code of Economic Law, Book VI (Do Not Call me list) sets no hours',
        url: 'https://economie.fgov.be/',
      },
      note: 'the default applies: weekdays 09:00-20:00, not on national public holidays',
    },
  ],
  states: [...US_STATES, ...CA_PROVINCES],
};
