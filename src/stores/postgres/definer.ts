// What the migrations that move writes behind the owner's functions share (4: the list; 6: verdicts, claims, members
// and scrubs): the functions owned by the role that owns the tables, and the direct writes taken back.

/** The role a grantee of aclexplode is, for format(): PUBLIC (grantee 0) or the role's quoted name. */
const GRANTEE = `CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END`;

/**
 * `functions` (signatures) made the property of the role that owns `ownerTable`, whoever migrates (a superuser, say):
 * SECURITY DEFINER functions run with its rights.
 */
export function ownedBy(ownerTable: string, functions: readonly string[]): string {
  return `
DO $$
DECLARE
  f text;
  owner text := (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = '${ownerTable}'::regclass);
BEGIN
  FOREACH f IN ARRAY ARRAY['${functions.join("', '")}'] LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO %I', f, owner);
  END LOOP;
END $$;`;
}

/**
 * Every direct write on `tables` taken back from every role but the owner; the roles that could INSERT into `deciding`
 * may run `functions` instead (and, with `keepReading`, read the tables they could write).
 */
export function writesTakenBack(
  tables: readonly string[],
  deciding: string,
  functions: readonly string[],
  keepReading = false,
): string {
  return `
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.grantee, bool_or(c.oid = '${deciding}'::regclass AND a.privilege_type = 'INSERT') AS decides
      FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
     WHERE c.oid IN (${tables.map((t) => `'${t}'::regclass`).join(', ')})
       AND a.grantee <> c.relowner
       AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER')
     GROUP BY a.grantee
  LOOP
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ${tables.join(', ')} FROM %s',
      ${GRANTEE});${
        keepReading
          ? `
    EXECUTE format('GRANT SELECT ON ${tables.join(', ')} TO %s', ${GRANTEE});`
          : ''
      }
    IF g.decides THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION ${functions.join(', ')} TO %s', ${GRANTEE});
    END IF;
  END LOOP;
END $$;`;
}
