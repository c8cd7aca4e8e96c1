#!/usr/bin/env node
// Cost of the calling windows per number (src/calling), beside a raw CSV pass, for issue 28's bound: `dnc window`
// over a 1,000,000-row results file within 1.5× a raw CSV pass of it.
//
//   node bench/calling.mjs [--rows N]      (after `npm run build`; prints a table, exits 0 whatever the figures)
//
// 1. µs per number for each call, numbers spread over many US area codes, GB, AU, ES and DE, one instant;
// 2. a CSV pass of a results-like file (csv-parse, rows discarded), and the same pass asking each row's slot answer.
// In one process, after a warm-up: the figures are for the per-row work, not start-up.
import { createReadStream, createWriteStream } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { parse } from 'csv-parse';
import { assertBuilt, parseArgs, ROOT, scratchDir } from './lib.mjs';

assertBuilt();
const args = parseArgs(process.argv.slice(2));
const ROWS = Number(args.rows ?? 1_000_000);
const { createCallingWindows } = await import(path.join(ROOT, 'dist', 'calling', 'index.js'));

const AREA_CODES = [
  '212',
  '602',
  '605',
  '305',
  '502',
  '205',
  '504',
  '702',
  '203',
  '410',
  '907',
  '808',
  '208',
  '303',
  '415',
  '312',
];
/** Row i's number: mostly US over 16 area codes and 1,000 exchanges, then GB, AU (mobile and Sydney), ES and DE. */
function numberOf(i) {
  const k = i % 20;
  const sub = String(i % 10_000).padStart(4, '0');
  if (k < 14) return { e164: `+1${AREA_CODES[i % 16]}${200 + (Math.floor(i / 16) % 800)}${sub}`, country: 'US' };
  if (k < 16) return { e164: `+4479111${sub.slice(0, 3)}${sub}`.slice(0, 13), country: 'GB' };
  if (k === 16) return { e164: `+614123${sub.slice(0, 1)}${sub}`, country: 'AU' };
  if (k === 17) return { e164: `+612987${sub.slice(0, 1)}${sub}`, country: 'AU' };
  if (k === 18) return { e164: `+346123${sub.slice(0, 1)}${sub}`, country: 'ES' };
  return { e164: `+4930123${sub}`, country: 'DE' };
}

const windows = createCallingWindows({ tzdataVersion: process.versions.tz });
const at = Date.parse('2026-07-01T15:00:00Z');
const from = Date.parse('2026-07-01T15:00:00Z');
const until = Date.parse('2026-07-01T17:00:00Z');
const numbers = Array.from({ length: Math.min(ROWS, 200_000) }, (_, i) => numberOf(i));

function perNumber(name, fn) {
  for (const n of numbers.slice(0, 20_000)) fn(n); // warm-up: caches filled, code optimised
  const started = performance.now();
  let sink = 0;
  for (const n of numbers) sink += fn(n) ? 1 : 0;
  const us = ((performance.now() - started) * 1000) / numbers.length;
  return { name, us: us.toFixed(3), sink };
}

const figures = [
  perNumber('slot: throughout(number, from, until)', (n) => windows.throughout(n, from, until).callable),
  perNumber('batch columns: zonesText + weeklyRule', (n) => windows.zonesText(n).length + windows.weeklyRule(n).length),
  perNumber('check: window(number, at)', (n) => windows.window(n, at).may_call_now),
];
process.stdout.write(`per number (${numbers.length.toLocaleString('en-US')} numbers, µs each):\n`);
for (const f of figures) process.stdout.write(`  ${f.name.padEnd(44)} ${f.us}\n`);

// 2. A results-like CSV of ROWS rows, read raw and read with the slot answer per row.
const scratch = scratchDir('dnc-calling-bench');
const file = path.join(scratch.dir, 'results.csv');
const out = createWriteStream(file);
out.write('name,phone,country,dnc_e164,dnc_result,dnc_checked_at,dnc_valid_until\n');
for (let i = 0; i < ROWS; i++) {
  const n = numberOf(i);
  const line = `Person ${i},${n.e164},${n.country},${n.e164},callable,2026-06-30T10:00:00Z,2026-07-30T10:00:00Z\n`;
  if (!out.write(line)) await once(out, 'drain');
}
out.end();
await once(out, 'finish');

async function pass(withSlot) {
  const started = performance.now();
  let callable = 0;
  const parser = createReadStream(file).pipe(parse({ bom: true, from_line: 2 }));
  for await (const row of parser) {
    if (withSlot && windows.throughout({ e164: row[3], country: row[2] }, from, until).callable) callable++;
  }
  return { ms: performance.now() - started, callable };
}
await pass(true); // warm-up
const raw = [];
const slot = [];
for (let round = 0; round < 3; round++) {
  raw.push((await pass(false)).ms);
  slot.push((await pass(true)).ms);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[1];
process.stdout.write(`CSV pass of ${ROWS.toLocaleString('en-US')} rows (median of 3):\n`);
process.stdout.write(`  raw csv-parse                                ${median(raw).toFixed(0)} ms\n`);
process.stdout.write(`  csv-parse + slot answer per row              ${median(slot).toFixed(0)} ms`);
process.stdout.write(`  (${(median(slot) / median(raw)).toFixed(2)}×; goal for dnc window ≤ 1.5×)\n`);
scratch.remove();
