#!/usr/bin/env node
// `npm run soak`: reliability under crashes, storms, exhaustion and bad input, checked as counted invariants.
//
//   npm run soak [-- --ci] [--kills N] [--only storm,listen,attacks,credits,corpus,hostile,evidence] [--keep]   (SOAK_PROFILE=ci = --ci)
//
// Each step starts its own sandbox as a child process (`node bin/dnc.js sandbox --port 0 --key <test key>`),
// runs `node bin/dnc.js batch|listen` as child processes in a scratch folder, and checks what they left
// behind against the sandbox's own logs (GET /_sandbox/requests, lookups, pushes). The last step scans
// every stdout, stderr and file of every step for the test key. Exits 1 when any invariant fails.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID, createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { auNumber, assertBuilt, BIN, expectedResult, gbNumber, machine, OUT_DIR, parseArgs, ROOT, runDnc, scratchDir, sleep, stamp, startSandboxChild, table, usNumber, writeCsv } from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
const ci = args.ci === true || process.env.SOAK_PROFILE === 'ci';
const PROFILE = ci
  ? { name: 'ci', stormRows: 5_000, kills: 3, stormLatencyMs: 20, stormConcurrency: 16, listenLookups: 1_000, listenKills: 3, creditRows: 400, attackRows: 100 }
  : { name: 'full', stormRows: 5_000, kills: 20, stormLatencyMs: 30, stormConcurrency: 8, listenLookups: 10_000, listenKills: 3, creditRows: 2_000, attackRows: 400 };
if (args.kills !== undefined) PROFILE.kills = Number(args.kills);
const STEPS = ['storm', 'listen', 'attacks', 'credits', 'corpus', 'hostile', 'evidence'];
const only = new Set(args.only ? String(args.only).split(',') : STEPS);
for (const s of only) if (!STEPS.includes(s)) throw new Error(`--only: no step '${s}' (steps: ${STEPS.join(', ')})`);
assertBuilt();

const { parse } = await import('csv-parse/sync');
const { default: Database } = await import('better-sqlite3');

// The test key: random, so a leak can only come from this run.
const KEY = `sbx_soak_${randomBytes(12).toString('hex')}`;
const tmp = scratchDir('dnc-soak');
const log = (s) => process.stderr.write(`${s}\n`);

/** Invariant name → { checked, failed, failures (first few details) }. */
const invariants = new Map();
function check(name, ok, detail = '') {
  const inv = invariants.get(name) ?? { checked: 0, failed: 0, failures: [] };
  invariants.set(name, inv);
  inv.checked++;
  if (!ok) {
    inv.failed++;
    if (inv.failures.length < 5) inv.failures.push(detail);
    log(`  FAILED: ${name}${detail ? `: ${detail}` : ''}`);
  }
  return ok;
}
/** Figures reported beside the invariants (counts of what happened). */
const counts = {};

/** Every stdout/stderr seen, for the key-leak step. */
const streams = [];
const sandboxes = [];

async function sandbox(flags) {
  const sb = await startSandboxChild(['--key', KEY, '--seed', '7', ...flags]);
  sandboxes.push(sb);
  return sb;
}

async function closeSandbox(sb) {
  await sb.close();
  // The sandbox prints the key on its DNC_API_KEY line by design; everything else it wrote is checked.
  streams.push({ what: 'dnc sandbox stdout (DNC_API_KEY line excluded)', text: sb.stdout().replace(/^DNC_API_KEY=.*$/m, '') });
  streams.push({ what: 'dnc sandbox stderr', text: sb.stderr() });
}

function dncEnv(sb) {
  // A home folder that exists: dnc never makes one, and would then keep no state.
  mkdirSync(path.join(tmp.dir, 'home'), { recursive: true });
  return { ...sb.env, HOME: path.join(tmp.dir, 'home'), XDG_CONFIG_HOME: path.join(tmp.dir, 'config'), XDG_CACHE_HOME: path.join(tmp.dir, 'cache') };
}

/** `dnc ...argv` as a child; its output is kept for the leak step. */
/** dnc processes still running: a step that fails part-way kills its own (SIGKILL, by pid) so the soak can end. */
const live = new Set();

async function dnc(what, argv, options = {}) {
  let child;
  const r = await runDnc(argv, {
    rusage: false,
    cwd: tmp.dir,
    ...options,
    onStart: (c) => {
      child = c;
      live.add(c);
      options.onStart?.(c);
    },
  });
  live.delete(child);
  streams.push({ what: `${what} stdout`, text: r.stdout }, { what: `${what} stderr`, text: r.stderr });
  return r;
}

/**
 * `dnc ...argv` as a child whose stderr is watched: `said` resolves with true once `pattern` appears,
 * with false when it exits first; `kill(signal)` signals it.
 */
function dncWatched(what, argv, env, pattern) {
  let child;
  let tell;
  const said = new Promise((resolve) => (tell = resolve));
  const done = dnc(what, argv, {
    env,
    onStart: (c) => {
      child = c;
      let seen = '';
      c.stderr.on('data', (d) => {
        seen += d;
        if (pattern.test(seen)) tell(true);
      });
    },
  });
  void done.then(() => tell(false));
  return { done, said, kill: (signal) => child?.kill(signal) };
}

