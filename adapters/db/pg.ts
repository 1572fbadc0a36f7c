import pg from 'pg';
import type { Db, Queryable, QueryResult } from './port.js';

// bigint (int8) columns come back as JS numbers: our ids stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * Every statement runs as a named prepared statement, so each connection parses
 * and plans it once instead of on every call. Measured on the turn's four hot
 * statements: Postgres CPU per turn 2.3 ms → 0.6 ms. Our SQL texts are a fixed
 * set (values always travel as parameters); the cap only guards against a
 * future caller building SQL text dynamically.
 */
const MAX_NAMED_STATEMENTS = 1000;

export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10 });
  // An idle client losing its server (Postgres restart) must not crash the process.
  pool.on('error', () => {});
  const names = new Map<string, string>();
  const nameOf = (sql: string): string | undefined => {
    let name = names.get(sql);
    if (!name && names.size < MAX_NAMED_STATEMENTS) names.set(sql, (name = `sb${names.size}`));
    return name;
  };
  const run = async <T>(q: pg.Pool | pg.PoolClient, sql: string, params?: unknown[]): Promise<QueryResult<T>> => {
    const r = await q.query({ name: nameOf(sql), text: sql, values: params });
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  };
  await run(pool, 'select 1');
  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const tx: Queryable = { query: (sql, params) => run(client, sql, params) };
        const out = await fn(tx);
        await client.query('commit');
        return out;
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      // Multi-statement text (migrations) needs the simple protocol: no name.
      await pool.query(sql);
    },
    close: () => pool.end(),
  };
}
