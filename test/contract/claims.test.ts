// The team store's claims ("claim before you pay") and its migrations, on a real PostgreSQL server: one arbitrated
// statement per claim, answers handed to the machines that waited, leases, and a schema applied once.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LookupClaims } from '../../src/stores/interfaces.js';
import { openStores, type Stores } from '../../src/stores/owner.js';
import { LATEST_VERSION, MIGRATIONS } from '../../src/stores/postgres/migrations.js';
import { freshDatabase, HAVE_POSTGRES, POSTGRES_URL, postgresSkipped, sqlOn } from '../helpers/postgres.js';
import { sharedAnswer as answer } from '../helpers/lookup-answers.js';
import { waitFor } from '../helpers/wait.js';

postgresSkipped('claims and migrations');

const scope = { service: 'https://svc.example', apiKey: 'team-key' };

/** The role the tests' server authenticates (the URL's user): what every claim and verdict here is stamped with. */
const ROLE = POSTGRES_URL ? decodeURIComponent(new URL(POSTGRES_URL).username) : '';

describe.skipIf(!HAVE_POSTGRES)('claims on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let home: string;
  const opened: Stores[] = [];
  const machine = async (name: string, leaseMs = 60_000): Promise<LookupClaims> => {
    const stores = await openStores({ url: db.url, from: '--store' }, {}, home);
    opened.push(stores);
    return (await stores.claims(scope, name, leaseMs))!;
  };
  beforeAll(async () => {
    db = await freshDatabase();
    home = mkdtempSync(path.join(os.tmpdir(), 'dnc-claims-'));
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('one claim per number however many machines ask at once; the others get its answer', async () => {
    const machines = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((m) => machine(m)));
    const numbers = Array.from({ length: 40 }, (_, i) => `+1202555${String(3000 + i).padStart(4, '0')}`);
    const fates = await Promise.all(machines.map((m) => m.claim(numbers, false)));
    for (const n of numbers) {
      const winners = fates.filter((f) => f.get(n)?.kind === 'claimed');
      expect(winners, n).toHaveLength(1);
      for (const f of fates) expect(['claimed', 'held']).toContain(f.get(n)?.kind);
    }
    // The winner of the first number answers it; a loser asks and gets that very answer.
    const first = numbers[0]!;
    const winner = machines[fates.findIndex((f) => f.get(first)?.kind === 'claimed')]!;
    const loser = machines[fates.findIndex((f) => f.get(first)?.kind !== 'claimed')]!;
    expect((await loser.answers([first])).has(first)).toBe(false); // still running
    await winner.settle([[first, { kind: 'answered', country: 'US', answer: answer('do_not_call', 'c-1') }]]);
    expect((await loser.answers([first])).get(first)).toEqual({
      kind: 'answered',
      answer: answer('do_not_call', 'c-1'),
      claimant: winner.claimant,
      role: ROLE, // the role the server authenticated, stamped by the owner's function: no machine chooses it
    });
    // ... and a machine that asks now (within a lease of that answer) uses it rather than paying again.
    const late = await machine('late');
    expect((await late.claim([first], false)).get(first)).toMatchObject({ kind: 'answered' });
    // The verdict went to the team's results cache too.
    const cache = await opened[0]!.resultsCache(scope, { create: true });
    expect((await cache!.get(first, new Date(0)))?.correlationId).toBe('c-1');
  });

  it('a webhook lookup is pending with its correlation id until a listener stores its push', async () => {
    const [a, b] = [await machine('wa'), await machine('wb')];
    const n = '+12025554000';
    expect((await a.claim([n], false)).get(n)?.kind).toBe('claimed');
    await a.settle([[n, { kind: 'pending', correlationId: 'w-1' }]]);
    expect((await b.claim([n], false)).get(n)).toEqual({
      kind: 'pending',
      correlationId: 'w-1',
      claimant: 'wa',
      role: ROLE,
    });
    expect((await b.byCorrelation(['w-1'])).size).toBe(0);
    await a.settlePushes([{ correlationId: 'w-1', e164: n, country: 'US', answer: answer('callable', 'w-1') }]);
    expect((await b.byCorrelation(['w-1'])).get('w-1')?.result).toBe('callable');
  });

  it('a member killed: its reserved claims are free at once, its sending ones unanswered, taken over only when asked', async () => {
    const dead = await machine('dead');
    const other = await machine('other');
    const [reserved, sent] = ['+12025555000', '+12025555001'];
    expect([...(await dead.claim([reserved, sent], false)).values()].map((f) => f.kind)).toEqual([
      'claimed',
      'claimed',
    ]);
    expect(await dead.sending([sent])).toEqual(new Set([sent]));
    // A live colleague's claims, reserved or sending, are held.
    expect([...(await other.claim([reserved, sent], false)).values()].map((f) => f.kind)).toEqual(['held', 'held']);
    // Killed: the server ends its session, and the advisory lock its membership held goes with it.
    const deadLock = `FROM pg_locks l JOIN dnc.members m ON l.objid = m.lock_key::oid
        WHERE l.locktype = 'advisory' AND l.classid = ${0x646e636d}::oid AND m.claimant = 'dead'`;
    await sqlOn(db.url, `SELECT pg_terminate_backend(l.pid) ${deadLock}`);
    // The session ends a moment after it is told to: once its lock is gone.
    await waitFor(async () => (await sqlOn(db.url, `SELECT l.pid ${deadLock}`)).length === 0, {
      what: "the killed member's lock to go",
    });
    const found = await other.answers([reserved, sent]);
    expect(found.get(reserved)).toEqual({ kind: 'released' });
    expect(found.get(sent)).toMatchObject({ kind: 'unanswered', claimant: 'dead' });
    expect((await other.claim([sent], false)).get(sent)).toMatchObject({ kind: 'unanswered' });
    expect((await other.claim([reserved, sent], true)).get(sent)?.kind).toBe('claimed');
    // A claim let go without a lookup is free for the next.
    await other.settle([[sent, { kind: 'released' }]]);
    expect((await other.answers([sent])).get(sent)).toEqual({ kind: 'released' });
    expect(await sqlOn(db.url, "SELECT claimant FROM dnc.members WHERE claimant = 'dead'")).toEqual([]);
  });

  it("a colleague's verdict is reused within the validity window, however long after it came", async () => {
    const [a, b] = [await machine('va'), await machine('vb')];
    const n = '+12025556000';
    expect((await a.claim([n], false)).get(n)?.kind).toBe('claimed');
    await a.sending([n]);
    await a.settle([[n, { kind: 'answered', country: 'US', answer: answer('callable', 'v-1') }]]);
    // Settled an hour ago: older than a lease, well within 31 days.
    await sqlOn(db.url, `UPDATE dnc.claims SET settled_at = now() - interval '1 hour' WHERE e164 = '${n}'`);
    expect((await b.claim([n], false, [31 * 86_400_000])).get(n)).toMatchObject({ kind: 'answered', claimant: 'va' });
    // Outside the window (a day, for the test) it is looked up again.
    expect((await b.claim([n], false, [60_000])).get(n)?.kind).toBe('claimed');
  });

  it('migrations: ten processes at once apply each version once; a newer store is refused', async () => {
    const fresh = await freshDatabase();
    try {
      const all = await Promise.all(
        Array.from({ length: 10 }, () => openStores({ url: fresh.url, from: '--store' }, {}, home)),
      );
      await Promise.all(all.map((s) => s.ready()));
      const rows = await sqlOn(
        fresh.url,
        'SELECT version, count(*)::int AS n FROM dnc.schema_migrations GROUP BY version ORDER BY version',
      );
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, n: 1 })));
      const status = await all[0]!.status();
      expect(status).toMatchObject({
        kind: 'postgres',
        schema_version: LATEST_VERSION,
        latest_version: LATEST_VERSION,
      });
      expect(status.where).not.toContain(new URL(fresh.url).password);
      for (const s of all) await s.close();
      await sqlOn(fresh.url, "INSERT INTO dnc.schema_migrations (version, name) VALUES (99, 'from the future')");
      const newer = await openStores({ url: fresh.url, from: '--store' }, {}, home);
      await expect(newer.ready()).rejects.toMatchObject({ code: 'E_STORE_TOO_NEW', exitCode: 2 });
      await newer.close();
    } finally {
      await fresh.drop();
    }
  });

  it('a server that is not there is a typed error (exit 6) that names the store without its password', async () => {
    const stores = await openStores({ url: 'postgresql://dnc:s3cret-pw@127.0.0.1:1/dnc', from: '--store' }, {}, home);
    const err = await stores.ready().then(
      () => null,
      (e: unknown) => e as { code: string; exitCode: number; message: string },
    );
    expect(err).toMatchObject({ code: 'E_STORE_UNAVAILABLE', exitCode: 6 });
    expect(err!.message).toContain('postgresql://dnc@127.0.0.1:1/dnc');
    expect(err!.message).not.toContain('s3cret-pw');
    await stores.close();
  });
});
