import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One temporary folder per run, removed at its end with the processes the run left behind.
    globalSetup: ['test/support/global-setup.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // 2 cores: integration suites spawn Redis, Postgres databases and gateway processes.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
