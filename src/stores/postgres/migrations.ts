// The team store's schema: ordered, versioned migrations, applied once under an advisory lock however many dnc
// processes start at the same moment; a store migrated by a newer dnc is refused.
import type { ClientBase } from 'pg';
import { DncError, usageError } from '../../errors.js';
import { MEMBER_LEASE_MS } from '../lease.js';
import { LIST_FUNCTIONS } from './list-functions.js';
import { teamFunctions } from './team-functions.js';

/** The schema every table lives in (a team's database may hold other things). */
export const SCHEMA = 'dnc';

/** pg_advisory_lock key of migrations: 'dnc-migr' read as a number. */
const MIGRATION_LOCK = 0x646e632d6d696772n;

/** The advisory lock class (pg_advisory_lock(int, int)'s first key) of members' liveness locks: 'dncm'. */
export const MEMBER_LOCK_CLASS = 0x646e636d;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

// The audit log and the list's anchored heads are append-only for everyone, owner included (a trigger), on top of
// the grants docs/team.md gives a member's role (INSERT and SELECT only).
const APPEND_ONLY = (table: string) => `
CREATE TRIGGER ${table}_append_only BEFORE UPDATE OR DELETE ON ${SCHEMA}.${table}
  FOR EACH ROW EXECUTE FUNCTION ${SCHEMA}.refuse_change();
CREATE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${SCHEMA}.${table}
  FOR EACH STATEMENT EXECUTE FUNCTION ${SCHEMA}.refuse_change();`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'the shared stores: results cache, claims, internal list and audit, history',
    sql: `
CREATE TABLE ${SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO ${SCHEMA}.meta (key, value) VALUES
  ('salt', encode(gen_random_bytes_fallback(), 'hex')),
  ('list_id', gen_random_uuid()::text),
  ('list_name', 'team'),
  ('created_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
CREATE TABLE ${SCHEMA}.verdicts (
  service text NOT NULL, account text NOT NULL, e164 text NOT NULL, country text NOT NULL,
  result text NOT NULL CHECK (result IN ('callable', 'do_not_call')), list_source text,
  checked_at text NOT NULL, checked_ms bigint NOT NULL, correlation_id text NOT NULL, body text,
  PRIMARY KEY (service, account, e164)
);
CREATE INDEX verdicts_by_time ON ${SCHEMA}.verdicts (service, account, checked_ms);
CREATE TABLE ${SCHEMA}.claims (
  service text NOT NULL, account text NOT NULL, e164 text NOT NULL,
  claimant text NOT NULL, claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL,
  state text NOT NULL CHECK (state IN ('sending', 'pending', 'answered', 'unanswered')),
  settled_at timestamptz, correlation_id text, answer jsonb, origin text,
  PRIMARY KEY (service, account, e164)
);
CREATE INDEX claims_by_correlation ON ${SCHEMA}.claims (correlation_id) WHERE correlation_id IS NOT NULL;
CREATE TABLE ${SCHEMA}.suppressions (
  e164 text PRIMARY KEY, country text, added_at text NOT NULL, who text NOT NULL, reason text, source text
);
CREATE TABLE ${SCHEMA}.exemptions (
  e164 text PRIMARY KEY, country text,
  basis text NOT NULL CHECK (basis IN ('consent', 'ebr-purchase', 'ebr-inquiry')),
  until text NOT NULL, evidence text, added_at text NOT NULL, who text NOT NULL
);
CREATE TABLE ${SCHEMA}.audit (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at text NOT NULL,
  action text NOT NULL CHECK (action IN ('suppress', 'unsuppress', 'exempt', 'unexempt', 'restore')),
  e164 text NOT NULL, who text NOT NULL, reason text, source text, basis text, until text, evidence text,
  hash text NOT NULL
);
CREATE INDEX audit_by_number ON ${SCHEMA}.audit (e164, id);
CREATE INDEX audit_by_hash ON ${SCHEMA}.audit (hash);
CREATE TABLE ${SCHEMA}.list_heads (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(),
  head text, entries bigint NOT NULL, who text NOT NULL
);
CREATE FUNCTION ${SCHEMA}.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the % table is append-only', TG_TABLE_NAME; END $$;
${APPEND_ONLY('audit')}
${APPEND_ONLY('list_heads')}
CREATE TABLE ${SCHEMA}.checks (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, correlation_id text NOT NULL, phone_number text NOT NULL,
  country text, requested_at text NOT NULL, answered_at text NOT NULL, service text NOT NULL, http_status integer,
  kind text NOT NULL, credits bigint NOT NULL, body text NOT NULL, webhook_url text
);
CREATE INDEX checks_correlation ON ${SCHEMA}.checks (correlation_id);
CREATE INDEX checks_by_time ON ${SCHEMA}.checks (service, requested_at);
CREATE INDEX checks_by_number ON ${SCHEMA}.checks (phone_number);
CREATE TABLE ${SCHEMA}.scrubs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, finished_at text NOT NULL, operator text NOT NULL,
  seller text, san text, campaign text, output text NOT NULL, host text NOT NULL, rows bigint NOT NULL,
  callable bigint NOT NULL, credits bigint NOT NULL, service text NOT NULL, list_id text, list_head text
);`,
  },
  {
    version: 2,
    name: 'claims reserved before they are sent; members alive by heartbeat and advisory lock',
    // A member's row says until when its heartbeat holds (alive_until) and which advisory lock its session holds
    // (MEMBER_LOCK_CLASS, lock_key): a member whose lock is gone (its process died) or whose heartbeat ran out is
    // reaped by any other (its reserved claims deleted, its sending claims made unanswered). Every member writes
    // its own row: granted to PUBLIC so that a team's existing member role needs no new grant (the database's
    // CONNECT and the schema's USAGE still say who is a member).
    sql: `
ALTER TABLE ${SCHEMA}.claims DROP CONSTRAINT claims_state_check;
ALTER TABLE ${SCHEMA}.claims ADD CONSTRAINT claims_state_check
  CHECK (state IN ('reserved', 'sending', 'pending', 'answered', 'unanswered'));
CREATE INDEX claims_by_claimant ON ${SCHEMA}.claims (claimant) WHERE state IN ('reserved', 'sending');
CREATE TABLE ${SCHEMA}.members (
  claimant text PRIMARY KEY, lock_key integer NOT NULL UNIQUE, started_at timestamptz NOT NULL DEFAULT now(),
  alive_until timestamptz NOT NULL
);
GRANT SELECT, INSERT, UPDATE, DELETE ON ${SCHEMA}.members TO PUBLIC;`,
  },
  {
    version: 3,
    name: "outputs' and manifests' anchors, with the list head each scrub used, for every member to verify",
    // One row per version of an output dnc wrote (a batch's, each rewrite of `dnc listen`), found by the run id its
    // manifest carries. Add-only: a row is never updated or deleted (the trigger, for the owner too; members get
    // INSERT and SELECT only), the same content anchored again keeps its first row (the unique key), and who and
    // when are the server's (session_user, now()), whatever an INSERT says.
    sql: `
CREATE TABLE ${SCHEMA}.output_anchors (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id text NOT NULL CHECK (run_id ~ '^[0-9a-f]{32}$'),
  output_sha256 text NOT NULL CHECK (output_sha256 ~ '^[0-9a-f]{64}$'),
  output_bytes bigint NOT NULL,
  manifest_sha256 text NOT NULL CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
  output_path text NOT NULL, journal text NOT NULL, host text NOT NULL, operator text NOT NULL,
  list_id text, list_head text, list_entries bigint,
  who text NOT NULL, at timestamptz NOT NULL,
  UNIQUE (run_id, output_sha256, manifest_sha256)
);
CREATE INDEX output_anchors_by_sha ON ${SCHEMA}.output_anchors (output_sha256);
CREATE FUNCTION ${SCHEMA}.stamp_anchor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.who := session_user; NEW.at := clock_timestamp(); RETURN NEW; END $$;
CREATE TRIGGER output_anchors_stamp BEFORE INSERT ON ${SCHEMA}.output_anchors
  FOR EACH ROW EXECUTE FUNCTION ${SCHEMA}.stamp_anchor();
${APPEND_ONLY('output_anchors')}
-- The roles that could append to the list's log (the members of docs/team.md up to schema 2) may anchor and read
-- anchors: an existing team needs no DBA step before its members' files are proven.
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT DISTINCT a.grantee
      FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
     WHERE c.oid = '${SCHEMA}.audit'::regclass AND a.grantee <> c.relowner AND a.privilege_type = 'INSERT'
  LOOP
    EXECUTE format('GRANT SELECT, INSERT ON ${SCHEMA}.output_anchors TO %s',
      CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END);
  END LOOP;
END $$;`,
  },
  {
    version: 4,
    name: "the internal list changed only through the owner's functions; the chain hashes every stored column",
    sql: LIST_FUNCTIONS,
  },
  {
    version: 5,
    name: 'shared scrubs: the numbers of a running batch that other runners may look up (dnc batch --join)',
    // The owner of a scrub lists the numbers it will send (shared_numbers, with the validity window it reuses a
    // colleague's verdict within); a runner that joins takes untaken ones from the end (taken_by, SKIP LOCKED among
    // joiners) and claims them as any member does: the claims stay the only arbiter of who pays. Versions 3 and 4
    // are other work of the same day. Granted to PUBLIC as members is (a team's member role needs no new grant).
    sql: `
CREATE TABLE ${SCHEMA}.shared_scrubs (
  id text PRIMARY KEY, service text NOT NULL, account text NOT NULL, owner text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
  state text NOT NULL CHECK (state IN ('running', 'done', 'stopped')),
  listed boolean NOT NULL DEFAULT false, numbers bigint NOT NULL DEFAULT 0
);
CREATE TABLE ${SCHEMA}.shared_numbers (
  scrub text NOT NULL REFERENCES ${SCHEMA}.shared_scrubs (id) ON DELETE CASCADE, seq bigint NOT NULL,
  e164 text NOT NULL, country text NOT NULL, window_ms float8, taken_by text,
  PRIMARY KEY (scrub, seq)
);
CREATE INDEX shared_numbers_untaken ON ${SCHEMA}.shared_numbers (scrub, seq) WHERE taken_by IS NULL;
GRANT SELECT, INSERT, UPDATE, DELETE ON ${SCHEMA}.shared_scrubs TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON ${SCHEMA}.shared_numbers TO PUBLIC;`,
  },
  {
    version: 6,
    name: "verdicts, claims, members and shared scrubs written only through the owner's functions, stamped by role",
    sql: teamFunctions(MEMBER_LEASE_MS, MEMBER_LOCK_CLASS),
  },
];

