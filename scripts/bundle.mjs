// Bundles the compiled CLI (dist/, from tsc) into dist/bundle/: one module graph for start-up, so
// `dnc --help` loads a couple of files instead of twenty (Node 20 has no module compile cache).
// Heavy dependencies stay external and are still loaded only by the commands that need them.
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
// commander is needed by every run (it builds the program), so it is bundled. Pure-JS dependencies of a batch's
// path to its first lookup are bundled too, into the lazy chunks of the commands that import them: Node 20
// resolves, reads and compiles each of their files apart (undici's Pool ≈ 60 files, libphonenumber-js ≈ 80),
// which cost several times the same code in one chunk. The rest stay external: better-sqlite3 is native,
// exceljs and ora are large and loaded only by the commands (and options) that need them.
const BUNDLED = new Set(['commander', 'undici', 'libphonenumber-js', 'csv-parse', 'csv-stringify', 'cli-table3']);
const external = Object.keys(pkg.dependencies).filter((name) => !BUNDLED.has(name));

// Chunk names carry a content hash: without a clean folder every rebuild would leave the last one's chunks behind.
rmSync(new URL('../dist/bundle/', import.meta.url), { recursive: true, force: true });

await build({
  // The listen render worker is started by file path relative to its caller, so it is an entry of its own
  // in the same folder as the chunks (see src/listen/journal-store.ts).
  entryPoints: { dnc: 'dist/main.js', 'render-worker': 'dist/listen/render-worker.js' },
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  sourcemap: true,
  logLevel: 'warning',
  // commander is CommonJS: inside an ES module bundle its require() calls need a real require.
  banner: { js: "import { createRequire as __dncCreateRequire } from 'node:module'; const require = __dncCreateRequire(import.meta.url);" },
});
