// Bundles the compiled CLI (dist/, from tsc) into dist/bundle/: start-up (what every run loads before it parses its
// arguments) is one file, dnc.js, not dozens (Node 20 has no module compile cache); each command's work is loaded
// by import().
// Heavy dependencies stay external and are still loaded only by the commands that need them.
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, 'dist', 'bundle');
const MAIN = 'dist/main.js';

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
// commander is needed by every run (it builds the program), so it is bundled. Pure-JS dependencies of a batch's
// path to its first lookup are bundled too, into the lazy chunks of the commands that import them: Node 20
// resolves, reads and compiles each of their files apart (undici's index ≈ 110 files, libphonenumber-js ≈ 80),
// which cost several times the same code in one chunk (undici: ≈ 70 ms as files, ≈ 45 ms as a chunk). undici is
// imported by its public entry, so its chunk holds all of undici (esbuild cannot drop the parts of a CommonJS
// package dnc does not use), and is loaded by the first lookup, never at start-up. The rest stay external:
// better-sqlite3 is native, ora is large and loaded only by the commands (and options) that need it. (exceljs and
// csv-stringify are devDependencies: the tests and benches use them, no command does.)
const BUNDLED = new Set(['commander', 'undici', 'libphonenumber-js', 'csv-parse', 'cli-table3']);
const external = Object.keys(pkg.dependencies).filter((name) => !BUNDLED.has(name));

const common = {
  absWorkingDir: ROOT,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  logLevel: 'warning',
  // Comments (commander's are half its source) and blanks out: V8 scans every byte of a module it loads, ≈ 1.5 ms
  // of `dnc --help`. Names stay as written: commander's errors take theirs from constructor.name, and a stack trace
  // should still say where; the source maps point into dist/.
  minifyWhitespace: true,
  minifySyntax: true,
  // commander is CommonJS: inside an ES module bundle its require() calls need a real require. Builtins it takes
  // with process.getBuiltinModule (Node ≥ 20.16), and node:module too: a static import of node:module and a require
  // made by createRequire load them as public modules (≈ 1.5–2 ms of `dnc --help`). Older Node 20 awaits node:module.
  banner: {
    js:
      "const __dncModule = globalThis.process.getBuiltinModule?.('node:module') ?? (await import('node:module')); " +
      'const __dncRequire = __dncModule.createRequire(import.meta.url); ' +
      'const require = Object.assign((id) => globalThis.process.getBuiltinModule?.(id) ?? __dncRequire(id), __dncRequire);',
  },
};

/** Every module `from` loads before it runs: static imports and requires, not import(). */
function staticGraph(inputs, from) {
  const seen = new Set();
  const todo = [from];
  while (todo.length > 0) {
    const file = todo.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    for (const i of inputs[file].imports) if (!i.external && i.kind !== 'dynamic-import') todo.push(i.path);
  }
  return seen;
}

// 1. The start-up graph: what `dnc` loads before it parses its arguments; and which import() targets have a default export.
const probe = await build({ ...common, entryPoints: [MAIN], outdir: OUT, splitting: true, write: false, metafile: true });
const startup = staticGraph(probe.metafile.inputs, MAIN);
const withDefault = new Set(Object.values(probe.metafile.outputs).filter((o) => o.entryPoint && o.exports.includes('default')).map((o) => path.join(ROOT, o.entryPoint)));