/** The newest schema this dnc knows. */
export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The version the store's schema is at: 0 when it has none yet. */
export async function schemaVersion(client: ClientBase): Promise<number> {
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('${SCHEMA}.schema_migrations') AS t`);
  if (exists.rows[0]?.t === null) return 0;
  const r = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${SCHEMA}.schema_migrations`);
  return r.rows[0]?.v ?? 0;
}

export function tooNew(where: string, version: number): DncError {
  return usageError(
    'E_STORE_TOO_NEW',
    `the team store ${where} is at schema version ${version}, newer than this dnc knows (${LATEST_VERSION})`,
    { hint: 'upgrade dnc on this machine (every member of the team uses the same version or newer)' },
  );
}

/**
 * Brings the schema to LATEST_VERSION: each missing migration in a transaction of its own, under a session advisory
 * lock, so ten processes starting at once apply each exactly once (the others wait, then find nothing to do).
 * Returns the versions applied.
 */
export async function migrate(client: ClientBase, where: string): Promise<number[]> {
  const applied: number[] = [];
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA}.schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const current = await schemaVersion(client);
    if (current > LATEST_VERSION) throw tooNew(where, current);
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await client.query('BEGIN');
      try {
        // pgcrypto is not assumed: the salt comes from two random UUIDs (gen_random_uuid is core from 13 on).
        await client.query(
          `CREATE OR REPLACE FUNCTION pg_temp.gen_random_bytes_fallback() RETURNS bytea LANGUAGE sql AS
           $$ SELECT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex') $$`,
        );
        await client.query(m.sql.replaceAll('gen_random_bytes_fallback()', 'pg_temp.gen_random_bytes_fallback()'));
        await client.query(`INSERT INTO ${SCHEMA}.schema_migrations (version, name) VALUES ($1, $2)`, [
          m.version,
          m.name,
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
      applied.push(m.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => {});
  }
  return applied;
}
