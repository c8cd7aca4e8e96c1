// The one owner of dnc's stores: the `store` setting picks the local files (SQLite, one person's) or a team's
// PostgreSQL store, and every use case reaches its stores through what this returns (the context holds it).
import { existsSync } from 'node:fs';
import { keptFolder, stateDir } from '../paths.js';
import { accountOf } from './account.js';
import { CheckHistory, historyPath } from './history.js';
import {
  scopeAccount,
  type History,
  type LookupClaims,
  type ResultsCache,
  type StoreScope,
  type TeamAnchors,
  type TeamSuppressionList,
} from './interfaces.js';
import { isPostgresUrl, storeConnection } from './postgres/connection.js';
import { resultsCachePath, SqliteResultsCache } from './results-cache.js';
import type { SharedScrubs } from './shared-scrubs.js';

type Env = Record<string, string | undefined>;

/** The `store` setting as given: --store, DNC_STORE or "store" in the config file; null for the local files. */
export interface StoreSetting {
  url: string | null;
  /** Where it was given, as a user would name it. */
  from: string;
}

/** What `dnc store status` says. */
export interface StoreStatus {
  kind: 'local' | 'postgres';
  where: string;
  /** A team store: where it connects (host, port, database, user), never a password. */
  host?: string;
  port?: number;
  database?: string;
  user?: string;
  schema_version: number | null;
  latest_version: number | null;
  counts: Record<string, number>;
}

/**
 * The stores, whichever the setting names. Callers never ask which implementation they hold: what differs between
 * one person's files and a team's store is said by the members below (claims kept or not, where the list and the
 * history are), so that no use case branches on a kind (test/architecture.test.ts: this interface has none).
 */
export interface Stores {
  /** Where the stores are, as shown to people (a folder, or the URL without its password). */
  readonly where: string;
  /**
   * Whether lookups are claimed before they are sent (`claims` gives claims): a team's store, shared by machines that
   * must never pay twice for one number. The local files are one person's: nothing to arbitrate.
   */
  readonly claimsLookups: boolean;
  /**
   * Where the internal list is when the store holds it (a team store: the team's one list, as shown to people);
   * null when the list is a file of its own (--suppression-list, or the state folder's).
   */
  readonly teamListWhere: string | null;
  /** Where the history is, as messages name it (a file, or the team store), whether or not it exists. */
  historyWhere(): string;
  /** Reachable and at this dnc's schema (migrated when behind); a no-op for the local files. */
  ready(): Promise<void>;
  /** The results cache of a service and account; null when it cannot be kept (no cache folder) or, unless
   * `create`, does not exist yet. */
  resultsCache(scope: StoreScope, options: { create: boolean }): Promise<ResultsCache | null>;
  /**
   * The account a scope's rows are kept under, by the store's place: what a batch records in its journal, so that
   * `dnc listen` (given no key) fills the same cache. Null when no cache can be kept.
   */
  account(scope: StoreScope): Promise<{ place: string; account: string } | null>;
  /** The history of checks and scrubs; null when it cannot be kept or, unless `create`, does not exist yet. */
  history(options: { create: boolean }): Promise<History | null>;
  /** The team's internal list; null for the local store, whose list is a file (--suppression-list). */
  teamList(): Promise<TeamSuppressionList | null>;
  /** The team's anchors of outputs; null for the local store, whose anchors are the state folder's only. */
  teamAnchors(): Promise<TeamAnchors | null>;
  /**
   * Claims for "never paying twice"; null for the local store (one person's: see docs/decisions.md). `origin`: the
   * batch (its journal) the claims are for, whose later runs take over the claims an earlier one left unsettled.
   */
  claims(
    scope: StoreScope,
    claimant: string,
    leaseMs: number,
    origin?: string,
    since?: Date,
  ): Promise<LookupClaims | null>;
  /** The scrubs other runners may help with (`dnc batch --join`); null for the local store. */
  sharedScrubs(scope: StoreScope): Promise<SharedScrubs | null>;
  status(): Promise<StoreStatus>;
  /**
   * `dnc store migrate`: the versions applied; null when there is nothing to migrate on demand (the local files are
   * each migrated when opened, src/stores/local-store.ts).
   */
  migrate(): Promise<number[] | null>;
  close(): Promise<void>;
}