function killLeftovers() {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function readCsv(file) {
  return parse(readFileSync(file), { bom: true, relax_column_count: false });
}

const DNC_COLUMNS = ['dnc_phone_e164', 'dnc_country', 'dnc_result', 'dnc_do_not_call', 'dnc_list_source', 'dnc_checked_at', 'dnc_correlation_id', 'dnc_error_code', 'dnc_error', 'dnc_credits', 'dnc_exemption', 'dnc_valid_until', 'dnc_time_zones', 'dnc_calling_window'];

/**
 * The output against its input: parses, header = input header + dnc columns, every input row once and in
 * order with its cells unchanged, each verdict the one the sandbox's number rules give. Returns the rows as objects.
 */
function checkOutput(step, input, output, verdict) {
  let inRows;
  let outRows;
  try {
    inRows = readCsv(input);
    outRows = readCsv(output);
  } catch (err) {
    check(`${step}: the output parses as CSV`, false, err.message);
    return [];
  }
  check(`${step}: the output parses as CSV`, true);
  const [inHead, ...inData] = inRows;
  const [outHead, ...outData] = outRows;
  check(`${step}: output header = input header + the dnc_* columns`, JSON.stringify(outHead) === JSON.stringify([...inHead, ...DNC_COLUMNS]), JSON.stringify(outHead));
  check(`${step}: output has as many rows as the input`, outData.length === inData.length, `${outData.length} rows, input ${inData.length}`);
  const objects = [];
  let misplaced = 0;
  let wrong = 0;
  for (let i = 0; i < inData.length; i++) {
    const row = outData[i] ?? [];
    if (JSON.stringify(row.slice(0, inHead.length)) !== JSON.stringify(inData[i])) {
      if (misplaced++ < 3) check(`${step}: every input row exactly once, in order, cells unchanged`, false, `line ${i + 2}: ${JSON.stringify(row.slice(0, inHead.length))} vs input ${JSON.stringify(inData[i])}`);
    } else check(`${step}: every input row exactly once, in order, cells unchanged`, true);
    const o = Object.fromEntries(outHead.map((h, k) => [h, row[k]]));
    objects.push(o);
    const want = verdict(inData[i], o);
    if (o.dnc_result !== want) {
      if (wrong++ < 3) check(`${step}: every row has the verdict the number rules give`, false, `line ${i + 2} (${o.dnc_phone_e164 || inData[i].join(',')}): ${o.dnc_result}, expected ${want}`);
    } else check(`${step}: every row has the verdict the number rules give`, true);
  }
  if (misplaced > 3) check(`${step}: every input row exactly once, in order, cells unchanged`, false, `${misplaced} rows in all`);
  if (wrong > 3) check(`${step}: every row has the verdict the number rules give`, false, `${wrong} rows in all`);
  return objects;
}

/** Charged lookups per number from the sandbox's lookup log. */
function chargesByNumber(lookups) {
  const m = new Map();
  for (const l of lookups) if (l.charged) m.set(l.phoneNumber, (m.get(l.phoneNumber) ?? 0) + 1);
  return m;
}

/** How many numbers a resumed run said it re-sends (they were in flight at the crash and may have been charged; --resend-unanswered). */
function reportedResends(stderr) {
  const all = [...stderr.matchAll(/--resend-unanswered: (\d+) number\(s\) whose earlier send got no answer are sent again/g)].map((m) => Number(m[1]));
  return all.length ? Math.max(...all) : 0;
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const rand = (lo, hi) => lo + Math.random() * (hi - lo);

// ─── 1. Batch crash storm ────────────────────────────────────────────────────────────────────────────────────

async function crashStorm() {
  const rows = PROFILE.stormRows;
  const concurrency = PROFILE.stormConcurrency;
  log(`[storm] ${rows.toLocaleString('en-US')}-row batch, sandbox latency ${PROFILE.stormLatencyMs} ms, --concurrency ${concurrency}, SIGKILL ${PROFILE.kills} times at random moments, rerun until done`);
  const dir = path.join(tmp.dir, 'storm');
  mkdirSync(dir);
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, 'calls.results.csv');
  // Mostly US, some GB; every 10th row repeats an earlier number; a few rows of each special outcome and unparseable cells.
  const special = ['990', '991', '992', '995', '996'];
  const phoneOf = (i) => {
    if (i % 10 === 9) return phoneOf(i - 7);
    if (i % 97 === 13) return 'call me maybe';
    if (i % 53 === 7) return `+1202${600 + (i % 50)}0${special[i % special.length]}`;
    return i % 4 === 0 ? gbNumber(i) : usNumber(i);
  };
  await writeCsv(input, ['id', 'name', 'phone'], rows, (i) => [String(i + 1), `"Contact ${i}, Inc."`, phoneOf(i)]);
  const hash = sha256(input);
  const sb = await sandbox(['--latency-ms', String(PROFILE.stormLatencyMs), '--credit-limit', '100000000']);
  const env = dncEnv(sb);
  // Numbers a killed run sent without getting the answer are sent again only when asked: the storm asks every time.
  const argv = ['batch', input, '-o', output, '--concurrency', String(concurrency), '--resend-unanswered'];
  // The list holds charged billing failures (…995): rows with no verdict that no rerun changes, so a finished batch exits 7.
  const FINISHED = 7;
  let kills = 0;
  let resends = 0;
  let runs = 0;
  let finalCode = null;
  try {
    while (kills < PROFILE.kills) {
      // The batch says so on stderr once it has read the input (or resumed) and starts sending.
      const run = dncWatched(`storm run ${runs + 1}`, argv, env, /distinct number\(s\) to look up|^Resuming /m);
      runs++;
      // A quarter of the kills at any moment from the start (reading the input, opening the journal), the rest while lookups are in flight.
      const moment = Math.random() < 0.25 ? sleep(rand(30, 800)) : run.said.then(() => sleep(rand(0, 1000)));
      const killed = await Promise.race([run.done.then(() => false), moment.then(() => true)]);
      if (killed) {
        run.kill('SIGKILL');
        kills++;
      }
      const res = await run.done;
      resends += reportedResends(res.stderr);
      if (!killed || res.signal !== 'SIGKILL') {
        // It finished before the kill: the storm is over early.
        finalCode = res.code;
        check('storm: a run that was not killed exits 7 (finished; charged billing failures have no verdict)', res.code === FINISHED, `exit ${res.code}: ${res.stderr.slice(-300)}`);
        break;
      }
    }
    for (let i = 0; finalCode !== FINISHED && i < 3; i++) {
      const res = await dnc(`storm final run ${i + 1}`, argv, { env });
      runs++;
      resends += reportedResends(res.stderr);
      finalCode = res.code;
    }
    check('storm: the batch completes (exit 7: finished, charged failures without a verdict) after the kills', finalCode === FINISHED, `exit ${finalCode}`);
    check('storm: the input is unchanged (SHA-256)', sha256(input) === hash);
    // Each kill may have caught a render mid-write: the next run removes what a dead writer left (it holds numbers).
    const leftovers = readdirSync(dir).filter((f) => f.startsWith('.') && f.endsWith('.tmp'));
    check('storm: no temporary file of a killed run is left once the batch completes', leftovers.length === 0, leftovers.join(' '));
    const out = checkOutput('storm', input, output, (cells, o) => (o.dnc_phone_e164 === '' ? 'invalid' : expectedResult(o.dnc_phone_e164)));
    const lookups = await sb.lookups();
    const charges = chargesByNumber(lookups);
    const extra = [...charges.values()].reduce((s, c) => s + (c - 1), 0);
    const distinct = new Set(out.map((o) => o.dnc_phone_e164).filter(Boolean));
    // Every outcome in this file costs credits except billing_error with charged: false (…996).
    const chargeable = [...distinct].filter((n) => n.slice(-3) !== '996');
    const uncharged = chargeable.filter((n) => !charges.has(n));
    check('storm: every distinct number that costs credits was charged (none lost)', uncharged.length === 0, `${uncharged.length} never charged, e.g. ${uncharged.slice(0, 3).join(' ')}`);
    check(`storm: charges beyond one per number ≤ concurrency × kills (${concurrency} × ${kills})`, extra <= concurrency * kills, `${extra} extra charges`);
    check('storm: charges beyond one per number ≤ re-sends dnc reported', extra <= resends, `${extra} extra charges, ${resends} re-sends reported`);
    check(`storm: re-sends reported ≤ concurrency × kills`, resends <= concurrency * kills, `${resends} reported`);
    Object.assign(counts, {
      storm_rows: rows,
      storm_distinct_numbers: distinct.size,
      storm_kills: kills,
      storm_runs: runs,
      storm_lookup_requests: (await sb.requests()).filter((q) => q.path === '/check_phone_number').length,
      storm_charged_lookups: [...charges.values()].reduce((s, c) => s + c, 0),
      storm_extra_charges: extra,
      storm_resends_reported: resends,
    });
  } finally {
    await closeSandbox(sb);
  }
}

// ─── 2. Listener storm ───────────────────────────────────────────────────────────────────────────────────────

function readJournal(file) {
  const db = new Database(file, { readonly: true });
  try {
    return {
      pushes: db.prepare('SELECT correlation_id, outcome, duplicates FROM pushes ORDER BY id').all(),
      numbers: db.prepare('SELECT e164, state, correlation_id FROM numbers').all(),
    };
  } finally {
    db.close();
  }
}

/** `dnc listen` as a child; `said` resolves once it prints its address (false when it exits first). */
function startListen(what, argv, env) {
  return dncWatched(what, ['listen', ...argv], env, /listening on/);
}

/** Failed push attempts by why: no connection (listener down), no answer in time, or the listener's status. */
function failureReasons(pushes) {
  const out = {};
  for (const p of pushes) {
    if (p.status >= 200 && p.status < 300) continue;
    const why = p.status !== undefined ? `status ${p.status}` : /timeout/.test(p.error) ? 'reply timeout' : p.error;
    out[why] = (out[why] ?? 0) + 1;
  }
  return out;
}

async function listenerStorm() {
  const n = PROFILE.listenLookups;
  // Time scale 0.05: results 0.1 s after the receipt (AU 1.5 s, 3 s or 6 s), retries from 1.5 s, reply limit 0.5 s.
  log(`[listen] ${n.toLocaleString('en-US')} webhook lookups, sandbox duplicate-push-rate 0.3, time scale 0.05 (pushes shuffled by AU delays and retries), listener SIGKILLed ${PROFILE.listenKills} times and restarted`);
  const dir = path.join(tmp.dir, 'listen');
  mkdirSync(dir);
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, 'calls.results.csv');
  const journalFile = `${output}.journal.sqlite`;
  const special = ['990', '995', '996'];
  // 60 % US, 20 % GB, 20 % AU (three result delays); 1 % of each pushed failure.
  const phoneOf = (i) => {
    if (i % 100 < 3) return `+1202${600 + Math.floor(i / 1000)}${Math.floor(i / 100) % 10}${special[i % 3]}`;
    if (i % 5 === 0) return gbNumber(i);
    if (i % 5 === 1) return auNumber(i, i % 3);
    return usNumber(i);
  };
  await writeCsv(input, ['id', 'phone'], n, (i) => [String(i + 1), phoneOf(i)]);
  const port = await freePort();
  const pushPath = `/hooks/soak-${randomBytes(8).toString('hex')}`;
  const url = `http://127.0.0.1:${port}${pushPath}`;
  const sb = await sandbox(['--allow-insecure-webhooks', '--time-scale', '0.05', '--duplicate-push-rate', '0.3', '--credit-limit', '100000000']);
  const env = dncEnv(sb);
  const listenArgs = ['--results', output, '--port', String(port), '--path', pushPath];
  const orphanIds = [];
  try {
    const batch = dnc('listen: batch', ['batch', input, '-o', output, '--webhook-all', '--webhook-url', url, '--allow-insecure-webhook-url', '--concurrency', '16'], { env });
    // The listener needs the batch's journal: start it as soon as the batch has made one.
    let batchDone = false;
    void batch.then(() => (batchDone = true));
    const startUntilListening = async (what, extra = [], mayFinish = false) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        if (!existsSync(journalFile)) {
          await sleep(50);
          continue;
        }
        const l = startListen(what, [...listenArgs, ...extra], env);
        if (await l.said) return l;
        const early = await l.done;
        if (mayFinish && early.code === 0) return l;
        if (early.code !== 2 && early.code !== 3) throw new Error(`dnc listen exited ${early.code}: ${early.stderr}`);
        await sleep(100); // the journal existed but the batch had not finished writing its metadata
      }
      throw new Error('dnc listen never started');
    };
    let listener = await startUntilListening('listen run 1');
    let kills = 0;
    let storeFailures = 0;
    const storeFailureKinds = new Set();
    for (let k = 0; k < PROFILE.listenKills; k++) {
      await sleep(rand(300, ci ? 900 : 2500));
      listener.kill('SIGKILL');
      const r = await listener.done;
      if (r.signal === 'SIGKILL') kills++;
      storeFailures += (r.stderr.match(/could not store/g) ?? []).length;
      for (const line of r.stderr.match(/could not store.*$/gm) ?? []) storeFailureKinds.add(line.replace(/\d+ push/, 'N push'));
      if (k === 0) {
        // Pushes for lookups the batch never made: kept as orphans, applied to nothing.
        listener = await startUntilListening(`listen run ${k + 2}`);
        await sleep(300);
        for (let j = 0; j < 10; j++) orphanIds.push(randomUUID());
        for (const id of orphanIds) {
          const body = { status: 'succeeded', error_code: null, correlation_id: id, phone_number: '+12025550142', country: 'US', do_not_call: false, timestamp: '2026-11-21T23:30:00.000000+00:00', dnc_list_source: 'https://sandbox.dnc.invalid/registers/US', cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 1 } };
          // Retried on 5xx as the service would (the listener answers 503 when it could not store a push).
          let status = 0;
          for (let attempt = 0; attempt < 10 && !(status >= 200 && status < 300); attempt++) {
            if (attempt > 0) await sleep(100 * attempt);
            try {
              const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'Service-Webhooks/1.0', 'x-service-correlation-id': id, 'x-service-phone-number': '+12025550142', 'x-service-country': 'US', 'x-service-status': '200' }, body: JSON.stringify(body) });
              await res.text();
              status = res.status;
            } catch (err) {
              status = String(err.cause?.code ?? err.message); // no answer: retried, as the service would
              continue;
            }
            if (status < 500) break;
          }
          check('listen: an orphan push is acknowledged 2xx (5xx retried)', status >= 200 && status < 300, `status ${status}`);
        }
        continue;
      }
      await sleep(rand(100, 600));
      if (k < PROFILE.listenKills - 1) listener = await startUntilListening(`listen run ${k + 2}`);
    }
    const final = await startUntilListening('listen final run', ['--exit-when-done', '--json'], true);
    const result = await Promise.race([final.done, sleep(ci ? 90_000 : 240_000, { unref: true }).then(() => null)]);
    if (result === null) final.kill('SIGKILL');
    const b = await batch;
    check('listen: the batch exits 0 or 8 (pending)', b.code === 0 || b.code === 8, `exit ${b.code}: ${b.stderr.slice(-300)}`);
    check('listen: the final listener exits 0 (nothing pending)', result?.code === 0, result ? `exit ${result.code}: ${result.stderr.slice(-400)}` : 'timed out');
    let summary = {};
    try {
      summary = JSON.parse(result?.stdout ?? '{}');
    } catch {
      check('listen: --json summary parses', false, result?.stdout);
    }
    check('listen: --json says done, 0 pending', summary.stopped_reason === 'done' && summary.pending === 0, JSON.stringify(summary).slice(0, 300));
    check(`listen: the listener was SIGKILLed ${PROFILE.listenKills} times`, kills === PROFILE.listenKills, `${kills} kills`);
    const out = checkOutput('listen', input, output, (_cells, o) => expectedResult(o.dnc_phone_e164));
    const lookups = await sb.lookups();
    const pushes = await sb.pushes();
    const j = readJournal(journalFile);
    const applied = j.pushes.filter((p) => p.outcome === 'applied').map((p) => p.correlation_id);
    const appliedSet = new Set(applied);
    const lookupIds = new Set(lookups.map((l) => l.correlationId));
    check('listen: one applied push per lookup (no lookup resolved twice)', applied.length === appliedSet.size, `${applied.length - appliedSet.size} applied twice`);
    check('listen: the applied pushes are exactly the lookups made (nothing lost)', appliedSet.size === lookupIds.size && [...lookupIds].every((id) => appliedSet.has(id)), `${appliedSet.size} applied, ${lookupIds.size} lookups`);
    check('listen: the sandbox made one lookup per row', lookups.length === n, `${lookups.length} lookups for ${n} rows`);
    const notDone = j.numbers.filter((x) => x.state !== 'done');
    check('listen: every number of the journal is done', notDone.length === 0, `${notDone.length} not done, e.g. ${JSON.stringify(notDone[0])}`);
    const outIds = new Set(out.map((o) => o.dnc_correlation_id));
    check('listen: every output row carries its lookup’s correlation id', out.every((o) => lookupIds.has(o.dnc_correlation_id)) && outIds.size === lookupIds.size);
    const orphanRows = j.pushes.filter((p) => p.outcome === 'orphan').map((p) => p.correlation_id).sort();
    check('listen: the orphans kept are exactly the pushes of unknown lookups', JSON.stringify(orphanRows) === JSON.stringify([...orphanIds].sort()), `${orphanRows.length} orphan rows, ${orphanIds.length} sent`);
    check('listen: no push given up by the sandbox', !pushes.some((p) => p.outcome === 'gave_up'), `${pushes.filter((p) => p.outcome === 'gave_up').length} given up`);
    const delivered = pushes.filter((p) => p.status >= 200 && p.status < 300);
    // How shuffled the arrivals were: deliveries whose lookup was made before the previous delivery's.
    const receiptOrder = new Map(lookups.map((l, i) => [l.correlationId, i]));
    let descents = 0;
    for (let i = 1; i < delivered.length; i++) if (receiptOrder.get(delivered[i].correlationId) < receiptOrder.get(delivered[i - 1].correlationId)) descents++;
    Object.assign(counts, {
      listen_lookups: n,
      listen_push_attempts: pushes.length,
      listen_pushes_delivered_2xx: delivered.length,
      listen_duplicate_pushes_sent: pushes.filter((p) => p.duplicate).length,
      listen_deliveries_out_of_receipt_order: descents,
      listen_failed_attempts_retried: pushes.filter((p) => p.outcome === 'retry').length,
      listen_failed_attempts_by_reason: failureReasons(pushes),
      listen_duplicates_counted_in_journal: j.pushes.reduce((s, p) => s + p.duplicates, 0),
      listen_orphans: orphanRows.length,
      listen_reconciled_last_run: summary.reconciled ?? null,
      listen_kills: kills,
      listen_store_failures_answered_503: storeFailures + (result?.stderr.match(/could not store/g) ?? []).length,
      listen_store_failure_messages: [...storeFailureKinds].slice(0, 3),
      listen_batch_exit: b.code,
    });
  } finally {
    await closeSandbox(sb);
  }
}

