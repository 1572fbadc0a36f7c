import { migrate } from '../../adapters/store/migrate.js';
import { loadConfig } from '../../src/config.js';
import { createDatabaseIfMissing, lockDataDir, openDb } from '../infra.js';

/** `switchboard migrate [--create] [--json]`: applies the database migrations. */
export async function runMigrate(opts: { json: boolean; create: boolean }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const cfg = loadConfig();
  // Embedded: the data folder is one process's (a running `start` holds it).
  const lock = cfg.databaseUrl ? undefined : lockDataDir(cfg, 'migrate');
  try {
    if (opts.create && cfg.databaseUrl) await createDatabaseIfMissing(cfg);
    const db = await openDb(cfg);
    try {
      const r = await migrate(db);
      out.write(opts.json ? JSON.stringify(r) + '\n' : r.applied.length ? `applied: ${r.applied.join(', ')}\n` : 'database is up to date\n');
    } finally {
      await db.close();
    }
  } finally {
    lock?.release();
  }
  return 0;
}
