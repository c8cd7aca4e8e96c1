// The team's internal do-not-call list in PostgreSQL: one list per company (not scoped by key), its exemptions and
// the hash-chained, append-only audit log, whose head is anchored in the store with every change.
import type { PoolClient } from 'pg';
import type { SuppressionList } from '../interfaces.js';
import {
  columnMismatch,
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
import { LIST_LOCK } from './list-functions.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

const BY_NUMBER = 'ORDER BY e164 COLLATE "C"';

type Row = Record<string, string | null>;
/** A read within one snapshot. */
type Read = <R extends Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<R[]>;
type AuditRow = Omit<AuditEntry, 'id'> & { id: string | number };

const toEntry = (r: AuditRow): AuditEntry => ({ ...r, id: Number(r.id), format: Number(r.format ?? 1) });

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
   * One change of the list, made by the owner's function (PostgreSQL migration 4): it takes the list's lock, applies
   * the change row by row, appends an audit entry for each (format 2, its hash computed by the server), stamps who
   * (this machine's user@host and the database role) and when (the server's clock, not `now`), and anchors the new
   * head, in one transaction. A member's role can write the list no other way.
   */
  private async change(
    action: Exclude<AuditAction, 'restore'>,
    rows: ReadonlyArray<{
      e164: string;
      country?: string | null;
      reason?: string | null;
      source?: string | null;
      basis?: string | null;
      until?: string | null;
      evidence?: string | null;
    }>,
    actor: Actor,
  ): Promise<ChangeResult> {
    const column = (pick: (r: (typeof rows)[number]) => string | null | undefined) => rows.map((r) => pick(r) ?? null);
    const r = await this.pool.query<{ changed: number; unchanged: number }>(
      'changing the internal list',
      `SELECT changed, unchanged FROM ${SCHEMA}.list_change($1, $2, $3::text[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::text[], $9::text[])`,
      [
        action,
        actor.who,
        column((x) => x.e164),
        column((x) => x.country),
        column((x) => (x.reason !== undefined ? x.reason : actor.reason)),
        column((x) => (x.source !== undefined ? x.source : actor.source)),
        column((x) => x.basis),
        column((x) => x.until),
        column((x) => x.evidence),
      ],
    );
    return { changed: Number(r[0]!.changed), unchanged: Number(r[0]!.unchanged) };
  }

  async suppress(
    numbers: ReadonlyArray<{ e164: string; country: string | null }>,
    actor: Actor,
    _now: Date,
  ): Promise<ChangeResult> {
    return this.change('suppress', numbers, actor);
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
      // Since schema 4 only the owner's role writes the log directly (a member changes it through list_change).
      const may = await c.query<{ ok: boolean }>(`SELECT has_table_privilege('${SCHEMA}.audit', 'INSERT') AS ok`);
      if (!may.rows[0]?.ok)
        throw usageError(
          'E_STORE_REFUSED',
          `the team store ${this.path} refused copying a log in: only the role that owns the store writes its log ` +
            'as a file has it',
          {
            hint: "run `dnc store import` as the owner's role (the one that runs `dnc store migrate`), or add --merge",
          },
        );
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
    const added = await this.change(
      'suppress',
      suppressions.map((x) => ({ e164: x.e164, country: x.country, reason: x.reason, source: origin(x, x.source) })),
      actor,
    );
    const exempted = await this.exempt(exemptions, { ...actor, source: from }, now);
    return { changed: added.changed + exempted.changed, unchanged: added.unchanged + exempted.unchanged };
  }

  async unsuppress(numbers: readonly string[], actor: Actor, _now: Date): Promise<ChangeResult> {
    return this.change(
      'unsuppress',
      numbers.map((e164) => ({ e164 })),
      actor,
    );
  }

  async exempt(items: readonly ExemptionItem[], actor: Actor, _now: Date): Promise<ChangeResult> {
    return this.change('exempt', items, actor);
  }

  async unexempt(numbers: readonly string[], actor: Actor, _now: Date): Promise<ChangeResult> {
    return this.change(
      'unexempt',
      numbers.map((e164) => ({ e164 })),
      actor,
    );
  }

  /**
   * The owner's repair (dnc.list_repair): the rows put back as the audit log records them, recorded as a `restore`
   * entry. Refused by the server for any role but the store's owner, and for a log whose chain is broken or does
   * not end at the anchored head (those are restored from a backup).
   */
  async repair(actor: Actor, reason: string): Promise<{ suppressions: number; exemptions: number; head: string }> {
    const r = await this.pool.query<{ suppressions: string; exemptions: string; head: string }>(
      'repairing the internal list',
      `SELECT suppressions, exemptions, head FROM ${SCHEMA}.list_repair($1, $2)`,
      [actor.who, reason],
    );
    return { suppressions: Number(r[0]!.suppressions), exemptions: Number(r[0]!.exemptions), head: r[0]!.head };
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