// ─── 2b. Attacks on the listener ─────────────────────────────────────────────────────────────────────────────

/** POSTs raw JSON to the listener; the status (or the network error's code) and the Retry-After header. */
async function postPush(url, body, headers = {}) {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'Service-Webhooks/1.0', ...(body.correlation_id ? { 'x-service-correlation-id': body.correlation_id } : {}), ...headers }, body: JSON.stringify(body) });
    await res.text();
    return { status: res.status, retryAfter: res.headers.get('retry-after') };
  } catch (err) {
    return { status: String(err.cause?.code ?? err.message), retryAfter: null };
  }
}

async function listenerAttacks() {
  const n = PROFILE.attackRows;
  log(`[attacks] ${n} AU webhook lookups (results after 6 s); meanwhile forged verdicts for half of them, mismatched pushes for the rest, wrong paths, a 24 MB orphan flood, 300 half-open connections`);
  const dir = path.join(tmp.dir, 'attacks');
  mkdirSync(dir);
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, 'calls.results.csv');
  const journalFile = `${output}.journal.sqlite`;
  await writeCsv(input, ['id', 'phone'], n, (i) => [String(i + 1), auNumber(i + 500, 2)]);
  const port = await freePort();
  const pushPath = `/hooks/${randomBytes(16).toString('base64url')}`;
  const url = `http://127.0.0.1:${port}${pushPath}`;
  const sb = await sandbox(['--allow-insecure-webhooks', '--time-scale', '0.05', '--credit-limit', '100000000']);
  const env = dncEnv(sb);
  try {
    // 0. Configuration that would send the key elsewhere: a config file others may write (its base_url could be
    // anyone's) is refused; a webhook URL carrying the key in another form (case, base64url, hex) is refused.
    const configFile = path.join(dir, 'shared-config.json');
    writeFileSync(configFile, JSON.stringify({ base_url: 'https://attacker.invalid' }));
    chmodSync(configFile, 0o666);
    const writable = await dnc('attacks: a config others may write', ['--config', configFile, 'usage'], { env });
    check('attacks: a config file others may write is refused (exit 2, E_CONFIG_INSECURE)', writable.code === 2 && writable.stderr.includes('[E_CONFIG_INSECURE]'), `exit ${writable.code}: ${writable.stderr.slice(-200)}`);
    const lookups = async () => (await sb.requests()).filter((q) => q.path === '/check_phone_number').length;
    for (const [form, value] of [['upper case', KEY.toUpperCase()], ['base64url', Buffer.from(`id:${KEY}`).toString('base64url')], ['hex', Buffer.from(KEY).toString('hex')]]) {
      const before = await lookups();
      const r = await dnc(`attacks: webhook URL with the key (${form})`, ['check', '+61412345101', '--webhook-url', `http://127.0.0.1:9/hooks?t=${value}`, '--allow-insecure-webhook-url'], { env });
      check('attacks: a webhook URL carrying the key (upper case, base64url, hex) is refused, nothing sent', r.code === 2 && r.stderr.includes('carries the API key') && (await lookups()) === before, `${form}: exit ${r.code}`);
    }
    const b = await dnc('attacks: batch', ['batch', input, '-o', output, '--webhook-url', url, '--allow-insecure-webhook-url', '--concurrency', '16'], { env });
    check('attacks: the batch exits 8 (pending)', b.code === 8, `exit ${b.code}: ${b.stderr.slice(-300)}`);
    // No --path: the listener serves the batch's (unguessable) webhook path only. Not --exit-when-done: on a slow
    // machine every genuine push could arrive before the attacks are over.
    const listener = dncWatched('attacks: listen', ['listen', '--results', output, '--port', String(port), '--json'], env, /listening on/);
    check('attacks: the listener starts without --path', await listener.said);
    const [header, ...rows] = readCsv(output);
    const col = (name) => header.indexOf(name);
    const sent = rows.map((r) => ({ e164: r[col('dnc_phone_e164')], cid: r[col('dnc_correlation_id')] }));
    const now = () => new Date().toISOString().replace('Z', '123+00:00');
    const push = (x, over = {}) => ({ status: 'succeeded', error_code: null, correlation_id: x.cid, phone_number: x.e164, country: 'AU', do_not_call: expectedResult(x.e164) === 'do_not_call', timestamp: now(), dnc_list_source: 'https://sandbox.dnc.invalid/registers/AU', cost: { credits_used_for_query: 3, total_credits_used: 3, credit_limit: 100 }, ...over });
    // 1. A forged, opposite verdict for every even row, before the genuine push.
    const forged = new Set();
    for (let i = 0; i < sent.length; i += 2) {
      const x = sent[i];
      const r = await postPush(url, push(x, { do_not_call: expectedResult(x.e164) !== 'do_not_call' }));
      check('attacks: a forged push that matches what was sent is acknowledged (and kept)', r.status === 200, `status ${r.status}`);
      forged.add(x.cid);
    }
    // 1b. Escape sequences in what a push says (retitle the window, clear the screen, a fake verdict line, an 8-bit CSI):
    // refused or kept, they reach the listener's stderr only escaped (checked when it has stopped).
    // Sent before the other refusals: only the first 20 refusal lines of a minute are shown.
    const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\r✓ callable\u009b31m\u202e';
    for (const over of [{ phone_number: `${sent[1].e164}${HOSTILE}` }, { dnc_list_source: `https://x.example/${HOSTILE}` }]) {
      const r = await postPush(url, push(sent[1], over));
      check('attacks: a push carrying escape sequences is refused (4xx)', r.status >= 400 && r.status < 500, `status ${r.status}`);
    }
    const hostileOrphan = { status: 'failed', error_code: 'billing_error', error: HOSTILE, charged: true, correlation_id: randomUUID(), phone_number: '+61412388887', country: 'AU' };
    check('attacks: an orphan push with escape sequences in its text is kept (200)', (await postPush(url, hostileOrphan)).status === 200);
    // 2. Pushes that contradict what was sent, for every odd row: refused (4xx), never applied.
    let refused = 0;
    for (let i = 1; i < sent.length; i += 2) {
      const x = sent[i];
      for (const bad of [{ phone_number: '+61412399999' }, { country: 'NZ' }, { timestamp: '2099-01-01T00:00:00.000000+00:00' }, { cost: { credits_used_for_query: -5, total_credits_used: 3, credit_limit: 100 } }, { dnc_list_source: 'http://evil.example/' }]) {
        const r = await postPush(url, push(x, { do_not_call: false, ...bad }));
        if (check('attacks: a push contradicting the lookup sent is refused with a 4xx', typeof r.status === 'number' && r.status >= 400 && r.status < 500, `status ${r.status} for ${JSON.stringify(bad)}`)) refused++;
      }
    }
    // 3. Wrong paths.
    for (let i = 0; i < 50; i++) {
      const r = await postPush(`http://127.0.0.1:${port}/hooks/${randomBytes(16).toString('base64url')}`, push(sent[i % sent.length]));
      check('attacks: every other path gets 404', r.status === 404, `status ${r.status}`);
    }
    // 4. An orphan flood: 400 pushes of 60 KB for lookups nobody made.
    const flood = { ok: 0, capped: 0, retryAfter: 0 };
    for (let i = 0; i < 400; i++) {
      const r = await postPush(url, { ...push({ cid: randomUUID(), e164: '+61412388888' }), padding: 'x'.repeat(60_000) });
      if (r.status === 200) flood.ok++;
      else if (r.status === 503) {
        flood.capped++;
        if (Number(r.retryAfter) > 0) flood.retryAfter++;
      } else check('attacks: an orphan is kept (200) or refused for the cap (503)', false, `status ${r.status}`);
    }
    check('attacks: the orphan flood reaches the cap and gets 503 with Retry-After', flood.capped > 0 && flood.retryAfter === flood.capped, JSON.stringify(flood));
    // 5. Half-open connections: half a request header each, never finished.
    const sockets = [];
    for (let i = 0; i < 300; i++) {
      const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      sock.on('error', () => undefined);
      sock.once('connect', () => sock.write(`POST ${pushPath} HTTP/1.1\r\nHost: x\r\n`));
      sockets.push(sock);
    }
    // Right after the burst (none of them stalled yet, all from this address): /healthz on a new connection within 1 s.
    await Promise.all(sockets.map((sock) => new Promise((resolve) => (sock.connecting ? sock.once('connect', resolve).once('error', resolve) : resolve()))));
    const burstProbe = Date.now();
    const afterBurst = await new Promise((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 1_000 }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 1 s')));
      req.on('error', (err) => resolve(err.code ?? err.message));
    });
    check('attacks: /healthz answers within 1 s right after a burst of 300 half-open connections', afterBurst === 200 && Date.now() - burstProbe < 1_000, `${afterBurst} after ${Date.now() - burstProbe} ms`);
    // And a request whose headers are complete but whose body trickles, a byte a second: 408 once the request time
    // is up (15 s), the connection then closed by the listener. Opened once the half-open ones have stalled for a
    // second (at the cap it takes the place of one of them; later newcomers replace older stalled ones first).
    await sleep(1_200);
    const trickle = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    trickle.on('error', () => undefined);
    const trickleStarted = Date.now();
    let trickled = '';
    trickle.setEncoding('utf8').on('data', (d) => (trickled += d));
    const trickleEnded = new Promise((resolve) => trickle.once('end', resolve));
    const dripper = setInterval(() => trickle.write('x'), 1_000);
    trickle.once('connect', () => trickle.write(`POST ${pushPath} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`));
    await sleep(1_500);
    // Stalled connections make way for new ones: a push (on a connection of its own, not one fetch kept alive) and
    // /healthz get through while all of them are held.
    const during = await new Promise((resolve) => {
      const req = http.request(url, { method: 'POST', agent: false, timeout: 5_000, headers: { 'content-type': 'application/json', 'x-service-correlation-id': sent[0].cid } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', (err) => resolve(err.code ?? err.message));
      req.end(JSON.stringify(push(sent[0])));
    });
    check('attacks: a push on a new connection is answered while 300 half-open connections and a trickling one are held', during === 200, `status ${during}`);
    let healthy = false;
    let firstProbe = true;
    const healthStarted = Date.now();
    // Each probe on a new connection (fetch would reuse one opened before the flood).
    const probe = () =>
      new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 2_000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
      });
    while (!healthy && Date.now() - healthStarted < 30_000) {
      healthy = await probe();
      if (firstProbe) check('attacks: /healthz on a new connection answers at once while the stalled connections are held', healthy);
      firstProbe = false;
      if (!healthy) await sleep(250);
    }
    check('attacks: /healthz answers again (new connection) within 30 s of 300 half-open connections', healthy, `${Date.now() - healthStarted} ms`);
    counts.attacks_healthz_back_after_ms = Date.now() - healthStarted;
    for (const sock of sockets) sock.destroy();
    await Promise.race([trickleEnded, sleep(Math.max(0, 25_000 - (Date.now() - trickleStarted)), { unref: true })]);
    clearInterval(dripper);
    check('attacks: a body that trickles is answered 408 and closed by the listener', trickled.startsWith('HTTP/1.1 408') && trickle.readableEnded, `after ${Date.now() - trickleStarted} ms: ${JSON.stringify(trickled.slice(0, 40))}`);
    trickle.destroy();
    // The genuine pushes (retried by the sandbox while connections were refused) resolve every lookup.
    const pendingLeft = () => {
      const db = new Database(journalFile, { readonly: true });
      try {
        return db.prepare("SELECT COUNT(*) AS n FROM numbers WHERE state = 'pending'").get().n;
      } finally {
        db.close();
      }
    };
    const waitStarted = Date.now();
    while (pendingLeft() > 0 && Date.now() - waitStarted < 180_000) await sleep(250);
    await sleep(1_500); // a render after the last push
    listener.kill('SIGINT');
    const result = await Promise.race([listener.done, sleep(60_000, { unref: true }).then(() => null)]);
    if (result === null) listener.kill('SIGKILL');
    check('attacks: the listener exits 0 when stopped with nothing pending', result?.code === 0, result ? `exit ${result.code}: ${result.stderr.slice(-400)}` : 'timed out');
    const out = readCsv(output).slice(1);
    let conflicts = 0;
    for (const r of out) {
      const cid = r[col('dnc_correlation_id')];
      const result_ = r[col('dnc_result')];
      const expected = expectedResult(r[col('dnc_phone_e164')]);
      if (forged.has(cid)) {
        if (check('attacks: a forged verdict followed by the genuine one makes the row failed (conflicting_pushes)', result_ === 'failed' && r[col('dnc_error_code')] === 'conflicting_pushes', `${cid}: ${result_} ${r[col('dnc_error_code')]}`)) conflicts++;
      } else check('attacks: a row whose forgeries were refused has the genuine verdict', result_ === expected, `${cid}: ${result_}, expected ${expected}`);
      check('attacks: no row is callable when the register lists the number', !(result_ === 'callable' && expected === 'do_not_call'), cid);
    }
    const db = new Database(journalFile, { readonly: true });
    const byOutcome = Object.fromEntries(db.prepare('SELECT outcome, COUNT(*) AS n FROM pushes GROUP BY outcome').all().map((x) => [x.outcome, x.n]));
    const orphanBytes = db.prepare("SELECT COALESCE(SUM(LENGTH(body)), 0) AS b FROM pushes WHERE outcome = 'orphan'").get().b;
    db.close();
    check('attacks: every refused push is kept as evidence', (byOutcome.refused ?? 0) >= refused, JSON.stringify(byOutcome));
    check('attacks: orphans kept stay within the byte cap (16 MiB)', orphanBytes <= 16 * 1024 * 1024, `${orphanBytes} bytes`);
    const warnings = (result?.stderr.match(/warning: conflicting pushes/g) ?? []).length;
    check('attacks: one warning per conflict on stderr', warnings === forged.size, `${warnings} warnings for ${forged.size} forged`);
    // Nothing a terminal acts on reached the listener's output (piped: no colour of its own either).
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
    check('attacks: no raw control character in the listener output', !raw.test(result?.stderr ?? '') && !raw.test(result?.stdout ?? ''), JSON.stringify((result?.stderr ?? '').match(/.{0,40}[\u0000-\u0008\u000b-\u001f\u007f-\u009f].{0,20}/)?.[0]));
    // Shown (escaped as \e or as JSON's \u001b), not dropped: the check above saw them.
    check('attacks: the refusals carrying escape sequences are shown', /(\\e|\\u001b)\]0;pwned/.test(result?.stderr ?? ''), '');
    // The journal, its companions and dnc's state and cache folders are the user's alone.
    for (const f of [journalFile, `${journalFile}-wal`, `${journalFile}-shm`]) {
      if (existsSync(f)) check('attacks: journal files are 0600', (statSync(f).mode & 0o777) === 0o600, `${path.basename(f)} ${(statSync(f).mode & 0o777).toString(8)}`);
    }
    await localAttacks(sb, env, dir);
    Object.assign(counts, {
      attacks_rows: n,
      attacks_forged: forged.size,
      attacks_conflicts: conflicts,
      attacks_refused: refused,
      attacks_pushes_by_outcome: byOutcome,
      attacks_orphan_flood: flood,
      attacks_orphan_bytes_kept: orphanBytes,
    });
  } finally {
    await closeSandbox(sb);
  }
}

