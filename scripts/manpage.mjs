// Writes dist/man/dnc.1 (package.json "man") from the command tree the parser is built from, so the
// man page lists exactly the commands and options dnc accepts. Runs after tsc in build and prepack.
import { mkdirSync, writeFileSync } from 'node:fs';
import { buildProgram } from '../dist/main.js';
import { programSpec } from '../dist/commands/completion.js';
import { TOPIC_NAMES } from '../dist/render/help-text.js';
import { ENVIRONMENT_VARIABLES } from '../dist/config.js';
import { EXIT_STATUS_MEANINGS } from '../dist/errors.js';
import { createTestIO } from '../dist/io.js';
import { manPage } from '../dist/render/manpage.js';

const program = buildProgram({ io: createTestIO(), env: {} }, () => {}, () => {});
// Reproducible builds set SOURCE_DATE_EPOCH; otherwise the page carries the day it was built.
const epoch = process.env.SOURCE_DATE_EPOCH;
const date = (epoch ? new Date(Number(epoch) * 1000) : new Date()).toISOString().slice(0, 10);
const page = manPage({
  program: programSpec(program),
  exitStatuses: Object.entries(EXIT_STATUS_MEANINGS).map(([code, meaning]) => [Number(code), meaning]),
  environment: ENVIRONMENT_VARIABLES,
  topics: TOPIC_NAMES,
  date,
});
mkdirSync(new URL('../dist/man/', import.meta.url), { recursive: true });
writeFileSync(new URL('../dist/man/dnc.1', import.meta.url), page);
