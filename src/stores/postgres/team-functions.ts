// PostgreSQL migration 6: verdicts, claims, members and shared scrubs written only through functions the owner's role
// owns (SECURITY DEFINER, as list-functions.ts does for the list). A member's role keeps SELECT on the tables and
// EXECUTE on the functions: a verdict is added, never updated or deleted (a new lookup adds a row), and every verdict
// and claim carries the role the server authenticated (session_user) and the server's time, so a member can forge
// a verdict only under its own role's name. Members, claims and scrubs are changed by their own role only.

import { ownedBy, writesTakenBack } from './definer.js';

/** The schema (migrations.ts's SCHEMA; spelt here, as that module imports this one). */
const S = 'dnc';

/** The functions a member's role runs (granted as list_change is: to the roles that could write claims). */
export const TEAM_FUNCTION_SIGNATURES = [
  `${S}.put_verdicts(text, text, text[], text[], text[], text[], text[], bigint[], text[], text[])`,
  `${S}.withdraw_verdicts(text, text, text[])`,
  `${S}.claim_numbers(text, text, text[], text, float8, timestamptz, boolean, text, float8[], text)`,
  `${S}.claims_sending(text, text, text, text[], float8)`,
  `${S}.claims_settle(text, text, text, text[], text[], jsonb[], text[], float8)`,
  `${S}.claims_settle_origin(text, text, text, text[], jsonb[])`,
  `${S}.claims_release(text)`,
  `${S}.settle_pushes(text, text, text[], jsonb[])`,
  `${S}.member_enrol(text, integer, float8)`,
  `${S}.member_beat(text, float8)`,
  `${S}.member_leave(text)`,
  `${S}.reap_members()`,
  `${S}.scrub_start(text, text, text, text)`,
  `${S}.scrub_list(text, text[], text[], float8[], boolean)`,
  `${S}.scrub_end(text, text)`,
  `${S}.scrub_take(text, timestamptz, text, integer, text, text)`,
] as const;

/** The tables only these functions write (the owner's role, and a superuser, still can). */
const TABLES = [`verdicts`, `claims`, `members`, `shared_scrubs`, `shared_numbers`].map((t) => `${S}.${t}`);

/** Every function runs as its owner, its search path pinned, so that no object of the caller's can stand in. */
const DEFINER = `SECURITY DEFINER SET search_path = ${S}, pg_catalog, pg_temp`;

/**
 * The members that are gone: their heartbeat ran out, or their session's advisory lock is no longer held. A server
 * restart ends every session and its locks: a member that has not beaten since the server started (its lease was
 * renewed before then) is waiting to reconnect, and is gone only when its lease runs out. $1: the member lease (ms).
 */
const DEAD = (leaseMs: string, lockClass: string) => `
SELECT m.claimant FROM ${S}.members m
 WHERE m.alive_until < now()
    OR (m.alive_until >= pg_postmaster_start_time() + ${leaseMs} * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM pg_locks l
                         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND l.classid = ${lockClass}::oid AND l.objid = m.lock_key::oid))`;

/**
 * The latest verdict of claim `c`'s number written since its lookup was sent, as a SharedAnswer (jsonb), for a claim
 * still `sending` or found `unanswered`: its answer reached the store (the member's rerun settled what its journal
 * kept while the store was away), though the claim did not say so.
 */
export function answerSince(c: string, service: string, account: string): string {
  return `(SELECT jsonb_build_object('result', v.result, 'doNotCall', v.result = 'do_not_call',
    'listSource', v.list_source, 'checkedAt', v.checked_at, 'correlationId', v.correlation_id, 'errorCode', NULL,
    'error', NULL, 'httpStatus', NULL, 'body', v.body, 'who', v.who)
   FROM (SELECT l.* FROM ${S}.verdicts l WHERE l.service = ${service} AND l.account = ${account} AND l.e164 = ${c}.e164
          ORDER BY l.checked_ms DESC, l.id DESC LIMIT 1) v
  WHERE ${c}.state IN ('sending', 'unanswered') AND v.result <> 'withdrawn'
    AND v.checked_ms >= extract(epoch FROM ${c}.claimed_at) * 1000 - 60000)`;
}