/**
 * The attacks on local files and the process, with the attack step's sandbox: the key in every configuration
 * error path (the leak step scans what they print), folder modes, a stale lock whose pid now names another
 * process, and a full disk (a small tmpfs where this machine lets us mount one).
 */
async function localAttacks(sb, env, dir) {
  const home = env.HOME;
  // Configuration errors raised before the key is resolved: each names the variable, never the value.
  const keyCases = [
    ['the key as DNC_BASE_URL', ['usage'], { DNC_BASE_URL: KEY }, 'the base URL given by DNC_BASE_URL is not a URL'],
    ['the key as base URL credentials', ['usage'], { DNC_BASE_URL: `https://u:${KEY}@api.example.com` }, 'must not carry credentials'],
    ['the key as the --webhook-url password', ['check', '+61412345101', '--webhook-url', `https://u:${KEY}@hooks.example.com/x`], {}, "'https://***@hooks.example.com/x'"],
    ["commander's echo of --api_key=KEY", ['check', `--api_key=${KEY}`, '+12025550122'], { DNC_API_KEY: '' }, "unknown option '--api_key=***'"],
  ];
  for (const [what, argv, extra, says] of keyCases) {
    const r = await dnc(`attacks: ${what}`, argv, { env: { ...env, ...extra }, cwd: dir });
    check('attacks: a configuration error with the key in it is exit 2 and names where it came from', r.code === 2 && r.stderr.includes(says), `${what}: exit ${r.code}: ${r.stderr.slice(0, 200)}`);
  }
  // dnc's folders under HOME (state, cache) are 0700, their files 0600.
  const walk = (d) => readdirSync(d).flatMap((f) => {
    const p = path.join(d, f);
    return statSync(p).isDirectory() ? [p, ...walk(p)] : [p];
  });
  for (const root of [path.join(home, '.local', 'state', 'dnc'), path.join(env.XDG_CACHE_HOME, 'dnc')]) {
    if (!existsSync(root)) continue;
    for (const p of [root, ...walk(root)]) {
      const want = statSync(p).isDirectory() ? 0o700 : 0o600;
      check("attacks: dnc's state and cache files are 0600 in 0700 folders", (statSync(p).mode & 0o777) === want, `${path.relative(home, p)} ${(statSync(p).mode & 0o777).toString(8)}`);
    }
  }
  // A stale lock whose pid now belongs to another (live) process: taken over, even by --restart.
  const lockDir = path.join(dir, 'lock');
  mkdirSync(lockDir);
  writeFileSync(path.join(lockDir, 'in.csv'), 'phone\n+12025550100\n');
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const first = await dnc('attacks: lock batch', ['batch', 'in.csv', '-o', 'out.csv'], { env, cwd: lockDir });
    writeFileSync(path.join(lockDir, 'out.csv.journal.sqlite.lock'), `${other.pid}\n1\n`);
    const again = await dnc('attacks: stale lock batch', ['batch', 'in.csv', '-o', 'out.csv', '--restart'], { env, cwd: lockDir });
    check('attacks: a lock whose pid now names another process is stale (taken over)', first.code === 0 && again.code === 0, `exit ${first.code}, then ${again.code}: ${again.stderr.slice(-200)}`);
  } finally {
    other.kill();
  }
  // A full disk during lookups: exit 3 naming the journal, the numbers in flight reported, the journal consistent.
  const disk = mkdtempSync(path.join(os.tmpdir(), 'dnc-soak-full-'));
  let mounted = false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', disk], { stdio: 'ignore' });
    mounted = true;
  } catch {
    counts.attacks_full_disk = 'skipped: no tmpfs can be mounted here (test/attacks/faults.test.ts injects the write failure instead)';
  }
  if (mounted) {
    try {
      await writeCsv(path.join(disk, 'calls.csv'), ['phone'], 3_000, (i) => [usNumber(200_000 + i)]);
      writeFileSync(path.join(disk, 'ballast'), Buffer.alloc(1_200_000));
      const full = await dnc('attacks: full disk batch', ['batch', 'calls.csv', '-o', 'out.csv'], { env, cwd: disk });
      const journal = path.join(disk, 'out.csv.journal.sqlite');
      check('attacks: a full disk is exit 3 with E_DISK_FULL naming the journal, no stack trace', full.code === 3 && full.stderr.includes(`[E_DISK_FULL]: the disk is full: cannot write the batch journal ${journal}`) && !/SqliteError|at .*\.js:\d+/.test(full.stderr), `exit ${full.code}: ${full.stderr.slice(-300)}`);
      check('attacks: a full disk reports the lookups in flight', /\d+ lookup\(s\) answered \(and maybe charged\) could not be stored/.test(full.stderr), full.stderr.slice(-300));
      const db = new Database(journal, { readonly: true });
      const integrity = db.pragma('integrity_check', { simple: true });
      db.close();
      check('attacks: the journal is consistent after a full disk', integrity === 'ok', String(integrity));
      counts.attacks_full_disk = 'tmpfs of 2 MB';
    } finally {
      execFileSync('umount', [disk]);
    }
  }
  rmSync(disk, { recursive: true, force: true });
  await workbookBombs(env, dir);
}