/** The local files under the user's state and cache folders (the default, and nothing changes for one person). */
function localStores(env: Env, homedir: string): Stores {
  const cache = () => keptFolder(env, homedir, 'cache');
  const state = () => keptFolder(env, homedir, 'state');
  return {
    where: state() ?? '(no state folder)',
    claimsLookups: false,
    teamListWhere: null,
    historyWhere: () => historyPath(stateDir(env, homedir)),
    ready: async () => {},
    async resultsCache(scope, { create }) {
      const dir = cache();
      if (dir === null) return null;
      return create ? SqliteResultsCache.open(dir, scope) : SqliteResultsCache.openExisting(dir, scope);
    },
    async account(scope) {
      const dir = cache();
      if (dir === null) return null;
      const c = await SqliteResultsCache.open(dir, scope);
      try {
        return { place: resultsCachePath(dir), account: c.accountId };
      } finally {
        await c.close();
      }
    },
    async history({ create }) {
      const dir = state();
      if (dir === null || (!create && !existsSync(historyPath(dir)))) return null;
      return CheckHistory.open(dir);
    },
    teamList: async () => null,
    teamAnchors: async () => null,
    claims: async () => null,
    sharedScrubs: async () => null,
    async status() {
      return {
        kind: 'local',
        where: state() ?? '(no state folder)',
        schema_version: null,
        latest_version: null,
        counts: {},
      };
    },
    migrate: async () => null,
    close: async () => {},
  };
}

/** A team's PostgreSQL store: one pool, opened at first use; the schema checked before anything else. */
function postgresStores(url: string, env: Env, homedir: string): Stores {
  const connection = storeConnection(url, env, homedir);
  let opening: Promise<import('./postgres/pool.js').StorePool> | null = null;
  const pool = async () => {
    opening ??= import('./postgres/pool.js').then((m) => m.StorePool.open(connection));
    const p = await opening;
    await p.ready();
    return p;
  };
  let salt: Promise<string> | null = null;
  const account = async (scope: StoreScope) => {
    salt ??= pool().then(async (p) => (await p.meta('salt')) ?? '');
    return scopeAccount(scope, await salt, connection.where, accountOf);
  };
  return {
    where: connection.where,
    claimsLookups: true,
    teamListWhere: connection.where,
    historyWhere: () => connection.where,
    ready: async () => void (await pool()),
    async resultsCache(scope) {
      const { PgResultsCache } = await import('./postgres/results-cache.js');
      return new PgResultsCache(await pool(), scope.service, await account(scope));
    },
    account: async (scope) => ({ place: connection.where, account: await account(scope) }),
    async history() {
      const { PgHistory } = await import('./postgres/history.js');
      return new PgHistory(await pool());
    },
    async teamList() {
      const { PgSuppressionList } = await import('./postgres/suppression-list.js');
      return PgSuppressionList.open(await pool());
    },
    async teamAnchors() {
      const { PgTeamAnchors } = await import('./postgres/anchors.js');
      return new PgTeamAnchors(await pool());
    },
    async claims(scope, claimant, leaseMs, origin, since) {
      const { PgLookupClaims } = await import('./postgres/claims.js');
      return PgLookupClaims.open(
        await pool(),
        { service: scope.service, account: await account(scope) },
        claimant,
        leaseMs,
        origin ?? null,
        since,
      );
    },
    async sharedScrubs(scope) {
      const { PgSharedScrubs } = await import('./postgres/shared-scrubs.js');
      return new PgSharedScrubs(await pool(), scope.service, await account(scope));
    },
    async status() {
      const { LATEST_VERSION, SCHEMA } = await import('./postgres/migrations.js');
      const p = await pool();
      const tables = [
        'verdicts',
        'claims',
        'suppressions',
        'exemptions',
        'audit',
        'checks',
        'scrubs',
        'output_anchors',
      ];
      const row = (
        await p.query<Record<string, string>>(
          'counting rows',
          `SELECT ${tables.map((t) => `(SELECT count(*) FROM ${SCHEMA}.${t}) AS ${t}`).join(', ')}`,
        )
      )[0]!;
      return {
        kind: 'postgres',
        where: connection.where,
        ...connection.address,
        schema_version: await p.version(),
        latest_version: LATEST_VERSION,
        counts: Object.fromEntries(tables.map((t) => [t, Number(row[t])])),
      };
    },
    async migrate() {
      opening ??= import('./postgres/pool.js').then((m) => m.StorePool.open(connection));
      return (await opening).migrate();
    },
    async close() {
      if (opening) await (await opening.catch(() => null))?.close();
    },
  };
}

/** Whether a place a store names is the team's store (its URL) rather than a local file. */
export const isTeamStoreUrl = (where: string): boolean => isPostgresUrl(where);

/** The stores the setting names. A setting that is not a PostgreSQL URL is refused (E_STORE_INVALID). */
export async function openStores(setting: StoreSetting, env: Env, homedir: string): Promise<Stores> {
  if (setting.url === null) return localStores(env, homedir);
  if (!isPostgresUrl(setting.url)) {
    const { usageError } = await import('../errors.js');
    throw usageError(
      'E_STORE_INVALID',
      `${setting.from} must be a postgres:// or postgresql:// URL (its value is not shown: it may hold a password)`,
      { hint: 'leave it out to keep the local store (the files in the state and cache folders); see docs/team.md' },
    );
  }
  return postgresStores(setting.url, env, homedir);
}
