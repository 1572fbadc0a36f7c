/**
 * A fresh embedded data folder is unpacked from the shipped seed (adapters/db/seed) instead of
 * initdb'd: it must end up as the folder initdb and every migration would have made, keep what is
 * written across a restart, and refuse a seed entry that points outside the folder.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import { pgliteSeedFile, pgliteVersion, unpackPgliteSeed } from '../adapters/db/pglite-seed.js';
import type { Db } from '../adapters/db/port.js';
import { migrate } from '../adapters/store/migrate.js';
import { migrationsDir } from '../kernel/paths.js';

const SLOW = 300_000; // PGlite on a busy 2-core machine

/** Tables, columns, constraints and indexes of the public schema, as one sorted list. */
async function schema(db: Db): Promise<string[]> {
  const rows = await db.query<{ line: string }>(`
    select format('col %s.%s %s %s %s', table_name, column_name, data_type, is_nullable, coalesce(column_default, '')) as line
      from information_schema.columns where table_schema = 'public'
    union all
    select format('con %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
      from pg_constraint where connamespace = 'public'::regnamespace
    union all
    select format('idx %s', indexdef) from pg_indexes where schemaname = 'public'`);
  return rows.rows.map((r) => r.line).sort();
}

function tarEntry(name: string, body: Buffer): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 'latin1');
  h.write('0000600\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
  h.write('00000000000\0', 136);
  h.write('0', 156);
  h.write('ustar\x0000', 257);
  h.fill(' ', 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return Buffer.concat([h, body, Buffer.alloc(Math.ceil(body.length / 512) * 512 - body.length)]);
}

describe('the PGlite seed', () => {
  it('ships for the installed PGlite version', () => {
    expect(existsSync(pgliteSeedFile()), `no seed for PGlite ${pgliteVersion()}: regenerate it (README, embedded store)`).toBe(true);
  });

  it(
    'makes a fresh data folder that migrates to the schema of an empty cluster migrated from scratch, and keeps its rows across a restart',
    async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'sb-seed-')), 'pglite');
      let db = await openPglite(dir);
      const files = readdirSync(migrationsDir).filter((f) => f.endsWith('.sql'));
      const report = await migrate(db);
      expect(report.current).toEqual(files.sort());
      const seeded = await schema(db);
      await db.query(`insert into conversations (id, key, channel) values ('c-seed', 'http/k/seed/-', 'http')`);
      expect((await db.query<{ s: string }>("select current_setting('synchronous_commit') as s")).rows[0]!.s).toBe('on');
      await db.close();

      db = await openPglite(dir);
      expect((await migrate(db)).applied).toEqual([]);
      expect((await db.query<{ id: string }>(`select id from conversations where id = 'c-seed'`)).rows).toEqual([{ id: 'c-seed' }]);
      // Foreign keys hold on a seeded folder as on any other.
      await expect(db.query(`insert into turns (id, conversation_id, seq, status) values ('t-seed', 'nope', 1, 'running')`)).rejects.toThrow(/foreign key/);
      await db.close();

      const scratch = await openPglite(); // in memory: initdb, no seed
      try {
        await migrate(scratch);
        expect(seeded).toEqual(await schema(scratch));
      } finally {
        await scratch.close();
      }
    },
    SLOW,
  );

  it('refuses an entry that points outside the data folder, and leaves no folder behind', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sb-seed-evil-'));
    const seed = join(root, 'evil.tar.gz');
    writeFileSync(seed, gzipSync(Buffer.concat([tarEntry('/PG_VERSION', Buffer.from('18\n')), tarEntry('../escaped', Buffer.from('x')), Buffer.alloc(1024)])));
    const dir = join(root, 'pglite');
    await expect(unpackPgliteSeed(dir, seed)).rejects.toThrow(/outside the folder/);
    expect(existsSync(join(root, 'escaped'))).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(root)).toEqual(['evil.tar.gz']);
  });

  it('refuses a seed cut short in the middle of a file, and leaves no folder behind', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sb-seed-cut-'));
    const seed = join(root, 'cut.tar.gz');
    const whole = Buffer.concat([tarEntry('PG_VERSION', Buffer.from('18\n')), tarEntry('base/1', Buffer.alloc(4096, 7))]);
    writeFileSync(seed, gzipSync(whole.subarray(0, whole.length - 1000)));
    const dir = join(root, 'pglite');
    await expect(unpackPgliteSeed(dir, seed)).rejects.toThrow(/ends in the middle/);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(root)).toEqual(['cut.tar.gz']);
  });

  it('writes every file byte for byte, runs of zeros in the middle included, directories and empty files too', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sb-seed-bytes-'));
    const seed = join(root, 'bytes.tar.gz');
    const body = Buffer.concat([Buffer.alloc(100_000), Buffer.from('middle'), Buffer.alloc(70_001), Buffer.from('end')]);
    const dirEntry = tarEntry('base/', Buffer.alloc(0));
    dirEntry.write('5', 156);
    writeFileSync(
      seed,
      gzipSync(
        Buffer.concat([
          tarEntry('PG_VERSION', Buffer.from('18\n')),
          dirEntry,
          tarEntry('base/big', body),
          tarEntry('base/empty', Buffer.alloc(0)),
          Buffer.alloc(1024),
        ]),
      ),
    );
    const dir = join(root, 'pglite');
    expect(await unpackPgliteSeed(dir, seed)).toBe(true);
    expect(readFileSync(join(dir, 'base', 'big')).equals(body)).toBe(true);
    expect(readFileSync(join(dir, 'base', 'empty')).length).toBe(0);
    expect(readFileSync(join(dir, 'PG_VERSION'), 'utf8')).toBe('18\n');
  });
});