/** Verdicts added, never changed; the stamps of claims, members and scrubs. */
const VERDICTS = `
-- Verdicts: added, never changed (for the owner too); the latest checked of a number is its verdict, unless a later
-- 'withdrawn' row (its webhook pushes conflicted) says there is none. Rows written before schema 6 name no role.
ALTER TABLE ${S}.verdicts DROP CONSTRAINT verdicts_pkey;
ALTER TABLE ${S}.verdicts DROP CONSTRAINT verdicts_result_check;
ALTER TABLE ${S}.verdicts ADD CONSTRAINT verdicts_result_check
  CHECK (result IN ('callable', 'do_not_call', 'withdrawn'));
ALTER TABLE ${S}.verdicts ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  ADD COLUMN who text, ADD COLUMN at timestamptz;
ALTER TABLE ${S}.verdicts ADD CONSTRAINT verdicts_once UNIQUE (service, account, e164, correlation_id);
CREATE INDEX verdicts_latest ON ${S}.verdicts (service, account, e164, checked_ms DESC, id DESC);
CREATE TRIGGER verdicts_append_only BEFORE UPDATE OR DELETE ON ${S}.verdicts
  FOR EACH ROW EXECUTE FUNCTION ${S}.refuse_change();
CREATE TRIGGER verdicts_no_truncate BEFORE TRUNCATE ON ${S}.verdicts
  FOR EACH STATEMENT EXECUTE FUNCTION ${S}.refuse_change();

-- Who holds (or settled) a claim, member rows and scrubs: the role the server authenticated.
ALTER TABLE ${S}.claims ADD COLUMN who text;
ALTER TABLE ${S}.members ADD COLUMN role text NOT NULL DEFAULT session_user;
ALTER TABLE ${S}.shared_scrubs ADD COLUMN role text NOT NULL DEFAULT session_user;

-- Verdicts as parallel arrays: the same lookup's verdict twice is kept once (a settlement run again).
CREATE FUNCTION ${S}.put_verdicts(p_service text, p_account text, p_e164 text[], p_country text[], p_result text[],
  p_list_source text[], p_checked_at text[], p_checked_ms bigint[], p_correlation_id text[], p_body text[])
RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH put AS (
    INSERT INTO ${S}.verdicts AS v (service, account, e164, country, result, list_source, checked_at, checked_ms,
      correlation_id, body, who, at)
    SELECT p_service, p_account, t.e164, t.country, t.result, t.list_source, t.checked_at, t.checked_ms,
           t.correlation_id, t.body, session_user, clock_timestamp()
      FROM unnest(p_e164, p_country, p_result, p_list_source, p_checked_at, p_checked_ms, p_correlation_id, p_body)
           AS t(e164, country, result, list_source, checked_at, checked_ms, correlation_id, body)
     WHERE t.result IN ('callable', 'do_not_call') AND coalesce(t.correlation_id, '') <> ''
     ORDER BY t.e164
    ON CONFLICT ON CONSTRAINT verdicts_once DO NOTHING
    RETURNING 1)
  SELECT count(*)::integer FROM put
$$;

-- No verdict for these numbers any more (two pushes of one lookup disagreed): a row that says so, after the latest.
CREATE FUNCTION ${S}.withdraw_verdicts(p_service text, p_account text, p_e164 text[])
RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH latest AS (
    SELECT DISTINCT ON (v.e164) v.e164, v.country, v.checked_at, v.checked_ms, v.result FROM ${S}.verdicts v
     WHERE v.service = p_service AND v.account = p_account AND v.e164 = ANY(p_e164)
     ORDER BY v.e164, v.checked_ms DESC, v.id DESC
  ), put AS (
    INSERT INTO ${S}.verdicts (service, account, e164, country, result, list_source, checked_at, checked_ms,
      correlation_id, body, who, at)
    SELECT p_service, p_account, l.e164, l.country, 'withdrawn', NULL, l.checked_at, l.checked_ms,
           'withdrawn ' || gen_random_uuid()::text, NULL, session_user, clock_timestamp()
      FROM latest l WHERE l.result <> 'withdrawn' ORDER BY l.e164
    RETURNING 1)
  SELECT count(*)::integer FROM put
$$;

`;

