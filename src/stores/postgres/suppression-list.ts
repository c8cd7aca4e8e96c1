// The team's internal do-not-call list in PostgreSQL: one list per company (not scoped by key), its exemptions and
// the hash-chained, append-only audit log, whose head is anchored in the store with every change.
import type { PoolClient } from 'pg';
import type { SuppressionList } from '../interfaces.js';
import {
  columnMismatch,
  entryHash,
  firstBrokenEntry,
  replayMismatch,
  standingOf,
  stateSha256,
  type Actor,
  type AuditAction,
  type AuditEntry,
  type ChangeResult,
  type Exemption,
  type ExemptionItem,
  type ListIdentity,
  type Suppression,
  toExemption,
  toSuppression,
} from '../suppression-types.js';
import { usageError } from '../../errors.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

/** pg_advisory_xact_lock key of list changes ('dnc-list'): the hash chain stays one line. */
const LIST_LOCK = '7236837475577115508';

const BY_NUMBER = 'ORDER BY e164 COLLATE "C"';

type Row = Record<string, string | null>;
/** A read within one snapshot. */
type Read = <R extends Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<R[]>;
type AuditRow = Omit<AuditEntry, 'id'> & { id: string | number };

const toEntry = (r: AuditRow): AuditEntry => ({ ...r, id: Number(r.id) });

type NewEntry = Omit<AuditEntry, 'id' | 'hash'>;

/** Appends entries, hashes given, in their order (one statement). */
async function insertAudit(c: PoolClient, entries: ReadonlyArray<Omit<AuditEntry, 'id'>>): Promise<void> {
  const cols: Array<Array<string | null>> = Array.from({ length: 10 }, () => []);
  for (const e of entries)
    [e.at, e.action, e.e164, e.who, e.reason, e.source, e.basis, e.until, e.evidence, e.hash].forEach((v, i) =>
      cols[i]!.push(v),
    );
  await c.query(
    `INSERT INTO ${SCHEMA}.audit (at, action, e164, who, reason, source, basis, until, evidence, hash)
     SELECT a, b, c, d, e, f, g, h, i, j FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
       $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) WITH ORDINALITY AS t(a, b, c, d, e, f, g, h,
       i, j, n) ORDER BY n`,
    cols,
  );
}

export class PgSuppressionList implements SuppressionList {
  readonly shared = true;

  private constructor(
    private readonly pool: StorePool,
    readonly name: string,
    readonly id: string,
    readonly path: string,
  ) {}

  static async open(pool: StorePool): Promise<PgSuppressionList> {
    const [name, id] = await Promise.all([pool.meta('list_name'), pool.meta('list_id')]);
    return new PgSuppressionList(pool, name ?? 'team', id ?? '', pool.where);
  }

