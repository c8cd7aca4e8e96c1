// `dnc trace`'s use case: the argument read as a correlation id or a number, the journals and check history to search
// gathered, and every lookup found there returned (or a typed error when none is).
import { existsSync } from 'node:fs';
import { parseCountryOption } from '../config.js';
import { inputError, usageError } from '../errors.js';
import { stateDir } from '../paths.js';
import { normalizePhone } from '../phone/normalize.js';
import type { Stores } from '../stores/owner.js';
import { registeredJournals } from '../stores/registry.js';
import { traceLookup, type LookupQuery, type TracedLookup } from './trace.js';

export interface TraceOptions {
  /** The argument as given (trimmed): a correlation id or a phone number. */
  given: string;
  /** --journal, resolved: journals, or outputs whose journal sits beside them. */
  journals: string[];
  /** --country, for a number in national format. */
  country?: string | undefined;
}

export interface TraceDeps {
  env: Record<string, string | undefined>;
  homedir: string;
  stores(): Promise<Stores>;
}

export interface TraceResult {
  query: LookupQuery;
  found: TracedLookup[];
}

/** A correlation id as the service gives them (interface 2.1: "string (UUID form)"). */
const CORRELATION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A correlation id, or a phone number read as `dnc check` reads one; a usage error for anything else. */
async function queryOf(given: string, country: string | undefined): Promise<LookupQuery> {
  if (CORRELATION_ID.test(given)) return { correlationId: given };
  const phone = normalizePhone(given, { defaultCountry: await parseCountryOption(country), validate: false });
  if (phone.ok) return { e164: phone.e164 };
  // Validated as what it is: a mistyped id or number is a usage error, not a search that finds nothing.
  throw usageError(
    'E_USAGE',
    `'${given}' is neither a correlation id (a UUID: 8-4-4-4-12 hex digits) nor a phone number: ${phone.message}`,
    {
      hint:
        'copy the id from the dnc_correlation_id column or from what `dnc check` printed; give a number in ' +
        'E.164 (+12025550123), or national with --country',
    },
  );
}

/** Every lookup of the id or number in the check history, the registered journals and those given. */
export async function runTrace(options: TraceOptions, deps: TraceDeps): Promise<TraceResult> {
  const query = await queryOf(options.given, options.country);
  const id = 'correlationId' in query ? query.correlationId : query.e164;
  const dir = stateDir(deps.env, deps.homedir);
  const journals = options.journals.map((j) =>
    j.endsWith('.csv') || !existsSync(j) ? (existsSync(`${j}.journal.sqlite`) ? `${j}.journal.sqlite` : j) : j,
  );
  for (const r of await registeredJournals(dir)) if (!journals.includes(r.journal)) journals.push(r.journal);
  const stores = await deps.stores();
  const historyFile = stores.historyWhere();
  const history = await stores.history({ create: false });
  let found: TracedLookup[];
  try {
    found = await traceLookup(query, { history, historyFile, journals });
  } finally {
    await history?.close();
  }
  if (found.length === 0) {
    throw inputError(
      'E_TRACE_NOT_FOUND',
      `no record of ${'e164' in query ? 'the number' : 'correlation id'} ${id} on this machine (searched the check ` +
        `history and ${journals.length} ` +
        `journal(s))`,
      {
        hint:
          'give the batch journal with --journal PATH (OUTPUT.csv.journal.sqlite), or run trace on the ' +
          'machine that made the lookup',
      },
    );
  }
  return { query, found };
}
