// PostgreSQL migration 4: the team's internal list changed only through functions its owner's role owns (SECURITY
// DEFINER). A member's role keeps SELECT on the list's tables and EXECUTE on the functions: it can no longer write a
// row, an audit entry or a head of its own, so it cannot forge a consistent edit (a row deleted with a matching
// `unsuppress` entry and head, under any name). The functions serialize on the chain's lock, compute each entry's
// hash, and stamp who (the database's session_user, beside what the machine says) and when (the server's clock).
// Entries they write are format 2: the hash covers the country too, so every stored column of a row is its entry's.

import { ownedBy, writesTakenBack } from './definer.js';

/** The schema (migrations.ts's SCHEMA; spelt here, as that module imports this one). */
const S = 'dnc';

/** pg_advisory_xact_lock key of list changes ('dnc-list'), as src/stores/postgres/suppression-list.ts takes it. */
export const LIST_LOCK = '7236837475577115508';

/** The functions a member's role may run; list_repair checks its caller is the owner's role itself. */
export const LIST_FUNCTION_SIGNATURES = [
  `${S}.list_change(text, text, text[], text[], text[], text[], text[], text[], text[])`,
  `${S}.list_repair(text, text)`,
] as const;

const APPEND_ENTRY = `${S}.append_entry(text, text, text, text, text, text, text, text, text, text)`;

const TABLES = ['suppressions', 'exemptions', 'audit', 'list_heads'].map((t) => `${S}.${t}`);

/** The time format of every `at` (JavaScript's toISOString). */
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