/**
 * Workbooks whose row numbers lie (issue 25): a row past Excel's last one, a cell past XFD, and a gap of a million
 * rows within the limits. Each is answered at once and in little memory: refused, or read as the rows it holds.
 */
async function workbookBombs(env, dir) {
  const bad = path.join(ROOT, 'fixtures', 'bad');
  for (const [file, says] of [['row-number-bomb.xlsx', "row 20000000 is past Excel's last row"], ['column-bomb.xlsx', "cell XFE2 of row 2 is past Excel's last column"]]) {
    const r = await dnc(`attacks: ${file}`, ['batch', path.join(bad, file), '-o', path.join(dir, `${file}.results.csv`)], { env, cwd: dir, rusage: true });
    check('attacks: a workbook past Excel\'s limits is exit 3 (E_INPUT_LIMITS) naming the cell', r.code === 3 && r.stderr.includes('[E_INPUT_LIMITS]') && r.stderr.includes(says), `${file}: exit ${r.code}: ${r.stderr.slice(-300)}`);
    check('attacks: a workbook past Excel\'s limits is refused within 10 s and 300 MB', r.wallMs < 10_000 && r.maxRssMb < 300, `${file}: ${Math.round(r.wallMs)} ms, ${r.maxRssMb} MB`);
    counts[`attacks_${file.replace(/\W/g, '_')}`] = `${Math.round(r.wallMs)} ms, ${Math.round(r.maxRssMb ?? 0)} MB`;
  }
  // A row at Excel's last row number after row 2: the gap is no rows of output.
  const { ZipWriter } = await import(pathToFileURL(path.join(ROOT, 'dist', 'tables', 'xlsx-writer.js')).href);
  const chunks = [];
  const zip = new ZipWriter({ write: (b) => void chunks.push(b) });
  const main = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
  const rel = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
  const cell = (ref, v) => `<c r="${ref}" t="inlineStr"><is><t>${v}</t></is></c>`;
  const parts = {
    'xl/workbook.xml': `<workbook xmlns="${main}" xmlns:r="${rel}"><sheets><sheet name="Calls" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    'xl/_rels/workbook.xml.rels': `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
    'xl/worksheets/sheet1.xml': `<worksheet xmlns="${main}"><sheetData><row r="1">${cell('A1', 'phone')}</row><row r="2">${cell('A2', usNumber(300_000))}</row><row r="1048576">${cell('A1048576', usNumber(300_001))}</row></sheetData></worksheet>`,
  };
  for (const [name, text] of Object.entries(parts)) {
    const entry = await zip.entry(name);
    await entry.write(text);
    await entry.close();
  }
  await zip.finish();
  const gap = path.join(dir, 'row-gap.xlsx');
  writeFileSync(gap, Buffer.concat(chunks));
  const output = path.join(dir, 'row-gap.results.csv');
  const r = await dnc('attacks: row-gap.xlsx', ['batch', gap, '-o', output], { env, cwd: dir, rusage: true });
  const rows = r.code === 0 ? readCsv(output).length - 1 : -1;
  check('attacks: a gap of a million row numbers is no rows of output (2 rows in, 2 out), within 10 s and 300 MB', r.code === 0 && rows === 2 && r.wallMs < 10_000 && r.maxRssMb < 300, `exit ${r.code}, ${rows} rows, ${Math.round(r.wallMs)} ms, ${r.maxRssMb} MB: ${r.stderr.slice(-200)}`);
  counts.attacks_row_gap = `${rows} rows, ${Math.round(r.wallMs)} ms, ${Math.round(r.maxRssMb ?? 0)} MB`;
}