// 2. esbuild's code splitting puts each module into a chunk by the set of entry points that reach it, and every
// import() target is an entry point. A start-up module that some lazy commands import too (errors, io, config …)
// lands in a chunk of its own per distinct set: fifteen small files that `dnc --help` loaded one by one, each
// resolved, read, compiled and linked apart by Node 20's ESM loader (≈ 9 ms of a 65 ms `dnc --help`). esbuild
// cannot be told to keep them in the entry's chunk, so every import() target is made to import the whole start-up
// graph ('dnc:startup', a module of side-effect imports): all start-up modules are then reached from the same
// entries and share one chunk. At run time that import costs nothing: a lazy chunk is only loaded by code that
// the start-up graph already ran, and an ES module is evaluated once, so DncError & co. stay one class each.
// (Rollup keeps such modules in the entry chunk by itself, but a second bundler, re-bundling esbuild's output or
// taking over commander's and undici's CommonJS, is more machinery than this plugin.)
const STARTUP = 'dnc:startup';
const startupPlugin = {
  name: 'startup-chunk',
  setup(b) {
    b.onResolve({ filter: /^dnc:/ }, (a) => ({ path: a.path, namespace: 'dnc' }));
    b.onLoad({ filter: /^dnc:startup$/, namespace: 'dnc' }, () => ({
      contents: [...startup].map((f) => `import ${JSON.stringify(path.join(ROOT, f))};`).join('\n'),
      resolveDir: ROOT,
      loader: 'js',
    }));
    // A static ES import of a Node builtin gets an ES module facade made of all its exports; node:fs's reads its
    // lazy getters too (fs.promises, the stream classes), loading modules `dnc --help` never uses. The banner's
    // require hands over the module itself (process.getBuiltinModule): ≈ 2 ms less for node:fs, node:path, node:os
    // and node:fs/promises at start-up. tsc writes a module's imports first, one a line, and builtins have no live
    // bindings to keep, so a const in its place is the same binding. (Lazy chunks keep their imports.)
    b.onLoad({ filter: /[\\/]dist[\\/].*\.js$/, namespace: 'file' }, (a) => {
      if (!startup.has(path.relative(ROOT, a.path).split(path.sep).join('/'))) return undefined;
      const source = readFileSync(a.path, 'utf8');
      const contents = source.replace(/^import (\{[^}]*\}|[\w$]+) from '(node:[\w/]+)';$/gm, (_, what, id) => {
        const binding = what.startsWith('{') ? what.replace(/\s+as\s+/g, ': ') : what;
        return `const ${binding} = require('${id}');`;
      });
      const left = /^import .* from 'node:.*$/m.exec(contents);
      if (left) throw new Error(`bundle: ${a.path}: \`${left[0]}\` is an import of a builtin this plugin does not rewrite`);
      return { contents, loader: 'js' };
    });
    // The entry reaches dnc:startup too (after dist/main.js, which has loaded all of it), so that this module of
    // imports is not a chunk of its own for the lazy chunks to load.
    b.onLoad({ filter: /^dnc:entry$/, namespace: 'dnc' }, () => ({
      contents: `export * from ${JSON.stringify(path.join(ROOT, MAIN))};\nimport ${JSON.stringify(STARTUP)};\n`,
      resolveDir: ROOT,
      loader: 'js',
    }));
    // import() of a bundled module goes through a stand-in that imports the start-up graph first, then is the target.
    b.onResolve({ filter: /.*/ }, async (a) => {
      if (a.kind !== 'dynamic-import' || a.pluginData?.inner) return undefined;
      const r = await b.resolve(a.path, { kind: a.kind, importer: a.importer, resolveDir: a.resolveDir, pluginData: { inner: true } });
      if (r.errors.length > 0) return { errors: r.errors };
      return r.external ? r : { path: r.path, namespace: 'dnc-lazy' };
    });
    b.onLoad({ filter: /.*/, namespace: 'dnc-lazy' }, (a) => {
      const target = JSON.stringify(a.path);
      const lines = [`import ${JSON.stringify(STARTUP)};`, `export * from ${target};`];
      if (withDefault.has(a.path)) lines.push(`export { default } from ${target};`);
      return { contents: lines.join('\n'), resolveDir: ROOT, loader: 'js' };
    });
  },
};

// Chunk names carry a content hash: without a clean folder every rebuild would leave the last one's chunks behind.
rmSync(OUT, { recursive: true, force: true });

const result = await build({
  ...common,
  entryPoints: { dnc: 'dnc:entry' },
  outdir: OUT,
  splitting: true,
  sourcemap: true,
  metafile: true,
  plugins: [startupPlugin],
});

// The workers (listen's render, the batch's early render, verify's input reader) are started by file path relative
// to their caller, so they land in the same folder as the chunks (see src/listen/journal-store.ts,
// src/batch/early-render-thread.ts, src/tables/rows-thread.ts).
// A thread has a module graph of its own anyway: each is bundled apart, whole, rather than importing the start-up
// chunk (commander and all) into every worker.
await build({
  ...common,
  entryPoints: {
    'render-worker': 'dist/listen/render-worker.js',
    'early-render-worker': 'dist/batch/early-render-worker.js',
    'rows-worker': 'dist/tables/rows-worker.js',
  },
  outdir: OUT,
  sourcemap: true,
});

