#!/usr/bin/env node
// The installed entry point: all behaviour lives in dist/main.js (compiled from src/main.ts).
import { runFromProcess } from '../dist/main.js';

runFromProcess();