// ─── 3. Credit exhaustion ────────────────────────────────────────────────────────────────────────────────────

async function creditExhaustion() {
  const rows = PROFILE.creditRows;
  const dir = path.join(tmp.dir, 'credits');
  mkdirSync(dir);
  const input = path.join(dir, 'calls.csv');
  const output = path.join(dir, 'calls.results.csv');
  const phoneOf = (i) => (i % 10 === 9 ? phoneOf(i - 4) : i % 3 === 0 ? gbNumber(100_000 + i) : usNumber(100_000 + i));
  await writeCsv(input, ['phone', 'note'], rows, (i) => [phoneOf(i), `row ${i + 1}`]);
  const distinct = new Set(Array.from({ length: rows }, (_, i) => phoneOf(i))).size;
  const limit = Math.floor(distinct * 0.4);
  log(`[credits] ${rows.toLocaleString('en-US')} rows (${distinct} distinct numbers), credit limit ${limit}: stops mid-batch, limit raised, rerun`);
  const sb = await sandbox(['--credit-limit', String(limit), '--latency-ms', '5']);
  const env = dncEnv(sb);
  const argv = ['batch', input, '-o', output, '--concurrency', '8'];
  try {
    const first = await dnc('credits run 1', argv, { env });
    check('credits: the first run stops with exit 5 at the credit limit', first.code === 5, `exit ${first.code}: ${first.stderr.slice(-300)}`);
    const mid = readCsv(output);
    const resultIdx = mid[0].indexOf('dnc_result');
    const codeIdx = mid[0].indexOf('dnc_error_code');
    const notChecked = mid.slice(1).filter((r) => r[resultIdx] === 'not_checked');
    check('credits: rows not looked up are not_checked / credit_limit', notChecked.length > 0 && notChecked.every((r) => r[codeIdx] === 'credit_limit'), `${notChecked.length} not_checked`);
    const usedAtStop = (await sb.account()).creditsUsed;
    check('credits: the sandbox never went over the limit', usedAtStop <= limit, `${usedAtStop} used, limit ${limit}`);
    await sb.setCreditLimit(100_000_000);
    const second = await dnc('credits run 2', argv, { env });
    check('credits: the rerun after the limit is raised exits 0', second.code === 0, `exit ${second.code}: ${second.stderr.slice(-300)}`);
    const out = checkOutput('credits', input, output, (_cells, o) => expectedResult(o.dnc_phone_e164));
    const lookups = await sb.lookups();
    const charges = chargesByNumber(lookups);
    const twice = [...charges.entries()].filter(([, c]) => c > 1);
    check('credits: no number charged twice', twice.length === 0, `${twice.length} charged twice, e.g. ${twice[0]?.[0]}`);
    check('credits: every distinct number charged once (none lost)', charges.size === distinct, `${charges.size} charged of ${distinct}`);
    const requests = await sb.requests();
    const refused = requests.filter((r) => r.path === '/check_phone_number' && r.status === 429);
    const account = await sb.account();
    // A number's credits stand on one of its rows (the first), so take each number's largest.
    const outCredits = new Map();
    for (const o of out) outCredits.set(o.dnc_phone_e164, Math.max(outCredits.get(o.dnc_phone_e164) ?? 0, Number(o.dnc_credits)));
    const sumOut = [...outCredits.values()].reduce((s, c) => s + c, 0);
    check('credits: credits in the output = credits the sandbox charged', sumOut === account.creditsUsed, `output ${sumOut}, sandbox ${account.creditsUsed}`);
    Object.assign(counts, { credits_rows: rows, credits_distinct: distinct, credits_limit_first: limit, credits_used_at_stop: usedAtStop, credits_429_answers: refused.length, credits_used_total: account.creditsUsed });
  } finally {
    await closeSandbox(sb);
  }
}

