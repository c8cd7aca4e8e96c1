// Loaded with `node --import` by the bench: on exit, writes this process's CPU time and peak RSS to $BENCH_RUSAGE_FILE.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_RUSAGE_FILE;
if (file) {
  process.on('exit', () => {
    const r = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ userUs: r.userCPUTime, systemUs: r.systemCPUTime, maxRssKb: r.maxRSS }));
  });
}