// 3. dnc.js is now a facade that re-exports the start-up chunk: two files where one will do (≈ 1.5 ms). The chunk
// becomes dnc.js, and the lazy chunks import it by that name. Node evaluates a module once per URL, and bin/dnc.js
// imports the same dist/bundle/dnc.js, so there is still one copy of every start-up module.
const outputs = result.metafile.outputs;
const rel = (file) => path.relative(OUT, path.join(ROOT, file));
// (The metafile names a plugin's entry namespace:path.)
const entryOut = Object.keys(outputs).find((f) => outputs[f].entryPoint === 'dnc:dnc:entry');
if (entryOut === undefined) throw new Error(`bundle: no output for dnc:entry among ${Object.keys(outputs).join(', ')}`);
const startupChunks = outputs[entryOut].imports.filter((i) => !i.external);
if (startupChunks.length !== 1 || startupChunks[0].kind !== 'import-statement' || outputs[startupChunks[0].path].imports.some((i) => !i.external && i.kind === 'import-statement')) {
  // Should start-up ever span more chunks (an entry the plugin above does not see), fail rather than slow down unseen.
  throw new Error(`bundle: start-up is no longer one chunk; dnc.js imports ${JSON.stringify(outputs[entryOut].imports)}`);
}
mergeFacade(rel(entryOut), rel(startupChunks[0].path));

/** Replaces the facade `entry` by the chunk it re-exports, adding the facade's exports to the chunk's. */
function mergeFacade(entry, chunk) {
  const banner = common.banner.js;
  const read = (name) => readFileSync(path.join(OUT, name), 'utf8');
  const bindings = (list) => list.split(',').map((s) => s.trim()).filter(Boolean).map((s) => { const [from, to = from] = s.split(/\s+as\s+/); return { from, to }; });
  const facade = read(entry);
  const importMatch = new RegExp(`import\\s*\\{([^}]*)\\}\\s*from\\s*"\\./${chunk.replace(/[.]/g, '\\.')}";`).exec(facade);
  // A module's export list is its last statement, before the source map's comment.
  const lastExport = /export\s*\{([^}]*)\}\s*;\s*(?=\/\/# sourceMappingURL=\S+\s*$)/;
  const exportMatch = lastExport.exec(facade);
  const rest = facade.replace(banner, '').replace(importMatch?.[0] ?? '', '').replace(exportMatch?.[0] ?? '', '').replace(/\/\/# sourceMappingURL=\S+\s*$/, '');
  if (!importMatch || !exportMatch || rest.trim() !== '') throw new Error(`bundle: ${entry} is not a plain re-export of ${chunk}:\n${facade}`);
  const imported = new Map(bindings(importMatch[1]).map(({ from, to }) => [to, from])); // local name → the chunk's export
  let code = read(chunk);
  const chunkExport = lastExport.exec(code);
  if (!chunkExport) throw new Error(`bundle: no export list at the end of ${chunk}`);
  const exported = new Map(bindings(chunkExport[1]).map(({ from, to }) => [to, from])); // exported name → local binding
  const added = [];
  for (const { from: local, to: name } of bindings(exportMatch[1])) {
    const binding = exported.get(imported.get(local));
    if (binding === undefined) throw new Error(`bundle: ${chunk} does not export ${imported.get(local)}`);
    if (exported.has(name)) {
      if (exported.get(name) !== binding) throw new Error(`bundle: ${chunk} exports ${name} as something else than ${entry} does`);
    } else added.push(`${binding} as ${name}`);
  }
  if (added.length > 0) code = code.replace(chunkExport[0], `${chunkExport[0]}export{${added.join(',')}};\n`);
  code = code.replace(`//# sourceMappingURL=${chunk}.map`, `//# sourceMappingURL=${entry}.map`);
  writeFileSync(path.join(OUT, entry), code);
  renameSync(path.join(OUT, `${chunk}.map`), path.join(OUT, `${entry}.map`));
  rmSync(path.join(OUT, chunk));
  for (const name of readdirSync(OUT)) {
    if (!name.endsWith('.js') || name === entry) continue;
    const text = read(name);
    const renamed = text.replaceAll(`"./${chunk}"`, `"./${entry}"`);
    if (renamed !== text) writeFileSync(path.join(OUT, name), renamed);
  }
  for (const name of readdirSync(OUT)) if (read(name).includes(chunk)) throw new Error(`bundle: ${name} still names ${chunk}`);
}
