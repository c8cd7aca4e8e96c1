// dnc reaches its libraries through their public entry points only, and patches no prototype (issue 26).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

const SRC = path.join(REPO_ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

const files = sources(SRC).map((file) => ({ file: path.relative(REPO_ROOT, file), text: readFileSync(file, 'utf8') }));

/** Every module a source names: static and type imports, re-exports, import() and require() of a literal. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s+'([^']+)'/g,
    /\bimport\s+'([^']+)'/g,
    /\bimport\(\s*'([^']+)'/g,
    /\brequire\(\s*'([^']+)'/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) found.push(m[1]!);
  return found;
}

/** A package's subpaths it makes public: the keys of its `exports` (a `*` matches any text); none without one. */
function isPublic(pkg: string, subpath: string): boolean {
  const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as {
    exports?: unknown;
  };
  const exports = manifest.exports;
  if (typeof exports !== 'object' || exports === null || Array.isArray(exports)) return false;
  return Object.keys(exports).some((key) => {
    if (!key.includes('*')) return key === `./${subpath}`;
    const [before, after] = key.split('*') as [string, string];
    const wanted = `./${subpath}`;
    return wanted.startsWith(before) && wanted.endsWith(after) && wanted.length >= before.length + after.length;
  });
}

describe('libraries through their public entry points', () => {
  it('src imports no file of a package that the package does not export (undici has only its index)', () => {
    const deep: string[] = [];
    let bare = 0;
    for (const { file, text } of files) {
      for (const spec of specifiers(text)) {
        if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) continue;
        bare++;
        const parts = spec.split('/');
        const nameLength = spec.startsWith('@') ? 2 : 1;
        const pkg = parts.slice(0, nameLength).join('/');
        const subpath = parts.slice(nameLength).join('/');
        if (subpath !== '' && !isPublic(pkg, subpath)) deep.push(`${file}: '${spec}'`);
      }
    }
    // The scan saw the imports (commander, undici, better-sqlite3 …): an empty list is not a scan that found nothing.
    expect(bare).toBeGreaterThan(20);
    expect(deep).toEqual([]);
  });

  it('no source assigns to a prototype or redefines one', () => {
    const patched: string[] = [];
    const patterns = [
      /\.prototype\s*(\.[\w$]+|\[[^\]]*\])?\s*(=|\?\?=|\|\|=|&&=)(?!=)/,
      /Object\.(assign|defineProperty|defineProperties|setPrototypeOf)\(\s*[\w$.]+\.prototype\b/,
      /\.__proto__\s*=(?!=)/,
      // A prototype held under a name of its own is one about to be written to (`const proto = X.prototype`).
      /=\s*\(?\s*[\w$.]+\.prototype\b(?!\s*\.)/,
    ];
    for (const { file, text } of files) {
      text.split('\n').forEach((line, i) => {
        if (patterns.some((re) => re.test(line))) patched.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(patched).toEqual([]);
  });
});
