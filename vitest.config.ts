import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/bundle.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real loopback servers and spawn the built CLI; two cores are all CI has.
    maxWorkers: 2,
  },
});