/** Claims taken, marked, settled and let go by the caller's role. */
const CLAIMS = `
-- The claim of src/stores/postgres/claims.ts (CLAIM's comment says when an old claim no longer stands), each row
-- it takes stamped with the caller's role.
CREATE FUNCTION ${S}.claim_numbers(p_service text, p_account text, p_e164 text[], p_claimant text, p_lease_ms float8,
  p_since timestamptz, p_take_over boolean, p_origin text, p_window_ms float8[], p_state text)
RETURNS TABLE (e164 text, state text, claimant text, claimed_at timestamptz, expired boolean, correlation_id text,
  answer jsonb, who text, verdict jsonb)
LANGUAGE plpgsql ${DEFINER} AS $$
#variable_conflict use_column
BEGIN
  IF p_state NOT IN ('reserved', 'sending') THEN
    RAISE EXCEPTION 'a claim is reserved or sending, not %', p_state USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
  WITH wanted AS (
    SELECT w.e164, max(w.window_ms) AS window_ms FROM unnest(p_e164, p_window_ms) AS w(e164, window_ms)
     GROUP BY w.e164
  ),
  opted AS (SELECT s.e164, s.added_at FROM ${S}.suppressions s JOIN wanted w ON w.e164 = s.e164),
  taken AS (
    INSERT INTO ${S}.claims AS c (service, account, e164, claimant, claimed_at, expires_at, state, origin, who)
    SELECT p_service, p_account, w.e164, p_claimant, now(), now() + p_lease_ms * interval '1 millisecond', p_state,
           p_origin, session_user
      FROM wanted w WHERE w.e164 NOT IN (SELECT o.e164 FROM opted o)
     ORDER BY w.e164
    ON CONFLICT ON CONSTRAINT claims_pkey DO UPDATE SET claimant = excluded.claimant,
      claimed_at = excluded.claimed_at, expires_at = excluded.expires_at, state = excluded.state, settled_at = NULL,
      correlation_id = NULL, answer = NULL, origin = excluded.origin, who = excluded.who
    WHERE (c.state IN ('answered', 'unanswered') AND c.settled_at < coalesce(
            now() - (SELECT w.window_ms FROM wanted w WHERE w.e164 = excluded.e164) * interval '1 millisecond',
            p_since - p_lease_ms * interval '1 millisecond'))
       OR (c.state = 'answered' AND coalesce(c.answer->>'result', '') NOT IN ('callable', 'do_not_call', 'invalid'))
       OR (p_take_over AND c.state = 'unanswered')
       OR (c.state IN ('reserved', 'sending', 'pending') AND c.expires_at < p_since
           AND NOT EXISTS (SELECT 1 FROM ${S}.members m WHERE m.claimant = c.claimant))
       OR (p_take_over AND c.state = 'sending' AND c.expires_at < now())
       OR (c.state IN ('reserved', 'sending') AND c.origin = p_origin AND c.who IS NOT DISTINCT FROM session_user)
    RETURNING c.e164
  )
  SELECT t.e164, 'claimed'::text, ''::text, now(), false, NULL::text, NULL::jsonb, session_user::text, NULL::jsonb
    FROM taken t
  UNION ALL
  SELECT o.e164, 'suppressed', (SELECT m.value FROM ${S}.meta m WHERE m.key = 'list_name'), now(), false,
         o.added_at, NULL, NULL, NULL
    FROM opted o
  UNION ALL
  SELECT c.e164, c.state, c.claimant, c.claimed_at, c.expires_at < now(), c.correlation_id, c.answer, c.who,
         ${answerSince('c', 'p_service', 'p_account')}
    FROM ${S}.claims c JOIN wanted w ON w.e164 = c.e164
   WHERE c.service = p_service AND c.account = p_account AND c.e164 NOT IN (SELECT t.e164 FROM taken t)
     AND c.e164 NOT IN (SELECT o.e164 FROM opted o);
END $$;

-- The caller's reserved claims whose requests leave now (its sending ones count as marked: run again, idempotent).
CREATE FUNCTION ${S}.claims_sending(p_service text, p_account text, p_claimant text, p_e164 text[], p_lease_ms float8)
RETURNS SETOF text LANGUAGE sql ${DEFINER} AS $$
  WITH mine AS (
    SELECT c.e164 FROM ${S}.claims c
     WHERE c.service = p_service AND c.account = p_account AND c.claimant = p_claimant AND c.who = session_user
       AND c.state IN ('reserved', 'sending') AND c.e164 = ANY(p_e164)
     ORDER BY c.e164 FOR UPDATE
  )
  UPDATE ${S}.claims c SET state = 'sending', claimed_at = now(),
         expires_at = now() + p_lease_ms * interval '1 millisecond'
    FROM mine WHERE c.service = p_service AND c.account = p_account AND c.e164 = mine.e164
  RETURNING c.e164
$$;

-- How the caller's lookups ended, by number: kind answered (the answer), pending (its correlation id, held for
-- p_pending_ms), unanswered, or released (never sent: the claim goes). Its rows are locked first, in key order.
CREATE FUNCTION ${S}.claims_settle(p_service text, p_account text, p_claimant text, p_e164 text[], p_kind text[],
  p_answer jsonb[], p_correlation_id text[], p_pending_ms float8)
RETURNS integer LANGUAGE plpgsql ${DEFINER} AS $$
DECLARE
  v_count integer;
BEGIN
  PERFORM 1 FROM ${S}.claims c
    WHERE c.service = p_service AND c.account = p_account AND c.claimant = p_claimant AND c.who = session_user
      AND c.e164 = ANY(p_e164)
    ORDER BY c.e164 FOR UPDATE;
  UPDATE ${S}.claims c SET state = t.kind, settled_at = now(),
         answer = CASE WHEN t.kind = 'answered' THEN t.answer ELSE c.answer END,
         correlation_id = CASE WHEN t.kind = 'answered' THEN t.answer->>'correlationId'
                               WHEN t.kind = 'pending' THEN t.correlation_id ELSE c.correlation_id END,
         expires_at = CASE WHEN t.kind = 'pending' THEN now() + p_pending_ms * interval '1 millisecond'
                           ELSE c.expires_at END
    FROM unnest(p_e164, p_kind, p_answer, p_correlation_id) AS t(e164, kind, answer, correlation_id)
   WHERE t.kind IN ('answered', 'pending', 'unanswered') AND c.service = p_service AND c.account = p_account
     AND c.claimant = p_claimant AND c.who = session_user AND c.e164 = t.e164;
  GET DIAGNOSTICS v_count = ROW_COUNT;
  DELETE FROM ${S}.claims c USING unnest(p_e164, p_kind) AS t(e164, kind)
   WHERE t.kind = 'released' AND c.service = p_service AND c.account = p_account AND c.claimant = p_claimant
     AND c.who = session_user AND c.e164 = t.e164;
  RETURN v_count;
END $$;

-- Answers an earlier run of the same batch (p_origin) received but could not settle (the store was away, or it was
-- killed before its settlement went): its claims of these numbers, still sending or made unanswered by the reaper,
-- are settled with them. The caller's role only: a batch's reruns are its own.
CREATE FUNCTION ${S}.claims_settle_origin(p_service text, p_account text, p_origin text, p_e164 text[],
  p_answer jsonb[])
RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH earlier AS (
    SELECT c.e164 FROM ${S}.claims c
     WHERE c.service = p_service AND c.account = p_account AND c.origin = p_origin AND c.who = session_user
       AND c.state IN ('sending', 'unanswered') AND c.e164 = ANY(p_e164)
     ORDER BY c.e164 FOR UPDATE
  ), settled AS (
    UPDATE ${S}.claims c SET state = 'answered', settled_at = now(), answer = t.answer,
           correlation_id = t.answer->>'correlationId'
      FROM earlier e JOIN unnest(p_e164, p_answer) AS t(e164, answer) ON t.e164 = e.e164
     WHERE c.service = p_service AND c.account = p_account AND c.e164 = e.e164
    RETURNING 1)
  SELECT count(*)::integer FROM settled
$$;

-- The caller's claims never sent, let go as it leaves.
CREATE FUNCTION ${S}.claims_release(p_claimant text) RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH gone AS (
    DELETE FROM ${S}.claims c WHERE c.claimant = p_claimant AND c.who = session_user AND c.state = 'reserved'
    RETURNING 1)
  SELECT count(*)::integer FROM gone
$$;

-- Answers pushed for webhook lookups (dnc listen), by correlation id: the pending claims settled, stamped with the
-- listener's role (the verdicts go through put_verdicts in the same transaction).
CREATE FUNCTION ${S}.settle_pushes(p_service text, p_account text, p_correlation_id text[], p_answer jsonb[])
RETURNS integer LANGUAGE plpgsql ${DEFINER} AS $$
DECLARE
  v_count integer;
BEGIN
  PERFORM 1 FROM ${S}.claims c
    WHERE c.service = p_service AND c.account = p_account AND c.correlation_id = ANY(p_correlation_id)
    ORDER BY c.e164 FOR UPDATE;
  UPDATE ${S}.claims c SET state = 'answered', settled_at = now(), answer = t.answer, who = session_user
    FROM unnest(p_correlation_id, p_answer) AS t(id, answer)
   WHERE c.service = p_service AND c.account = p_account AND c.correlation_id = t.id
     AND c.state IN ('pending', 'answered');
  GET DIAGNOSTICS v_count = ROW_COUNT;
  RETURN v_count;
END $$;

`;

