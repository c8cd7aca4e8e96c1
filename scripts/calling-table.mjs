#!/usr/bin/env node
// Writes the rules table of docs/calling.md from the built rules pack (`npm run build` first); `--check` exits 1
// when the page's table is not the pack's. test/calling/docs.test.ts checks the same.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { rulesTable } = await import(path.join(root, 'dist', 'calling', 'rules-table.js'));
const page = path.join(root, 'docs', 'calling.md');
const lines = readFileSync(page, 'utf8').split('\n');
const from = lines.findIndex((l) => l.startsWith('<!-- rules table'));
const to = lines.findIndex((l, i) => i > from && l.startsWith('<!-- end of'));
if (from < 0 || to < 0) throw new Error('docs/calling.md: no rules table markers');
const next = [...lines.slice(0, from + 1), ...rulesTable(), ...lines.slice(to)].join('\n');
if (process.argv.includes('--check')) process.exit(next === lines.join('\n') ? 0 : 1);
writeFileSync(page, next);