// ─── 4. Bad-input corpus ─────────────────────────────────────────────────────────────────────────────────────

async function badCorpus() {
  const badDir = path.join(ROOT, 'fixtures', 'bad');
  const manifests = readdirSync(badDir).filter((f) => f === 'cases.json' || /^soak-.*\.json$/.test(f));
  const cases = manifests.flatMap((m) => JSON.parse(readFileSync(path.join(badDir, m), 'utf8')).cases);
  const files = readdirSync(badDir).filter((f) => !f.endsWith('.json'));
  log(`[corpus] ${files.length} files in fixtures/bad/, ${cases.length} documented cases (${manifests.join(', ')})`);
  check('corpus: at least 30 bad-input files', files.length >= 30, `${files.length} files`);
  const documented = new Set(cases.map((c) => c.file));
  for (const f of files) check('corpus: every file in fixtures/bad/ has a documented exit code', documented.has(f), f);
  const sb = await sandbox([]);
  const env = dncEnv(sb);
  const dir = path.join(tmp.dir, 'corpus');
  mkdirSync(dir);
  const exits = {};
  try {
    for (const c of cases) {
      const input = path.join(badDir, c.file);
      if (!check('corpus: every documented file exists', existsSync(input), c.file)) continue;
      const before = sha256(input);
      const output = path.join(dir, `${c.file}.results.csv`);
      const seen = (await sb.requests()).length;
      const r = await dnc(`corpus ${c.file}`, ['batch', input, '-o', output, ...(c.args ?? [])], { env });
      exits[r.code] = (exits[r.code] ?? 0) + 1;
      check('corpus: each file gives its documented exit code', r.code === c.exit, `${c.file}: exit ${r.code}, documented ${c.exit}: ${r.stderr.trim().split('\n')[0]}`);
      check('corpus: the input is unchanged (SHA-256)', sha256(input) === before, c.file);
      const sent = (await sb.requests()).slice(seen).filter((q) => q.path === '/check_phone_number');
      check('corpus: nothing is looked up', sent.length === 0, `${c.file}: ${sent.length} lookups`);
      if (c.exit !== 0) {
        check('corpus: the message carries the documented error code', r.stderr.includes(`[${c.code}]`), `${c.file}: ${r.stderr.trim().split('\n')[0]}`);
        if (c.line !== null && c.line !== undefined) check('corpus: the message names the line', r.stderr.includes(`line ${c.line}`), `${c.file}: expected "line ${c.line}" in ${r.stderr.trim().split('\n')[0]}`);
        if (c.exit === 3) check('corpus: an input error names the file', r.stderr.includes(input), c.file);
      } else {
        const rows = readCsv(output).slice(1);
        const head = readCsv(output)[0];
        const bad = rows.filter((row) => row[head.indexOf('dnc_result')] === 'invalid' && row[head.indexOf('dnc_error')] !== '');
        check('corpus: invalid numbers are refused locally, each with a reason', bad.length === c.invalidRows, `${c.file}: ${bad.length} invalid rows, documented ${c.invalidRows}`);
      }
    }
    counts.corpus_files = files.length;
    counts.corpus_cases = cases.length;
    counts.corpus_exit_codes = exits;
  } finally {
    await closeSandbox(sb);
  }
}

// ─── 5. A hostile service ────────────────────────────────────────────────────────────────────────────────────

/**
 * dnc against a service that answers like the real one but wrong (bench/hostile-service.mjs), with the soak's key:
 * no refused answer becomes a verdict, an answer about the request stops the run with its numbers not_checked, a bad
 * cost never lets --max-credits through, and (the leak step after it) an echoed key reaches no file.
 */
async function hostileService() {
  const { startHostileService, honestDoNotCall } = await import('./hostile-service.mjs');
  const svc = await startHostileService({ apiKey: KEY });
  const env = { DNC_BASE_URL: svc.baseUrl, DNC_API_KEY: KEY, HOME: path.join(tmp.dir, 'home'), XDG_CONFIG_HOME: path.join(tmp.dir, 'config'), XDG_CACHE_HOME: path.join(tmp.dir, 'cache') };
  const dir = path.join(tmp.dir, 'hostile');
  mkdirSync(dir);
  let k = 0;
  const list = (numbers) => {
    const file = path.join(dir, `list-${++k}.csv`);
    writeFileSync(file, `name,phone\n${numbers.map((p, i) => `n${i},${p}`).join('\n')}\n`);
    return file;
  };
  const results = (file) => {
    const [head, ...rows] = readCsv(file);
    return rows.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]])));
  };
  const bad = ['no-verdict', 'null-verdict', 'string-verdict', 'other-number', 'correlation-mismatch', 'timestamp-future', 'timestamp-shape', 'negative-cost', 'absurd-cost', 'cost-mismatch', 'html-200'];
  log(`[hostile] ${bad.length} kinds of answer that are no verdict, a reseller's missing header, costs that lie, an echoed key`);
  try {
    for (const behaviour of bad) {
      svc.setBehaviour(behaviour);
      const c = await dnc(`hostile check ${behaviour}`, ['check', '+12025550107', '--json', '--fail-on-dnc'], { env });
      check('hostile: check gives no verdict for an answer that breaks the description (exit 6)', c.code === 6, `${behaviour}: exit ${c.code}`);
      const lines = c.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      check('hostile: every check --json line without a verdict carries dnc\'s error', lines.every((l) => l.dnc_error?.code === 'E_BAD_RESPONSE'), `${behaviour}: ${c.stdout.slice(0, 200)}`);
      const out = path.join(dir, `${behaviour}.csv`);
      const b = await dnc(`hostile batch ${behaviour}`, ['batch', list(['+12025550111', '+12025550113']), '-o', out], { env });
      const rows = existsSync(out) ? results(out) : [];
      check('hostile: a batch makes no row callable from a refused answer', rows.length === 2 && rows.every((r) => r.dnc_result === 'failed' && r.dnc_error_code === 'bad_response'), `${behaviour}: exit ${b.code}, ${JSON.stringify(rows.map((r) => r.dnc_result))}`);
    }
    for (const behaviour of ['negative-cost', 'absurd-cost']) {
      svc.setBehaviour(behaviour);
      const before = svc.lookups().length;
      const numbers = Array.from({ length: 50 }, (_, i) => `+1202555${3000 + i}`);
      const r = await dnc(`hostile budget ${behaviour}`, ['batch', list(numbers), '-o', path.join(dir, `budget-${behaviour}.csv`), '--max-credits', '5', '--json'], { env });
      check('hostile: --max-credits holds against a cost that lies', svc.lookups().length - before === 5 && r.code === 5, `${behaviour}: ${svc.lookups().length - before} lookups, exit ${r.code}`);
    }
    svc.setBehaviour('reseller-400');
    const numbers = ['+12025550120', '+12025550121'];
    const input = list(numbers);
    const out = path.join(dir, 'reseller.csv');
    const stopped = await dnc('hostile reseller', ['batch', input, '-o', out, '--json'], { env });
    check('hostile: a missing reseller header stops the batch (exit 4), rows not_checked', stopped.code === 4 && results(out).every((r) => r.dnc_result === 'not_checked'), `exit ${stopped.code}`);
    const fixed = await dnc('hostile reseller fixed', ['batch', input, '-o', out], { env: { ...env, DNC_FORWARDED_HOST: 'client.example' } });
    check('hostile: the rerun with the header looks the rows up', fixed.code === 0 && results(out).every((r, i) => r.dnc_result === (honestDoNotCall(numbers[i]) ? 'do_not_call' : 'callable')), `exit ${fixed.code}`);
    for (const behaviour of ['echo-key', 'echo-key-error']) {
      svc.setBehaviour(behaviour);
      await dnc(`hostile ${behaviour} batch`, ['batch', list(['+12025550160', '+12025550161']), '-o', path.join(dir, `${behaviour}.csv`), '--review-out', path.join(dir, `${behaviour}.review.csv`)], { env });
      await dnc(`hostile ${behaviour} check`, ['check', '+12025550162', '--json'], { env });
    }
    counts.hostile_lookups = svc.lookups().length;
  } finally {
    await svc.close();
  }
}