/** Members' rows and the reaper: who is dead is the server's to say (locks held, leases). */
function memberFunctions(memberLeaseMs: number, memberLockClass: number): string {
  return `
-- A member's row, naming the advisory lock its own session holds (checked here: no row names a lock it lacks).
CREATE FUNCTION ${S}.member_enrol(p_claimant text, p_lock_key integer, p_lease_ms float8)
RETURNS boolean LANGUAGE plpgsql ${DEFINER} AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'advisory' AND l.granted AND l.pid = pg_backend_pid() AND l.objsubid = 2
                    AND l.classid = ${memberLockClass}::oid AND l.objid = p_lock_key::oid) THEN
    RAISE EXCEPTION 'this session does not hold member lock %', p_lock_key USING ERRCODE = '55000';
  END IF;
  INSERT INTO ${S}.members AS m (claimant, lock_key, alive_until, role)
    VALUES (p_claimant, p_lock_key, now() + p_lease_ms * interval '1 millisecond', session_user)
    ON CONFLICT (claimant) DO UPDATE SET lock_key = excluded.lock_key, alive_until = excluded.alive_until
    WHERE m.role = session_user;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'member % is another role''s', p_claimant USING ERRCODE = '42501';
  END IF;
  RETURN true;
END $$;

-- The caller's heartbeat: its own row's lease renewed (0 rows: it was reaped meanwhile).
CREATE FUNCTION ${S}.member_beat(p_claimant text, p_lease_ms float8) RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH beat AS (
    UPDATE ${S}.members m SET alive_until = now() + p_lease_ms * interval '1 millisecond'
     WHERE m.claimant = p_claimant AND m.role = session_user
    RETURNING 1)
  SELECT count(*)::integer FROM beat
$$;

CREATE FUNCTION ${S}.member_leave(p_claimant text) RETURNS integer LANGUAGE sql ${DEFINER} AS $$
  WITH gone AS (DELETE FROM ${S}.members m WHERE m.claimant = p_claimant AND m.role = session_user RETURNING 1)
  SELECT count(*)::integer FROM gone
$$;

-- Reaps the dead members' claims in one statement (any member may: who is dead is the server's to say): taken in key
-- order, those another statement holds skipped (the next reap takes them). A dead member's row goes with its last
-- claim in flight.
CREATE FUNCTION ${S}.reap_members() RETURNS TABLE (freed integer, lost integer, gone integer)
LANGUAGE sql ${DEFINER} AS $$
  WITH dead AS (${DEAD(String(memberLeaseMs), String(memberLockClass))}),
  victims AS (
    SELECT c.service, c.account, c.e164, c.state FROM ${S}.claims c
     WHERE c.claimant IN (SELECT d.claimant FROM dead d) AND c.state IN ('reserved', 'sending')
     ORDER BY c.service, c.account, c.e164 FOR UPDATE SKIP LOCKED
  ),
  freed AS (
    DELETE FROM ${S}.claims c USING victims v
     WHERE v.state = 'reserved' AND c.service = v.service AND c.account = v.account AND c.e164 = v.e164
    RETURNING 1
  ),
  lost AS (
    UPDATE ${S}.claims c SET state = 'unanswered', settled_at = now() FROM victims v
     WHERE v.state = 'sending' AND c.service = v.service AND c.account = v.account AND c.e164 = v.e164
    RETURNING 1
  ),
  gone AS (
    DELETE FROM ${S}.members m WHERE m.claimant IN (SELECT d.claimant FROM dead d)
       AND NOT EXISTS (SELECT 1 FROM ${S}.claims c
                        WHERE c.claimant = m.claimant AND c.state IN ('reserved', 'sending')
                          AND NOT EXISTS (SELECT 1 FROM victims v
                                           WHERE v.service = c.service AND v.account = c.account
                                             AND v.e164 = c.e164))
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM freed)::integer, (SELECT count(*) FROM lost)::integer,
         (SELECT count(*) FROM gone)::integer
$$;

`;
}

