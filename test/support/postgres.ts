import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The local server that CI starts; a fresh database is made per test file. */
const ADMIN_URL = process.env.SWITCHBOARD_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `sb_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = new pg.Client({ connectionString: ADMIN_URL });
      await a.connect();
      // A pool that has just ended (pg-pool resolves end() before its clients' sockets close) may still have a
      // backend here: forced, it gets a FATAL its pool re-emits as an 'error' nobody listens to any more (an
      // uncaught exception in the test run). Give such backends a moment to leave first; force only what stays.
      for (let i = 0; i < 20; i++) {
        const r = await a.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
        if (r.rows[0].n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}