// ─── 6. Evidence that holds ──────────────────────────────────────────────────────────────────────────────────

/**
 * Under the threat model (someone who can write the results folder and the list file, not the state folder): a list
 * whose last audit entry was cut with the sqlite3 shell is refused by every command that reads it; a results file
 * whose journal was moved away cannot be proven; one rewritten with its manifest differs from the state folder's anchor.
 */
async function evidenceAttacks() {
  const sb = await sandbox([]);
  const env = { ...dncEnv(sb), XDG_STATE_HOME: path.join(tmp.dir, 'evidence-state') };
  const dir = path.join(tmp.dir, 'evidence');
  mkdirSync(dir);
  log('[evidence] a cut audit tail, a moved journal, a results file rewritten with its manifest');
  try {
    const input = path.join(dir, 'calls.csv');
    writeFileSync(input, 'name,phone\na,+12025550100\nb,+12025550101\nc,+12025550102\n');
    const out = path.join(dir, 'calls.results.csv');
    check('evidence: the scrub runs', (await dnc('evidence batch', ['batch', input, '-o', out], { env })).code === 0);
    await dnc('evidence suppress', ['suppress', 'add', '+12025550103'], { env });
    await dnc('evidence suppress', ['suppress', 'add', '+12025550100', '--reason', 'opted out'], { env });
    const list = path.join(env.XDG_STATE_HOME, 'dnc', 'do-not-call.sqlite');
    execFileSync('sqlite3', [list, 'DROP TRIGGER audit_append_only_delete; DELETE FROM suppressions WHERE e164 = (SELECT e164 FROM audit ORDER BY id DESC LIMIT 1); DELETE FROM audit WHERE id = (SELECT MAX(id) FROM audit);']);
    const seen = (await sb.requests()).length;
    for (const argv of [['suppress', 'list'], ['check', '+12025550100'], ['batch', input, '-o', path.join(dir, 'again.csv')], ['verify', out]]) {
      const r = await dnc(`evidence ${argv[0]} after a cut`, argv, { env });
      check('evidence: a cut audit tail is refused (E_LIST_ALTERED, exit 3)', r.code === 3 && r.stderr.includes('E_LIST_ALTERED'), `${argv.join(' ')}: exit ${r.code}`);
    }
    check('evidence: nothing is looked up against a cut list', (await sb.requests()).slice(seen).every((q) => q.path !== '/check_phone_number'));
    check('evidence: the list is restored on purpose with a command', (await dnc('evidence restore', ['suppress', 'restore', list, '--reason', 'soak'], { env })).code === 0);
    const moved = path.join(dir, 'moved.sqlite');
    execFileSync('mv', [`${out}.journal.sqlite`, moved]);
    check('evidence: a file whose journal is gone cannot be proven (exit 3)', (await dnc('evidence verify moved', ['verify', out], { env })).code === 3);
    const text = readFileSync(out, 'utf8');
    const forged = text.replace(/,do_not_call,true,/, ',callable,false,');
    writeFileSync(out, forged);
    const manifestPath = out.replace(/\.csv$/, '.manifest.json');
    const m = JSON.parse(readFileSync(manifestPath, 'utf8'));
    m.output.sha256 = createHash('sha256').update(forged).digest('hex');
    m.output.bytes = Buffer.byteLength(forged);
    writeFileSync(manifestPath, JSON.stringify(m, null, 2));
    const weak = await dnc('evidence verify forged', ['verify', out, '--without-journal'], { env });
    check('evidence: a file rewritten with its manifest differs from the anchor (exit 3)', forged !== text && weak.code === 3 && weak.stdout.includes('the state folder records'), `exit ${weak.code}`);
  } finally {
    await closeSandbox(sb);
  }
}

// ─── 7. API key leak check ───────────────────────────────────────────────────────────────────────────────────

function leakCheck() {
  log('[leak] the test key in any stdout, stderr or file written by a step');
  const needle = Buffer.from(KEY);
  for (const s of streams) check('leak: the key appears in no stdout/stderr', !s.text.includes(KEY), s.what);
  const walk = (d) => readdirSync(d).flatMap((f) => {
    const p = path.join(d, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
  const files = walk(tmp.dir);
  for (const f of files) check('leak: the key appears in no file written', !readFileSync(f).includes(needle), path.relative(tmp.dir, f));
  counts.leak_streams_scanned = streams.length;
  counts.leak_files_scanned = files.length;
}

const m = machine();
log(`dnc soak (${PROFILE.name} profile) on ${m.nproc} × ${m.cpu}, node ${m.node}; scratch ${tmp.dir}`);
log('every step starts its own sandbox as a child process (node bin/dnc.js sandbox --port 0 --key <random test key>)');
const started = Date.now();
const errors = [];
const steps = { storm: crashStorm, listen: listenerStorm, attacks: listenerAttacks, credits: creditExhaustion, corpus: badCorpus, hostile: hostileService, evidence: evidenceAttacks };
try {
  for (const s of STEPS) {
    if (!only.has(s)) continue;
    const t = Date.now();
    try {
      await steps[s]();
    } catch (err) {
      errors.push(`${s}: ${err.stack ?? err}`);
      check(`${s}: the step ran to the end`, false, String(err.message ?? err));
    } finally {
      killLeftovers();
    }
    counts[`${s}_seconds`] = Math.round((Date.now() - t) / 100) / 10;
  }
  leakCheck();
} finally {
  for (const sb of sandboxes) await sb.close();
  if (!args.keep) tmp.remove();
}

const list = [...invariants.entries()];
const checked = list.reduce((s, [, v]) => s + v.checked, 0);
const failed = list.reduce((s, [, v]) => s + v.failed, 0);
process.stdout.write(`\n${table(['invariant', 'checked', 'failed'], list.map(([k, v]) => [k, v.checked, v.failed]))}\n\n`);
process.stdout.write(`${table(['count', 'value'], Object.entries(counts).map(([k, v]) => [k, typeof v === 'object' && v !== null ? JSON.stringify(v) : v]))}\n\n`);
for (const [k, v] of list) for (const f of v.failures) process.stdout.write(`failed: ${k}: ${f}\n`);
for (const e of errors) process.stdout.write(`error: ${e}\n`);
mkdirSync(OUT_DIR, { recursive: true });
const outFile = path.join(OUT_DIR, `soak-${stamp()}.json`);
writeFileSync(outFile, `${JSON.stringify({ profile: PROFILE, machine: m, seconds: (Date.now() - started) / 1000, invariants: Object.fromEntries(list), counts, errors }, null, 2)}\n`);
process.stdout.write(`figures written to ${path.relative(process.cwd(), outFile) || outFile}\n`);
process.stdout.write(`invariants: ${list.length} kinds, ${checked} checks, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
process.exitCode = failed > 0 ? 1 : 0;