/** Shared scrubs: listed and ended by their owner's role, taken by any joiner. */
const SCRUBS = `
-- A shared scrub, its owner's role stamped; scrubs whose owner was killed (never ended) are stopped, their numbers
-- dropped: of no use to anyone now.
CREATE FUNCTION ${S}.scrub_start(p_id text, p_service text, p_account text, p_owner text)
RETURNS void LANGUAGE plpgsql ${DEFINER} AS $$
BEGIN
  INSERT INTO ${S}.shared_scrubs (id, service, account, owner, state, role)
    VALUES (p_id, p_service, p_account, p_owner, 'running', session_user);
  UPDATE ${S}.shared_scrubs s SET state = 'stopped', updated_at = now()
   WHERE s.state = 'running' AND s.started_at < now() - interval '1 minute'
     AND NOT EXISTS (SELECT 1 FROM ${S}.members m WHERE m.claimant = s.owner);
  DELETE FROM ${S}.shared_numbers n USING ${S}.shared_scrubs s WHERE n.scrub = s.id AND s.state <> 'running';
END $$;

-- A page of the caller's own scrub's numbers, after those listed; p_last: the list is complete.
CREATE FUNCTION ${S}.scrub_list(p_id text, p_e164 text[], p_country text[], p_window_ms float8[], p_last boolean)
RETURNS void LANGUAGE plpgsql ${DEFINER} AS $$
DECLARE
  v_end bigint;
  v_n integer := coalesce(array_length(p_e164, 1), 0);
BEGIN
  UPDATE ${S}.shared_scrubs s SET numbers = s.numbers + v_n, listed = p_last, updated_at = now()
   WHERE s.id = p_id AND s.role = session_user
  RETURNING s.numbers INTO v_end;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'scrub % is not this role''s', p_id USING ERRCODE = '42501';
  END IF;
  INSERT INTO ${S}.shared_numbers (scrub, seq, e164, country, window_ms)
    SELECT p_id, v_end - v_n + t.n, t.e164, t.country, t.w
      FROM unnest(p_e164, p_country, p_window_ms) WITH ORDINALITY AS t(e164, country, w, n);
END $$;

CREATE FUNCTION ${S}.scrub_end(p_id text, p_state text) RETURNS void LANGUAGE plpgsql ${DEFINER} AS $$
#variable_conflict use_column
BEGIN
  IF p_state NOT IN ('done', 'stopped') THEN
    RAISE EXCEPTION 'a scrub ends done or stopped, not %', p_state USING ERRCODE = '22023';
  END IF;
  UPDATE ${S}.shared_scrubs s SET state = p_state, updated_at = now() WHERE s.id = p_id AND s.role = session_user;
  IF FOUND THEN
    DELETE FROM ${S}.shared_numbers n WHERE n.scrub = p_id;
  END IF;
END $$;

-- Numbers for a joiner, from the end of the list: untaken by another joiner (SKIP LOCKED: two joiners asking at once
-- take different ones). All are marked taken; those claimed by anyone now, or settled since the scrub began, are in
-- hand already and come back not open.
CREATE FUNCTION ${S}.scrub_take(p_id text, p_since timestamptz, p_claimant text, p_limit integer, p_service text,
  p_account text)
RETURNS TABLE (e164 text, country text, window_ms float8, open boolean) LANGUAGE sql ${DEFINER} AS $$
  WITH next AS (
    SELECT s.seq FROM ${S}.shared_numbers s WHERE s.scrub = p_id AND s.taken_by IS NULL
     ORDER BY s.seq DESC LIMIT p_limit FOR UPDATE SKIP LOCKED
  ),
  taken AS (
    UPDATE ${S}.shared_numbers n SET taken_by = p_claimant FROM next WHERE n.scrub = p_id AND n.seq = next.seq
    RETURNING n.e164, n.country, n.window_ms
  )
  SELECT t.e164, t.country, t.window_ms,
         NOT EXISTS (SELECT 1 FROM ${S}.claims c
                      WHERE c.service = p_service AND c.account = p_account AND c.e164 = t.e164
                        AND (c.state IN ('reserved', 'sending', 'pending') OR c.settled_at >= p_since))
    FROM taken t
$$;

REVOKE EXECUTE ON FUNCTION ${TEAM_FUNCTION_SIGNATURES.join(', ')} FROM PUBLIC;

`;

export function teamFunctions(memberLeaseMs: number, memberLockClass: number): string {
  return `${VERDICTS}${CLAIMS}${memberFunctions(memberLeaseMs, memberLockClass)}${SCRUBS}
-- The functions run with the rights of the role that owns the tables, whoever migrates (a superuser, say).
${ownedBy(`${S}.claims`, TEAM_FUNCTION_SIGNATURES)}

-- Direct writes are taken back from every role but the owner (members and shared scrubs were PUBLIC's); the roles
-- that could write claims run the functions instead, and every role that could write a table keeps reading it.
${writesTakenBack(TABLES, `${S}.claims`, TEAM_FUNCTION_SIGNATURES, true)}`;
}
