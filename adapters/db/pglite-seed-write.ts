import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { migrate } from '../store/migrate.js';
import { wrapPglite } from './pglite.js';
import { pgliteSeedFile } from './pglite-seed.js';

/**
 * Makes the seed for the installed PGlite: initdb and every migration in an in-memory cluster, its
 * template databases dropped, a checkpoint (the folder then needs no recovery), then the folder as a gzipped tar. Migrations added
 * later apply on top at start (schema_migrations is in the seed); test/pglite-seed.test.ts checks the
 * seeded schema equals a migrated empty cluster's. Run after upgrading PGlite or editing a migration:
 *   npm run build && node -e "import('./dist/adapters/db/pglite-seed-write.js').then((m) => m.writePgliteSeed())"
 */
export async function writePgliteSeed(file = pgliteSeedFile()): Promise<string> {
  const pg = await PGlite.create();
  try {
    await migrate(wrapPglite(pg));
    // PGlite opens only "postgres": the template databases are 600 of the folder's 1,000 files that
    // every fresh start would write (Switchboard never creates a database in PGlite).
    await pg.exec("update pg_database set datistemplate = false where datname in ('template0', 'template1')");
    await pg.exec('drop database template0');
    await pg.exec('drop database template1');
    await pg.exec('CHECKPOINT');
    const tar = await pg.dumpDataDir('gzip');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, Buffer.from(await tar.arrayBuffer()));
  } finally {
    await pg.close();
  }
  return file;
}