  /**
   * One change under the list's lock: `plan` reads what it needs and says which entries to append; the entries are
   * chained from the head, and the new head is anchored in the store, in the same transaction.
   */
  private async change(
    plan: (c: PoolClient, entry: (e: NewEntry) => void) => Promise<number>,
    actor: Actor,
  ): Promise<ChangeResult> {
    return this.pool.transaction('changing the internal list', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [LIST_LOCK]);
      const entries: NewEntry[] = [];
      const unchanged = await plan(c, (e) => entries.push(e));
      if (entries.length > 0) {
        let previous =
          (await c.query<{ hash: string }>(`SELECT hash FROM ${SCHEMA}.audit ORDER BY id DESC LIMIT 1`)).rows[0]
            ?.hash ?? '';
        const chained = entries.map((e) => ({ ...e, hash: (previous = entryHash(previous, e)) }));
        await insertAudit(c, chained);
        await c.query(
          `INSERT INTO ${SCHEMA}.list_heads (head, entries, who)
           SELECT $1, (SELECT count(*) FROM ${SCHEMA}.audit), $2`,
          [previous, actor.who],
        );
      }
      return { changed: entries.length, unchanged };
    });
  }

  async suppress(
    numbers: ReadonlyArray<{ e164: string; country: string | null }>,
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult> {
    return this.change(async (c, entry) => {
      const on = await this.present(
        c,
        'suppressions',
        numbers.map((n) => n.e164),
      );
      const rows: Array<{ e164: string; country: string | null }> = [];
      for (const n of numbers) {
        if (on.has(n.e164)) continue;
        on.add(n.e164);
        rows.push(n);
        entry(this.entryOf(now, 'suppress', n.e164, actor));
      }
      await c.query(
        `INSERT INTO ${SCHEMA}.suppressions (e164, country, added_at, who, reason, source)
         SELECT e, c, $3, $4, $5, $6 FROM unnest($1::text[], $2::text[]) AS t(e, c)`,
        [
          rows.map((r) => r.e164),
          rows.map((r) => r.country),
          now.toISOString(),
          actor.who,
          actor.reason ?? null,
          actor.source ?? null,
        ],
      );
      return numbers.length - rows.length;
    }, actor);
  }

  /**
   * `dnc store import` into an empty team list: a local list's audit log copied entry by entry, hashes and all (the
   * team's chain is then the local one, checkable against the file), with its entries. Refused once the team's log
   * has entries (see merge).
   */
  async importLog(
    log: readonly AuditEntry[],
    suppressions: readonly Suppression[],
    exemptions: readonly Exemption[],
    who: string,
  ): Promise<number> {
    return this.pool.transaction('importing a list', async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [LIST_LOCK]);
      const n = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${SCHEMA}.audit`)).rows[0]!.n);
      if (n > 0)
        throw usageError(
          'E_STORE_INVALID',
          `the team's list already has ${n} audit entries: a log is copied only into an empty one`,
          {
            hint:
              'add --merge to add the local entries to it as new, audited changes (nothing is taken off the team ' +
              'list)',
          },
        );
      await insertAudit(c, log);
      await c.query(
        `INSERT INTO ${SCHEMA}.suppressions (e164, country, added_at, who, reason, source)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
        [
          suppressions.map((x) => x.e164),
          suppressions.map((x) => x.country),
          suppressions.map((x) => x.addedAt),
          suppressions.map((x) => x.who),
          suppressions.map((x) => x.reason),
          suppressions.map((x) => x.source),
        ],
      );
      await c.query(
        `INSERT INTO ${SCHEMA}.exemptions (e164, country, basis, until, evidence, added_at, who)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
        [
          exemptions.map((x) => x.e164),
          exemptions.map((x) => x.country),
          exemptions.map((x) => x.basis),
          exemptions.map((x) => x.until),
          exemptions.map((x) => x.evidence),
          exemptions.map((x) => x.addedAt),
          exemptions.map((x) => x.who),
        ],
      );
      if (log.length > 0)
        await c.query(`INSERT INTO ${SCHEMA}.list_heads (head, entries, who) VALUES ($1, $2, $3)`, [
          log[log.length - 1]!.hash,
          log.length,
          who,
        ]);
      return log.length;
    });
  }

  /**
   * `dnc store import --merge`: a local list's entries added to the team's as new changes, chained on the team's log
   * (each says where it came from). Numbers already on the team list stay as they are: an import never takes one off.
   */
  async merge(
    suppressions: readonly Suppression[],
    exemptions: readonly Exemption[],
    from: string,
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult> {
    const origin = (x: { addedAt: string; who: string }, source?: string | null) =>
      `${from}: added ${x.addedAt} by ${x.who}${source ? `, ${source}` : ''}`;
    const added = await this.change(async (c, entry) => {
      const on = await this.present(
        c,
        'suppressions',
        suppressions.map((x) => x.e164),
      );
      const rows = suppressions.filter((x) => !on.has(x.e164));
      for (const x of rows)
        entry({
          ...this.entryOf(now, 'suppress', x.e164, { ...actor, reason: x.reason }),
          source: origin(x, x.source),
        });
      await c.query(
        `INSERT INTO ${SCHEMA}.suppressions (e164, country, added_at, who, reason, source)
         SELECT e, c, $3, $4, r, s FROM unnest($1::text[], $2::text[], $5::text[], $6::text[]) AS t(e, c, r, s)`,
        [
          rows.map((x) => x.e164),
          rows.map((x) => x.country),
          now.toISOString(),
          actor.who,
          rows.map((x) => x.reason),
          rows.map((x) => origin(x, x.source)),
        ],
      );
      return suppressions.length - rows.length;
    }, actor);
    const exempted = await this.exempt(exemptions, { ...actor, source: from }, now);
    return { changed: added.changed + exempted.changed, unchanged: added.unchanged + exempted.unchanged };
  }

  async unsuppress(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.remove('suppressions', 'unsuppress', numbers, actor, now);
  }

  async exempt(items: readonly ExemptionItem[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.change(async (c, entry) => {
      const current = new Map(
        (
          await c.query<Row>(`SELECT * FROM ${SCHEMA}.exemptions WHERE e164 = ANY($1::text[])`, [
            items.map((x) => x.e164),
          ])
        ).rows.map((r) => [r.e164!, toExemption(r)]),
      );
      let unchanged = 0;
      for (const x of items) {
        const old = current.get(x.e164);
        if (old && old.basis === x.basis && old.until === x.until && old.evidence === x.evidence) {
          unchanged++;
          continue;
        }
        const row: Exemption = { ...x, addedAt: now.toISOString(), who: actor.who };
        current.set(x.e164, row);
        await c.query(
          `INSERT INTO ${SCHEMA}.exemptions (e164, country, basis, until, evidence, added_at, who)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (e164) DO UPDATE SET country = excluded.country, basis = excluded.basis,
             until = excluded.until, evidence = excluded.evidence, added_at = excluded.added_at, who = excluded.who`,
          [x.e164, x.country, x.basis, x.until, x.evidence, row.addedAt, actor.who],
        );
        entry({ ...this.entryOf(now, 'exempt', x.e164, actor), basis: x.basis, until: x.until, evidence: x.evidence });
      }
      return unchanged;
    }, actor);
  }

  async unexempt(numbers: readonly string[], actor: Actor, now: Date): Promise<ChangeResult> {
    return this.remove('exemptions', 'unexempt', numbers, actor, now);
  }

  private async remove(
    table: 'suppressions' | 'exemptions',
    action: AuditAction,
    numbers: readonly string[],
    actor: Actor,
    now: Date,
  ): Promise<ChangeResult> {
    return this.change(async (c, entry) => {
      const on = await this.present(c, table, numbers);
      let unchanged = 0;
      for (const e164 of numbers) {
        if (!on.delete(e164)) {
          unchanged++;
          continue;
        }
        entry(this.entryOf(now, action, e164, actor));
      }
      await c.query(`DELETE FROM ${SCHEMA}.${table} WHERE e164 = ANY($1::text[])`, [[...numbers]]);
      return unchanged;
    }, actor);
  }

  private async present(c: PoolClient, table: string, numbers: readonly string[]): Promise<Set<string>> {
    const rows = await c.query<{ e164: string }>(`SELECT e164 FROM ${SCHEMA}.${table} WHERE e164 = ANY($1::text[])`, [
      [...numbers],
    ]);
    return new Set(rows.rows.map((r) => r.e164));
  }

  private entryOf(now: Date, action: AuditAction, e164: string, actor: Actor): NewEntry {
    return {
      at: now.toISOString(),
      action,
      e164,
      who: actor.who,
      reason: actor.reason ?? null,
      source: actor.source ?? null,
      basis: null,
      until: null,
      evidence: null,
    };
  }

  private read<R extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    return this.pool.query<R>('reading the internal list', sql, params);
  }

  async suppression(e164: string): Promise<Suppression | null> {
    const r = (await this.read<Row>(`SELECT * FROM ${SCHEMA}.suppressions WHERE e164 = $1`, [e164]))[0];
    return r ? toSuppression(r) : null;
  }

  async exemption(e164: string): Promise<Exemption | null> {
    const r = (await this.read<Row>(`SELECT * FROM ${SCHEMA}.exemptions WHERE e164 = $1`, [e164]))[0];
    return r ? toExemption(r) : null;
  }

  async suppressions(): Promise<Suppression[]> {
    return (await this.read<Row>(`SELECT * FROM ${SCHEMA}.suppressions ${BY_NUMBER}`)).map(toSuppression);
  }

  async exemptions(): Promise<Exemption[]> {
    return (await this.read<Row>(`SELECT * FROM ${SCHEMA}.exemptions ${BY_NUMBER}`)).map(toExemption);
  }

  async counts(): Promise<{ suppressions: number; exemptions: number; audit: number }> {
    const r = (
      await this.read<{ s: string; x: string; a: string }>(
        `SELECT (SELECT count(*) FROM ${SCHEMA}.suppressions) AS s, (SELECT count(*) FROM ${SCHEMA}.exemptions) AS x,
                (SELECT count(*) FROM ${SCHEMA}.audit) AS a`,
      )
    )[0]!;
    return { suppressions: Number(r.s), exemptions: Number(r.x), audit: Number(r.a) };
  }

  async audit(e164?: string): Promise<AuditEntry[]> {
    const rows = e164
      ? await this.read<AuditRow>(`SELECT * FROM ${SCHEMA}.audit WHERE e164 = $1 ORDER BY id`, [e164])
      : await this.read<AuditRow>(`SELECT * FROM ${SCHEMA}.audit ORDER BY id`);
    return rows.map(toEntry);
  }

  async brokenAuditEntry(): Promise<number | null> {
    return firstBrokenEntry(await this.audit());
  }

  async stateMismatch(): Promise<string | null> {
    return this.consistent(async (q) =>
      replayMismatch(
        (await q<AuditRow>(`SELECT * FROM ${SCHEMA}.audit ORDER BY id`)).map(toEntry),
        (await q<Row>(`SELECT * FROM ${SCHEMA}.suppressions ${BY_NUMBER}`)).map(toSuppression),
        (await q<Row>(`SELECT * FROM ${SCHEMA}.exemptions ${BY_NUMBER}`)).map(toExemption),
      ),
    );
  }

  /**
   * Reads in one snapshot (REPEATABLE READ, read only): the entries and the audit log as one change left them. Read
   * statement by statement, another member's change committed between two of them looked like an entry no audit
   * entry put there (a false E_LIST_ALTERED).
   */
  private consistent<T>(work: (q: Read) => Promise<T>): Promise<T> {
    return this.pool.withClient('reading the internal list', async (c) => {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const out = await work(async (sql, params = []) => (await c.query(sql, params)).rows);
        await c.query('COMMIT');
        return out;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /** The newest head anchored in the store must still be in the log: entries cut from its end are found. */
  private async cutFromEnd(q: Read): Promise<string | null> {
    const anchored = (
      await q<{ head: string | null; entries: string; at: Date }>(
        `SELECT head, entries, at FROM ${SCHEMA}.list_heads ORDER BY id DESC LIMIT 1`,
      )
    )[0];
    const last = (await q<{ hash: string }>(`SELECT hash FROM ${SCHEMA}.audit ORDER BY id DESC LIMIT 1`))[0];
    if (!anchored?.head) return null;
    // Every change dnc makes anchors its new head in the same transaction: a newer entry that no head anchors was
    // appended by hand (a forged entry, hashed right, at the end of the chain).
    if (last && last.hash === anchored.head) return null;
    if ((await q(`SELECT 1 FROM ${SCHEMA}.audit WHERE hash = $1 LIMIT 1`, [anchored.head])).length > 0)
      return (
        `its audit log holds entries after the head anchored in the store (head ${anchored.head.slice(0, 12)}… at ` +
        `${anchored.at.toISOString()}) that no change of dnc's anchored: they were written by hand`
      );
    return (
      `its audit log no longer holds the head anchored in the store (${anchored.entries} entries, head ` +
      `${anchored.head.slice(0, 12)}… at ${anchored.at.toISOString()}): entries were cut`
    );
  }

  async integrityProblem(numbers?: readonly string[]): Promise<string | null> {
    return this.consistent(async (q) => {
      const only = numbers ? [[...new Set(numbers)]] : [];
      const where = numbers ? 'WHERE e164 = ANY($1::text[])' : '';
      const log = (await q<AuditRow>(`SELECT * FROM ${SCHEMA}.audit ${where} ORDER BY id`, only)).map(toEntry);
      if (!numbers) {
        const broken = firstBrokenEntry(log);
        if (broken !== null) return `audit entry ${broken} does not match the hash chain`;
      }
      const suppressions = (await q<Row>(`SELECT * FROM ${SCHEMA}.suppressions ${where} ${BY_NUMBER}`, only)).map(
        toSuppression,
      );
      const exemptions = (await q<Row>(`SELECT * FROM ${SCHEMA}.exemptions ${where} ${BY_NUMBER}`, only)).map(
        toExemption,
      );
      return (
        replayMismatch(log, suppressions, exemptions) ??
        columnMismatch(log, suppressions, exemptions) ??
        (await this.cutFromEnd(q))
      );
    });
  }

  async auditEntryWithHash(hash: string): Promise<number | null> {
    const r = (await this.read<{ id: string }>(`SELECT id FROM ${SCHEMA}.audit WHERE hash = $1 LIMIT 1`, [hash]))[0];
    return r ? Number(r.id) : null;
  }

  async standingAt(
    numbers: ReadonlySet<string>,
    throughId: number,
  ): Promise<Map<string, { suppression: AuditEntry | null; exemption: AuditEntry | null }>> {
    const rows = await this.read<AuditRow>(
      `SELECT * FROM ${SCHEMA}.audit WHERE id <= $1 AND e164 = ANY($2::text[]) ORDER BY id`,
      [throughId, [...numbers]],
    );
    return standingOf(rows.map(toEntry), numbers);
  }

  /** One read-only snapshot: the state hash a manifest records is that of the very entries the scrub applied. */
  async snapshot(): Promise<{ suppressions: Suppression[]; exemptions: Exemption[]; identity: ListIdentity }> {
    return this.pool.withClient('reading the internal list', async (c) => {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const suppressions = (await c.query<Row>(`SELECT * FROM ${SCHEMA}.suppressions ${BY_NUMBER}`)).rows.map(
          toSuppression,
        );
        const exemptions = (await c.query<Row>(`SELECT * FROM ${SCHEMA}.exemptions ${BY_NUMBER}`)).rows.map(
          toExemption,
        );
        const head = (
          await c.query<{ hash: string; n: string }>(
            `SELECT hash, (SELECT count(*) FROM ${SCHEMA}.audit) AS n FROM ${SCHEMA}.audit ORDER BY id DESC LIMIT 1`,
          )
        ).rows[0];
        await c.query('COMMIT');
        return {
          suppressions,
          exemptions,
          identity: this.identityOf(suppressions, exemptions, head?.hash ?? null, Number(head?.n ?? 0)),
        };
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  async identity(): Promise<ListIdentity> {
    return (await this.snapshot()).identity;
  }

  private identityOf(s: Suppression[], x: Exemption[], head: string | null, entries: number): ListIdentity {
    return {
      name: this.name,
      id: this.id,
      path: this.path,
      suppressions: s.length,
      exemptions: x.length,
      audit_entries: entries,
      audit_head: head,
      state_sha256: stateSha256(s, x),
    };
  }

  async close(): Promise<void> {
    // The pool is the owner's: closed with the stores.
  }
}
