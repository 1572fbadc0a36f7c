import { PGlite } from '@electric-sql/pglite';
import { needsInit, unpackPgliteSeed } from './pglite-seed.js';
import { baselineWasmOnly, PGLITE_SETTINGS, settingArgs } from './pglite-settings.js';
import type { Db, Queryable } from './port.js';

export function pgliteStartParams(settings: Readonly<Record<string, string>> = PGLITE_SETTINGS): string[] {
  return [...PGlite.defaultStartParams, ...settingArgs(settings)];
}

/**
 * PGlite is a single Postgres session. It queues calls internally, so concurrent
 * callers simply wait; the one rule is never to use `db` from inside a
 * transaction callback (use `tx`), which would deadlock.
 *
 * A data folder that holds no cluster yet is unpacked from the shipped seed (pglite-seed.ts: initdb
 * and the migrations of its day, done once) rather than initdb'd and migrated in this process; without
 * a seed for this PGlite version, PGlite runs initdb. An in-memory one (tests) starts empty, as before.
 */
export async function openPglite(dataDir?: string): Promise<Db> {
  baselineWasmOnly();
  if (dataDir && needsInit(dataDir)) await unpackPgliteSeed(dataDir);
  const options = { startParams: pgliteStartParams() };
  return wrapPglite(dataDir ? await PGlite.create(dataDir, options) : await PGlite.create(options));
}

export function wrapPglite(db: PGlite): Db {
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
