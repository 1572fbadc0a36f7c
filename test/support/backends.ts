/** Both topologies a suite runs on: the embedded default and Redis + Postgres (private servers, dropped after). */
import type { Backend } from './gateway.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import { TestRedis } from './redis.js';

export interface BackendSetup {
  name: string;
  backend(): Promise<Backend>;
  cleanup(): Promise<void>;
}

export function backendSetups(): BackendSetup[] {
  let redis: TestRedis | undefined;
  let pgdb: TestDatabase | undefined;
  return [
    { name: 'embedded (PGlite)', backend: async () => ({}), cleanup: async () => {} },
    {
      name: 'Redis + Postgres',
      async backend() {
        redis = await TestRedis.start();
        pgdb = await createTestDatabase();
        return { redisUrl: redis.url, databaseUrl: pgdb.url };
      },
      async cleanup() {
        await redis?.stop();
        await pgdb?.drop();
      },
    },
  ];
}
