#!/usr/bin/env node
// The installed entry point: all behaviour lives in src/main.ts, compiled to dist/ and bundled into
// dist/bundle/dnc.js (npm run build; npm ci does it through prepare).
import { runFromProcess } from '../dist/bundle/dnc.js';

runFromProcess();
