// Bench item 14: what a team's PostgreSQL store costs a batch. The same batch (64 in flight, the sandbox answering in
// 100 ms) with the local store and with the team store, rounds interleaved; each team run gets a fresh database (a
// second run on one store would reuse the first's answers, as it should, and send nothing).
import path from 'node:path';
import { lookupRate } from './lib.mjs';

export const TEAM_CONCURRENCY = 64;
export const TEAM_LATENCY_MS = 100;

/** The server the bench may use: DNC_BENCH_POSTGRES (a URL), else the PG* variables (as `pg_virtualenv` sets them). */
export function benchServer(env = process.env) {
  if (env.DNC_BENCH_POSTGRES) return env.DNC_BENCH_POSTGRES;
  if (!env.PGHOST && !env.PGPORT) return null;
  const u = new URL('postgresql://localhost');
  u.hostname = env.PGHOST && !env.PGHOST.startsWith('/') ? env.PGHOST : 'localhost';
  u.port = env.PGPORT ?? '5432';
  u.username = env.PGUSER ?? 'postgres';
  if (env.PGPASSWORD) u.password = env.PGPASSWORD;
  u.pathname = '/postgres';
  return u.toString();
}

async function withAdmin(server, sql) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Runs the item: `batchOnce(storeUrl | null, tag)` runs one batch and returns the sandbox's requests; rounds are
 * interleaved (local, team, local, team …) so that a machine's drift weighs on both alike.
 */
export async function teamStoreItem({ server, rounds, batchOnce, record }) {
  const local = [];
  const team = [];
  for (let i = 0; i < rounds; i++) {
    local.push(lookupRate(await batchOnce(null, `local-${i}`), TEAM_LATENCY_MS));
    const name = `dnc_bench_${process.pid}_${i}`;
    await withAdmin(server, `CREATE DATABASE ${name}`);
    try {
      const u = new URL(server);
      u.pathname = `/${name}`;
      team.push(lookupRate(await batchOnce(u.toString(), `team-${i}`), TEAM_LATENCY_MS));
    } finally {
      await withAdmin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  }
  const best = (runs) => runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  const l = best(local);
  const t = best(team);
  const bound = (TEAM_CONCURRENCY * 1000) / TEAM_LATENCY_MS;
  record({
    item: 14,
    what: `batch lookups/s with the team store (PostgreSQL), ${TEAM_CONCURRENCY} in flight, ${TEAM_LATENCY_MS} ms`,
    value: `${t.perSecond.toFixed(0)}/s`,
    reference: `local store ${l.perSecond.toFixed(0)}/s (bound ${bound}/s)`,
    ratio: t.perSecond / l.perSecond,
    goal: '≥ 0.95×',
    met: t.perSecond / l.perSecond >= 0.95,
    raw: { local, team, bound, count: t.count },
  });
  record({
    item: 14,
    what: 'local store, same batch and load',
    value: `${l.perSecond.toFixed(0)}/s`,
    reference: `bound ${bound}/s`,
    ratio: l.perSecond / bound,
  });
}

export const teamStoreInput = (dir) => path.join(dir, 'item14.csv');

/** Item 15: runners sharing one list through the team store, each with its own home, output and 16 in flight. */
export const RUNNERS = 4;
export const RUNNER_CONCURRENCY = 16;

/**
 * Runs the item: `scrub(storeUrl, runners)` runs `runners` batches of one list at once (each a machine of its own)
 * and returns the sandbox's requests. One runner, then four, each on a fresh database.
 */
export async function teamRunnersItem({ server, scrub, record }) {
  const rates = {};
  for (const runners of [1, RUNNERS]) {
    const name = `dnc_bench_${process.pid}_runners_${runners}`;
    await withAdmin(server, `CREATE DATABASE ${name}`);
    try {
      const u = new URL(server);
      u.pathname = `/${name}`;
      const requests = await scrub(u.toString(), runners);
      const numbers = requests.filter((r) => r.path === '/check_phone_number').map((r) => r.query.phone_number);
      rates[runners] = { ...lookupRate(requests, TEAM_LATENCY_MS), twice: numbers.length - new Set(numbers).size };
    } finally {
      await withAdmin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  }
  const one = rates[1];
  const many = rates[RUNNERS];
  record({
    item: 15,
    what: `${RUNNERS} runners on one list (team store), ${RUNNER_CONCURRENCY} in flight each, ${TEAM_LATENCY_MS} ms`,
    value: `${many.perSecond.toFixed(0)}/s, ${many.twice} charged twice`,
    reference: `one runner ${one.perSecond.toFixed(0)}/s`,
    ratio: many.perSecond / one.perSecond,
    goal: '≥ 3×, 0 charged twice',
    met: many.perSecond / one.perSecond >= 3 && many.twice === 0,
    raw: rates,
  });
}