export const LIST_FUNCTIONS = `
ALTER TABLE ${S}.audit ADD COLUMN country text, ADD COLUMN format smallint NOT NULL DEFAULT 1
  CHECK (format IN (1, 2));

-- The chain's hash, as entryHash (src/stores/suppression-types.ts) computes it: SHA-256 of the previous hash, a
-- newline and the entry as a JSON array (to_json escapes strings as JSON.stringify does).
CREATE FUNCTION ${S}.entry_hash(p_previous text, p_format integer, p_at text, p_action text, p_e164 text,
  p_who text, p_reason text, p_source text, p_basis text, p_until text, p_evidence text, p_country text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
  SELECT encode(sha256(convert_to(p_previous || E'\\n' || '[' || CASE WHEN p_format >= 2 THEN '2,' ELSE '' END || (
    SELECT string_agg(coalesce(to_json(t.v)::text, 'null'), ',' ORDER BY t.n)
      FROM unnest(CASE WHEN p_format >= 2
        THEN ARRAY[p_at, p_action, p_e164, p_who, p_reason, p_source, p_basis, p_until, p_evidence, p_country]
        ELSE ARRAY[p_at, p_action, p_e164, p_who, p_reason, p_source, p_basis, p_until, p_evidence] END)
        WITH ORDINALITY AS t(v, n)
  ) || ']', 'UTF8')), 'hex')
$$;

-- Appends one entry after the head (the caller holds the list's lock) and returns its hash.
CREATE FUNCTION ${S}.append_entry(p_at text, p_action text, p_e164 text, p_who text, p_reason text,
  p_source text, p_basis text, p_until text, p_evidence text, p_country text) RETURNS text
LANGUAGE plpgsql SET search_path = ${S}, pg_temp AS $$
DECLARE
  v_previous text := coalesce((SELECT a.hash FROM ${S}.audit a ORDER BY a.id DESC LIMIT 1), '');
  v_hash text := ${S}.entry_hash(v_previous, 2, p_at, p_action, p_e164, p_who, p_reason, p_source, p_basis, p_until,
    p_evidence, p_country);
BEGIN
  INSERT INTO ${S}.audit (at, action, e164, who, reason, source, basis, until, evidence, country, format, hash)
    VALUES (p_at, p_action, p_e164, p_who, p_reason, p_source, p_basis, p_until, p_evidence, p_country, 2, v_hash);
  RETURN v_hash;
END $$;
REVOKE EXECUTE ON FUNCTION ${APPEND_ENTRY} FROM PUBLIC;

-- Who made a change: what the machine says (user@host), then the role the server authenticated, which it cannot
-- choose.
CREATE FUNCTION ${S}.stamp_who(p_claimed text) RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
  SELECT CASE WHEN coalesce(p_claimed, '') = '' THEN session_user::text
              ELSE p_claimed || ' [' || session_user::text || ']' END
$$;

-- One change of the list: action applied to each number in order (a number already so is counted unchanged, and
-- gets no entry), one audit entry each, the new head anchored. The arrays run in parallel with e164.
CREATE FUNCTION ${S}.list_change(p_action text, p_claimed text, p_e164 text[], p_country text[], p_reason text[],
  p_source text[], p_basis text[], p_until text[], p_evidence text[])
RETURNS TABLE (changed integer, unchanged integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${S}, pg_temp AS $$
DECLARE
  v_who text := ${S}.stamp_who(p_claimed);
  v_at text;
  v_head text;
  v_changed integer := 0;
  v_same integer := 0;
  i integer;
BEGIN
  IF p_action NOT IN ('suppress', 'unsuppress', 'exempt', 'unexempt') THEN
    RAISE EXCEPTION 'not a change of the list: %', p_action USING ERRCODE = '22023';
  END IF;
  PERFORM pg_advisory_xact_lock(${LIST_LOCK});
  v_at := to_char(clock_timestamp() AT TIME ZONE 'UTC', ${ISO});
  FOR i IN 1 .. coalesce(array_length(p_e164, 1), 0) LOOP
    IF p_action = 'suppress' THEN
      INSERT INTO ${S}.suppressions (e164, country, added_at, who, reason, source)
        VALUES (p_e164[i], p_country[i], v_at, v_who, p_reason[i], p_source[i]) ON CONFLICT DO NOTHING;
    ELSIF p_action = 'unsuppress' THEN
      DELETE FROM ${S}.suppressions s WHERE s.e164 = p_e164[i];
    ELSIF p_action = 'unexempt' THEN
      DELETE FROM ${S}.exemptions x WHERE x.e164 = p_e164[i];
    ELSE
      INSERT INTO ${S}.exemptions AS x (e164, country, basis, until, evidence, added_at, who)
        VALUES (p_e164[i], p_country[i], p_basis[i], p_until[i], p_evidence[i], v_at, v_who)
        ON CONFLICT ON CONSTRAINT exemptions_pkey DO UPDATE SET country = excluded.country, basis = excluded.basis,
          until = excluded.until, evidence = excluded.evidence, added_at = excluded.added_at, who = excluded.who
        WHERE (x.basis, x.until) IS DISTINCT FROM (excluded.basis, excluded.until)
           OR x.evidence IS DISTINCT FROM excluded.evidence;
    END IF;
    IF NOT FOUND THEN
      v_same := v_same + 1;
      CONTINUE;
    END IF;
    v_head := ${S}.append_entry(v_at, p_action, p_e164[i], v_who, p_reason[i], p_source[i],
      CASE WHEN p_action = 'exempt' THEN p_basis[i] END, CASE WHEN p_action = 'exempt' THEN p_until[i] END,
      CASE WHEN p_action = 'exempt' THEN p_evidence[i] END,
      CASE WHEN p_action IN ('suppress', 'exempt') THEN p_country[i] END);
    v_changed := v_changed + 1;
  END LOOP;
  IF v_changed > 0 THEN
    INSERT INTO ${S}.list_heads (head, entries, who) SELECT v_head, count(*), v_who FROM ${S}.audit;
  END IF;
  RETURN QUERY SELECT v_changed, v_same;
END $$;

-- The owner's repair of a list whose rows were changed behind dnc's back: the chain is checked whole and ending at
-- the anchored head (else the store is restored from a backup), the rows are put back as the log records them, and
-- the repair is itself an audit entry ('restore': who, why, what it replaced) with a head anchored.
CREATE FUNCTION ${S}.list_repair(p_claimed text, p_reason text)
RETURNS TABLE (suppressions bigint, exemptions bigint, replaced text, head text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${S}, pg_temp AS $$
DECLARE
  v_who text := ${S}.stamp_who(p_claimed);
  v_owner oid := (SELECT c.relowner FROM pg_class c WHERE c.oid = '${S}.audit'::regclass);
  v_previous text := '';
  v_entry record;
  v_countries jsonb;
  v_before text;
  v_anchored text;
BEGIN
  IF NOT pg_has_role(session_user, v_owner, 'MEMBER') THEN
    RAISE EXCEPTION 'only the role that owns the team store (%) repairs its list', v_owner::regrole
      USING ERRCODE = '42501';
  END IF;
  IF coalesce(p_reason, '') = '' THEN
    RAISE EXCEPTION 'a repair says why (its reason is kept in the audit log)' USING ERRCODE = '22023';
  END IF;
  PERFORM pg_advisory_xact_lock(${LIST_LOCK});
  FOR v_entry IN SELECT * FROM ${S}.audit a ORDER BY a.id LOOP
    IF ${S}.entry_hash(v_previous, v_entry.format, v_entry.at, v_entry.action, v_entry.e164, v_entry.who,
         v_entry.reason, v_entry.source, v_entry.basis, v_entry.until, v_entry.evidence, v_entry.country)
       <> v_entry.hash THEN
      RAISE EXCEPTION 'audit entry % does not match the hash chain: restore the store from a backup', v_entry.id
        USING ERRCODE = '22023';
    END IF;
    v_previous := v_entry.hash;
  END LOOP;
  v_anchored := (SELECT h.head FROM ${S}.list_heads h ORDER BY h.id DESC LIMIT 1);
  IF v_anchored IS NOT NULL AND v_anchored <> v_previous THEN
    RAISE EXCEPTION 'the audit log does not end at the head anchored in the store: restore the store from a backup'
      USING ERRCODE = '22023';
  END IF;
  -- A row's country is its entry's (format 2); an older entry's row keeps the country it has.
  v_countries := (SELECT coalesce(jsonb_object_agg(u.e164, u.country), '{}') FROM (
    SELECT DISTINCT ON (r.e164) r.e164, r.country FROM (
      SELECT s.e164, s.country FROM ${S}.suppressions s UNION ALL SELECT x.e164, x.country FROM ${S}.exemptions x
    ) r ORDER BY r.e164, r.country NULLS LAST) u);
  v_before := format('%s suppressions and %s exemptions put back as the log records them (the rows replaced: %s)',
    (SELECT count(*) FROM ${S}.suppressions s), (SELECT count(*) FROM ${S}.exemptions x),
    (SELECT 'sha256 ' || encode(sha256(convert_to(coalesce(string_agg(t.line, E'\\n' ORDER BY t.line), ''), 'UTF8')),
       'hex') FROM (
      SELECT concat_ws(' ', 'S', s.e164, s.country, s.added_at, s.who, s.reason, s.source) AS line
        FROM ${S}.suppressions s
      UNION ALL SELECT concat_ws(' ', 'E', x.e164, x.country, x.basis, x.until, x.evidence, x.added_at, x.who)
        FROM ${S}.exemptions x) t));
  DELETE FROM ${S}.suppressions s WHERE true;
  DELETE FROM ${S}.exemptions x WHERE true;
  INSERT INTO ${S}.suppressions (e164, country, added_at, who, reason, source)
    SELECT l.e164, CASE WHEN l.format >= 2 THEN l.country ELSE v_countries ->> l.e164 END, l.at, l.who, l.reason,
           l.source
      FROM (SELECT DISTINCT ON (a.e164) * FROM ${S}.audit a WHERE a.action IN ('suppress', 'unsuppress')
             ORDER BY a.e164, a.id DESC) l
     WHERE l.action = 'suppress';
  INSERT INTO ${S}.exemptions (e164, country, basis, until, evidence, added_at, who)
    SELECT l.e164, CASE WHEN l.format >= 2 THEN l.country ELSE v_countries ->> l.e164 END, l.basis, l.until,
           l.evidence, l.at, l.who
      FROM (SELECT DISTINCT ON (a.e164) * FROM ${S}.audit a WHERE a.action IN ('exempt', 'unexempt')
             ORDER BY a.e164, a.id DESC) l
     WHERE l.action = 'exempt';
  head := ${S}.append_entry(to_char(clock_timestamp() AT TIME ZONE 'UTC', ${ISO}), 'restore', '', v_who, p_reason,
    'dnc.list_repair', NULL, NULL, v_before, NULL);
  INSERT INTO ${S}.list_heads (head, entries, who) SELECT list_repair.head, count(*), v_who FROM ${S}.audit a;
  suppressions := (SELECT count(*) FROM ${S}.suppressions s);
  exemptions := (SELECT count(*) FROM ${S}.exemptions x);
  replaced := v_before;
  RETURN NEXT;
END $$;

REVOKE EXECUTE ON FUNCTION ${LIST_FUNCTION_SIGNATURES.join(', ')} FROM PUBLIC;

-- The functions run with the rights of the role that owns the list's tables, whoever migrates (a superuser, say).
${ownedBy(`${S}.audit`, [...LIST_FUNCTION_SIGNATURES, APPEND_ENTRY])}

-- The direct writes a member's role was granted (docs/team.md up to schema 2) are taken back from every role but
-- the owner; the roles that could write the log may run the functions instead.
${writesTakenBack(TABLES, `${S}.audit`, LIST_FUNCTION_SIGNATURES)}`;
