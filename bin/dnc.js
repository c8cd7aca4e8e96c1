#!/usr/bin/env node
// The installed entry point: all behaviour lives in src/main.ts, compiled to dist/ and bundled into
// dist/bundle/dnc.js (npm run build; npm pack does it through prepack).
const entry = new URL('../dist/bundle/dnc.js', import.meta.url);
// A clone installed (`npm install -g .`, `npm link`) before it was built has no dist/: say so, not a stack trace.
const { runFromProcess } = await import(entry.href).catch((err) => {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(entry.pathname)) throw err;
  const clone = new URL('../..', entry).pathname;
  process.stderr.write(`dnc: error: dnc is not built (${entry.pathname} is missing)\n`);
  process.stderr.write(`  hint: run \`npm run build\` in ${clone}\n`);
  process.exit(1);
});
runFromProcess();
