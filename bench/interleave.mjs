#!/usr/bin/env node
// Two builds of dnc measured in turn (bench items and a `dnc check`), median of N rounds each: a change and its base.
//
//   node bench/interleave.mjs --base DIR [--runs 5] [--only 2,3,6,8] [--size full] [--checks 3] [--out FILE]
//
// DIR is another tree of dnc, built (e.g. `git worktree add DIR <base commit>`, node_modules copied, `npm run build`);
// "after" is this tree. Each round runs `bench/bench.mjs --only …` of both trees, each with its own sandbox and
// floors, as `npm run bench` would, then `dnc check` of both against one sandbox; the order of the two trees swaps
// every round, so that neither always runs first on a warm or a busy machine. Nothing here changes what an item
// measures: it reads the figures each bench writes (the number the bench prints, and its floor), and takes the
// median over the rounds.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  assertBuilt,
  fmt,
  machine,
  median,
  OUT_DIR,
  parseArgs,
  ROOT,
  runNode,
  scratchDir,
  stamp,
  startSandboxChild,
  table,
  usNumber,
} from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
if (args.help || typeof args.base !== 'string') {
  process.stdout.write(
    'usage: node bench/interleave.mjs --base DIR [--runs 5] [--only 2,3,6,8] [--size full] [--checks 3] [--out FILE]\n',
  );
  process.exit(args.help ? 0 : 2);
}
const trees = { before: path.resolve(args.base), after: ROOT };
const runs = Number(args.runs ?? 5);
const only = String(args.only ?? '2,3,6,8');
const size = String(args.size ?? 'full');
const checks = Number(args.checks ?? 3);
assertBuilt();
const log = (s) => process.stderr.write(`${s}\n`);
const tmp = scratchDir('dnc-interleave');

const perSecond = (runs) => Math.max(...runs.map((r) => r.perSecond));
const fastest = (runs) => Math.min(...runs.map((r) => r.wallMs));
const figure = (value, floor, unit) => ({ value, floor, unit });
const cpuPerLookup = (r) => (r.batchCpuMs * 1000) / r.lookups;
const startUp = (r) => figure(median(r.runs), median(r.node), 'ms');

/** The figures read from a bench's JSON: a name here, the item, how its `what` starts, its numbers and floor. */
const READ = [
  [
    '2 batch lookups/s, zero latency (best of its rounds)',
    2,
    'batch lookups/s',
    (r) => figure(perSecond(r.batchRuns), perSecond(r.rawRuns), '/s'),
  ],
  [
    '3 CPU per lookup, whole run',
    3,
    'CPU per lookup',
    (r, f) => figure(cpuPerLookup(r), cpuPerLookup(r) / f.ratio, 'µs'),
  ],
  ['6 dnc --help (median of its runs)', 6, 'dnc --help', startUp],
  ['6 dnc check --help (median of its runs)', 6, 'dnc check --help', startUp],
  [
    '8 end to end, 1,600 at 16 × 50 ms (best of its rounds)',
    8,
    'end to end',
    (r) => figure(fastest(r.dncRuns), fastest(r.rawRuns), 'ms'),
  ],
  [
    '9 first lookup after start, 10 rows (median of its runs)',
    9,
    'first lookup',
    (r) => figure(median(r.smallRuns), undefined, 'ms'),
  ],
  [
    '9 first lookup after start, big list (median of its runs)',
    9,
    'first lookup',
    (r) => figure(median(r.bigRuns), undefined, 'ms'),
  ],
];

function figuresOf(bench) {
  const out = {};
  for (const [name, item, starts, read] of READ) {
    const f = bench.figures.find((x) => x.item === item && x.what.startsWith(starts));
    if (f) out[name] = read(f.raw, f);
  }
  return out;
}

/** One `bench.mjs` run of `tree`, tried up to 3 times: a bench that dies (on a loaded machine) loses no round. */
async function benchOf(tree, round, name) {
  for (let attempt = 1; ; attempt++) {
    const file = path.join(tmp.dir, `bench-${name}-${round}-${attempt}.json`);
    const r = await runNode(path.join(tree, 'bench', 'bench.mjs'), ['--only', only, '--size', size, '--out', file], {
      cwd: tree,
      rusage: false,
      env: { HOME: tmp.dir },
    });
    let why;
    try {
      const bench = JSON.parse(readFileSync(file, 'utf8'));
      if (bench.failures.length === 0) return figuresOf(bench);
      why = bench.failures.join('; ');
    } catch {
      why = `bench.mjs exited ${r.code ?? r.signal} without its figures:\n${r.stderr}`;
    }
    if (attempt === 3) throw new Error(`${tree}: ${why}`);
    log(`${tree}: attempt ${attempt} failed, again: ${why.split('\n').slice(-12).join('\n')}`);
  }
}

