import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // 2 cores: integration suites spawn Redis, Postgres databases and gateway processes.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
