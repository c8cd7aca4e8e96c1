// `dnc store status` says where a team store is: its host, port and database (and the role), whether they come from
// the URL or from PG* variables, and never the password, in the URL (plain or percent-encoded) or in PGPASSWORD.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDnc } from '../helpers/cli.js';
import { freshDatabase, HAVE_POSTGRES, postgresSkipped, sqlOn } from '../helpers/postgres.js';

postgresSkipped('dnc store status names host, port and database');

describe.skipIf(!HAVE_POSTGRES)('dnc store status: where the team store is, never its password', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let home: string;
  const role = `dnc_addr_${randomBytes(4).toString('hex')}`;
  // Characters a URL must percent-encode, and a "%41" that decodes to "A" if decoded twice.
  const password = `p@ss w/rd:%41-${randomBytes(4).toString('hex')}`;
  const encoded = encodeURIComponent(password);
  let host: string;
  let port: string;
  beforeAll(async () => {
    db = await freshDatabase();
    home = mkdtempSync(path.join(os.tmpdir(), 'dnc-store-address-'));
    await sqlOn(db.url, `CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    await sqlOn(db.url, `ALTER DATABASE ${db.name} OWNER TO ${role}`);
    const u = new URL(db.url);
    host = u.hostname;
    port = u.port || '5432';
  });
  afterAll(async () => {
    await db?.drop();
    await sqlOn(db.url.replace(`/${db.name}`, '/postgres'), `DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string>) => ({
    HOME: home,
    USER: 'carol',
    XDG_STATE_HOME: path.join(home, 'state'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    ...extra,
  });

  const cases: Array<[string, () => Record<string, string>]> = [
    [
      'a percent-encoded password in the URL',
      () => env({ DNC_STORE: `postgresql://${role}:${encoded}@${host}:${port}/${db.name}` }),
    ],
    [
      'host, port, database, user and password from PG* variables (the URL names none)',
      () =>
        env({
          DNC_STORE: 'postgresql://',
          PGHOST: host,
          PGPORT: port,
          PGDATABASE: db.name,
          PGUSER: role,
          PGPASSWORD: password,
        }),
    ],
    [
      'the password in PGPASSWORD, the rest in the URL',
      () => env({ DNC_STORE: `postgresql://${role}@${host}:${port}/${db.name}`, PGPASSWORD: password }),
    ],
  ];

  it.each(cases)('%s', async (_what, envOf) => {
    const human = await runDnc(['store', 'status'], { env: envOf() });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(
      `store: team (PostgreSQL): host ${host}, port ${port}, database ${db.name}, user ${role}\n`,
    );
    const json = await runDnc(['--json', 'store', 'status'], { env: envOf() });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      kind: 'postgres',
      host,
      port: Number(port),
      database: db.name,
      user: role,
    });
    for (const out of [human.stdout, human.stderr, json.stdout, json.stderr]) {
      expect(out).not.toContain(password);
      expect(out).not.toContain(encoded);
      expect(out).not.toContain(password.slice(0, 8));
    }
  });

  it('a plain password in the URL: shown nowhere, the address still whole', async () => {
    const plain = `Plain${randomBytes(6).toString('hex')}`;
    await sqlOn(db.url, `ALTER ROLE ${role} PASSWORD '${plain}'`);
    try {
      const r = await runDnc(['store', 'status'], {
        env: env({ DNC_STORE: `postgres://${role}:${plain}@${host}:${port}/${db.name}` }),
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`host ${host}, port ${port}, database ${db.name}`);
      expect(r.stdout + r.stderr).not.toContain(plain);
    } finally {
      await sqlOn(db.url, `ALTER ROLE ${role} PASSWORD '${password}'`);
    }
  });
});