let nextNumber = 0;
/** `dnc check` of one number never looked up before, in a home of its own (no cache, no state): spawn to exit. */
async function checkOf(tree, sandbox) {
  const home = path.join(tmp.dir, `home-${nextNumber}`);
  mkdirSync(home);
  const r = await runNode(path.join(tree, 'bin', 'dnc.js'), ['check', usNumber(nextNumber++)], {
    env: { ...sandbox.env, HOME: home },
  });
  if (r.code !== 0) throw new Error(`${tree}: dnc check exited ${r.code ?? r.signal}:\n${r.stderr}`);
  return { wallMs: r.wallMs, cpuMs: r.cpuMs };
}

const samples = { before: [], after: [] };
/** Each round's order and the load average at its end: a figure is read beside the load it was taken under. */
const rounds = [];
const m = machine();
log(`interleave: ${runs} rounds of bench --only ${only} --size ${size} and ${checks} × dnc check, each tree in turn`);
log(`before ${trees.before}\nafter  ${trees.after}`);
log(`on ${m.nproc} × ${m.cpu}, node ${m.node}, load ${m.loadavg.join(' ')}`);
const sandbox = await startSandboxChild(['--credit-limit', '1000000000']);
try {
  for (let round = 0; round < runs; round++) {
    const order = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    const got = { before: {}, after: {} };
    for (const name of order) {
      if (only !== '') got[name] = await benchOf(trees[name], round, name);
    }
    const checkRuns = { before: [], after: [] };
    for (let i = 0; i < checks; i++)
      for (const name of order) checkRuns[name].push(await checkOf(trees[name], sandbox));
    for (const name of order) {
      const runsOf = checkRuns[name];
      got[name]['dnc check, one number, zero latency: wall (median)'] = figure(
        median(runsOf.map((r) => r.wallMs)),
        undefined,
        'ms',
      );
      got[name]['dnc check: CPU of the process (median)'] = figure(median(runsOf.map((r) => r.cpuMs)), undefined, 'ms');
      samples[name].push(got[name]);
    }
    rounds.push({ order, load: machine().loadavg });
    log(`round ${round + 1}/${runs} (${order.join(' then ')}), load ${rounds.at(-1).load.join(' ')}:`);
    for (const key of Object.keys(got.after))
      log(`  ${key}: ${fmt.n(got.before[key]?.value, 1)} → ${fmt.n(got.after[key].value, 1)} ${got.after[key].unit}`);
  }
} finally {
  await sandbox.close();
  tmp.remove();
}

const rows = [];
const summary = {};
for (const key of Object.keys(samples.after[0])) {
  const of = (name, field) => samples[name].map((s) => s[key]?.[field]).filter((x) => x !== undefined);
  const [b, a] = [median(of('before', 'value')), median(of('after', 'value'))];
  const unit = samples.after[0][key].unit;
  const floors =
    of('after', 'floor').length > 0
      ? `${fmt.n(median(of('before', 'floor')))} / ${fmt.n(median(of('after', 'floor')))} ${unit}`
      : '';
  summary[key] = {
    unit,
    before: of('before', 'value'),
    after: of('after', 'value'),
    floorBefore: of('before', 'floor'),
    floorAfter: of('after', 'floor'),
  };
  const runsOf = (name) =>
    of(name, 'value')
      .map((x) => fmt.n(x))
      .join(', ');
  rows.push([
    key,
    `${fmt.n(b, 1)} ${unit}`,
    `${fmt.n(a, 1)} ${unit}`,
    `${a >= b ? '+' : ''}${fmt.n(((a - b) / b) * 100, 1)} %`,
    floors,
    runsOf('before'),
    runsOf('after'),
  ]);
}
process.stdout.write(
  `\n${table(['measure', 'before', 'after', 'change', 'floor before / after', 'runs before', 'runs after'], rows)}\n`,
);
process.stdout.write(
  `\n${m.nproc} × ${m.cpu} · node ${m.node} · ${m.date} · load at end ${machine().loadavg.join(' ')}\n`,
);
mkdirSync(OUT_DIR, { recursive: true });
const outFile = args.out ? path.resolve(String(args.out)) : path.join(OUT_DIR, `interleave-${stamp()}.json`);
writeFileSync(
  outFile,
  `${JSON.stringify({ trees, runs, only, size, checks, machine: m, rounds, summary, samples }, null, 2)}\n`,
);
process.stdout.write(`figures written to ${path.relative(process.cwd(), outFile) || outFile}\n`);
