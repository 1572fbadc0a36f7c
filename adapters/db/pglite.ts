import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from './port.js';

/**
 * PGlite is a single Postgres session. It queues calls internally, so concurrent
 * callers simply wait; the one rule is never to use `db` from inside a
 * transaction callback (use `tx`), which would deadlock.
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  const db = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      const r = await q.query<T>(sql, params as unknown[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  });
  const base = wrap(db);
  return {
    kind: 'pglite',
    query: base.query,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    async exec(sql) {
      await db.exec(sql);
    },
    close: () => db.close(),
  };
}
