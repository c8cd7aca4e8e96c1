// The calling rules dnc ships: when the law (or a code the industry keeps) lets a number be called, with sources.
//
// Local time at the called number. `hours` maps days ('mon', 'mon-fri', 'sat-sun' …) to 'HH:MM-HH:MM' (start
// inclusive, end exclusive); a day not named is a day without calls. `closed_on: ['public_holidays']` adds the
// rule's own region's public holidays (the country's national ones, or the state's for a state rule).
// Change a rule only with its source, and give the file a new version: results name the version they used.
// This table is not legal advice: the citations were written from public summaries, not reviewed by counsel.

/** Days mapped to a window: 'mon-fri': '09:00-20:00'. */
export type HoursSpec = Readonly<Record<string, string>>;
export type ClosedOn = 'public_holidays';

export interface RuleSource {
  /** The statute, regulation or code, as cited. */
  readonly law: string;
  readonly url: string;
}

export interface CountryRule {
  readonly id: string;
  /** ISO 3166-1 alpha-2 codes the rule applies to. */
  readonly countries: readonly string[];
  readonly hours: HoursSpec;
  readonly closed_on?: readonly ClosedOn[];
  readonly source: RuleSource;
}

export interface StateRule {
  readonly id: string;
  readonly country: string;
  /** USPS code. */
  readonly state: string;
  readonly hours: HoursSpec;
  readonly closed_on?: readonly ClosedOn[];
  readonly source: RuleSource;
}

export interface RulesFile {
  readonly version: string;
  /** For countries no rule names; a team may set other hours (`default_hours` of the calling settings). */
  readonly default: { readonly id: string; readonly hours: HoursSpec; readonly source: RuleSource };
  readonly countries: readonly CountryRule[];
  /** Stricter rules of states, on top of their country's. */
  readonly states: readonly StateRule[];
}

const ECFR = 'https://www.ecfr.gov/current';

/** A US state's stricter rule; its holidays are the state's (its calendar holds the federal ones too). */
function usState(state: string, hours: HoursSpec, law: string, url: string, closed_on?: ClosedOn[]): StateRule {
  return { id: `US-${state}`, country: 'US', state, hours, ...(closed_on ? { closed_on } : {}), source: { law, url } };
}

export const CALLING_RULES: RulesFile = {
  version: '2026.11.1',
  default: {
    id: 'default',
    hours: { 'mon-fri': '09:00-20:00' },
    source: { law: "dnc's default for countries this file does not name (configurable)", url: 'docs/calling.md' },
  },
  countries: [
    {
      id: 'US',
      // The TSR and the TCPA rules reach the territories, which libphonenumber gives regions of their own.
      countries: ['US', 'PR', 'VI', 'GU', 'MP', 'AS'],
      hours: { 'mon-sun': '08:00-21:00' },
      source: {
        law: 'Telemarketing Sales Rule, 16 CFR 310.4(c); TCPA rules, 47 CFR 64.1200(c)(1)',
        url: `${ECFR}/title-16/chapter-I/subchapter-C/part-310/section-310.4`,
      },
    },
    {
      id: 'CA',
      countries: ['CA'],
      hours: { 'mon-fri': '09:00-21:30', 'sat-sun': '10:00-18:00' },
      source: {
        law: 'CRTC Unsolicited Telecommunications Rules, Part III (Telemarketing Rules)',
        url: 'https://crtc.gc.ca/eng/trules-reglest.htm',
      },
    },
    {
      id: 'AU',
      countries: ['AU'],
      hours: { 'mon-fri': '09:00-20:00', sat: '09:00-17:00' },
      closed_on: ['public_holidays'],
      source: {
        law: 'Telecommunications (Telemarketing and Research Calls) Industry Standard 2017, calling times',
        url: 'https://www.acma.gov.au/telemarketing-calls-and-research-calls',
      },
    },
    {
      id: 'ES',
      countries: ['ES'],
      hours: { 'mon-fri': '09:00-21:00' },
      closed_on: ['public_holidays'],
      source: {
        law: 'Ley General para la Defensa de los Consumidores y Usuarios (RDL 1/2007), art. 96, as amended in 2022',
        url: 'https://www.boe.es/buscar/act.php?id=BOE-A-2007-20555',
      },
    },
    {
      id: 'GB',
      countries: ['GB'],
      hours: { 'mon-fri': '08:00-21:00', 'sat-sun': '09:00-21:00' },
      source: {
        law: 'DMA Code (Data & Marketing Association), telephone marketing',
        url: 'https://dma.org.uk/the-dma-code',
      },
    },
  ],
  states: [
    usState(
      'FL',
      { 'mon-sun': '08:00-20:00' },
      'Fla. Stat. 501.616(6)(a)',
      'https://www.flsenate.gov/Laws/Statutes/2024/501.616',
    ),
    usState(
      'MD',
      { 'mon-sun': '08:00-20:00' },
      'Maryland Stop the Spam Calls Act of 2023, Md. Code, Com. Law title 14, subtitle 45',
      'https://mgaleg.maryland.gov/mgawebsite/Legislation/Details/sb0090?ys=2023RS',
    ),
    usState(
      'CT',
      { 'mon-sun': '09:00-20:00' },
      'Conn. Gen. Stat. 42-288a, as amended by P.A. 23-98',
      'https://www.cga.ct.gov/',
    ),
    usState(
      'NV',
      { 'mon-sun': '09:00-20:00' },
      'Nevada telephone solicitation law (NRS 228)',
      'https://www.leg.state.nv.us/NRS/',
    ),
    usState('KY', { 'mon-sun': '10:00-21:00' }, 'KRS 367.46955(15)', 'https://apps.legislature.ky.gov/law/statutes/'),
    usState(
      'AL',
      { 'mon-sat': '08:00-20:00' },
      'Alabama Public Service Commission telephone solicitation rules (Ala. Admin. Code r. 770-2-19)',
      'https://psc.alabama.gov/',
      ['public_holidays'],
    ),
    usState(
      'LA',
      { 'mon-sat': '08:00-20:00' },
      'Louisiana Telephone Solicitation Relief Act, La. R.S. 45:844.11 et seq.; LPSC rules',
      'https://www.lpsc.louisiana.gov/',
      ['public_holidays'],
    ),
  ],
};
