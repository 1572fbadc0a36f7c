/**
 * The embedded store on its own thread (adapters/db/pglite-thread.ts): what the repositories rely on
 * crosses the thread intact (Postgres error codes, values by type, transaction boundaries, the one
 * session's ordering), a dead thread fails each call with a clear error instead of hanging, and an
 * open handle never holds a process that is done.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgliteThread } from '../adapters/db/pglite-thread.js';
import type { Db } from '../adapters/db/port.js';

describe('PGlite on its own thread', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openPgliteThread();
    await db.exec('create table t (id int primary key, at timestamptz, doc jsonb, bytes bytea, big int8)');
  }, 60_000);
  afterAll(async () => {
    await db?.close();
  });

  it('returns values by type and counts affected rows', async () => {
    const at = new Date('2026-12-03T10:00:00Z');
    await db.query('insert into t values ($1, $2, $3, $4, $5)', [1, at, { a: [1, 'x'] }, new Uint8Array([104, 105]), '9007199254740993']);
    const { rows } = await db.query<Record<string, unknown>>('select * from t where id = 1');
    expect(rows[0]).toMatchObject({ id: 1, doc: { a: [1, 'x'] } });
    expect((rows[0]!.at as Date).toISOString()).toBe(at.toISOString());
    expect([...(rows[0]!.bytes as Uint8Array)]).toEqual([104, 105]);
    expect(String(rows[0]!.big)).toBe('9007199254740993');
    expect((await db.query('update t set doc = $1 where id = 1', [{ b: 2 }])).rowCount).toBe(1);
  });

  it('a Postgres error keeps the code and constraint the repositories branch on', async () => {
    const err = await db.query('insert into t (id) values (1)').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ code: '23505', constraint: 't_pkey', message: expect.stringContaining('duplicate key') });
  });

  it('a transaction whose callback throws leaves nothing; one that returns commits and gives its value', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('insert into t (id) values (2)');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await db.query('select id from t where id = 2')).rows).toEqual([]);
    const n = await db.transaction(async (tx) => {
      await tx.query('insert into t (id) values (3)');
      return (await tx.query<{ n: number }>('select count(*)::int as n from t')).rows[0]!.n;
    });
    expect(n).toBe(2);
  });

  it('a failed statement inside a transaction rolls the whole transaction back', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('insert into t (id) values (4)');
        await tx.query('insert into t (id) values (1)');
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect((await db.query('select id from t where id = 4')).rows).toEqual([]);
  });

  it('a statement outside an open transaction waits for it: one session, in order', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const holding = new Promise<void>((r) => {
      release = r;
    });
    const tx = db.transaction(async (t) => {
      await t.query('insert into t (id) values (5)');
      seen.push('tx wrote');
      await holding;
      seen.push('tx commits');
    });
    await new Promise((r) => setTimeout(r, 50));
    const outside = db.query<{ n: number }>('select count(*)::int as n from t where id = 5').then((r) => {
      seen.push(`outside read ${r.rows[0]!.n}`);
    });
    await new Promise((r) => setTimeout(r, 100));
    release();
    await Promise.all([tx, outside]);
    expect(seen).toEqual(['tx wrote', 'tx commits', 'outside read 1']);
  });
});

describe('PGlite thread lifecycle', () => {
  it('keeps a data folder across close and reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-pglite-thread-'));
    try {
      let db = await openPgliteThread(dir);
      await db.exec('create table kept (v text)');
      await db.query("insert into kept values ('still here')");
      await db.close();
      db = await openPgliteThread(dir);
      expect((await db.query('select v from kept')).rows).toEqual([{ v: 'still here' }]);
      await db.close();
      await expect(db.query('select 1')).rejects.toThrow(/embedded database thread stopped/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a handle left open does not keep a finished process alive', () => {
    // The built module, as `switchboard` runs it (npm test builds first).
    const script = `import { openPgliteThread } from ${JSON.stringify(new URL('../dist/adapters/db/pglite-thread.js', import.meta.url).href)};
      const db = await openPgliteThread();
      const { rows } = await db.query('select 41 + 1 as n');
      console.log(rows[0].n);`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 60_000, encoding: 'utf8' });
    expect(out.trim()).toBe('42');
  }, 90_000);

  it('what runs after close still runs (a process releasing its data lock on the way out)', () => {
    const script = `import { openPgliteThread } from ${JSON.stringify(new URL('../dist/adapters/db/pglite-thread.js', import.meta.url).href)};
      const db = await openPgliteThread();
      await db.query('select 1');
      await db.close();
      console.log('after close');`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 60_000, encoding: 'utf8' });
    expect(out.trim()).toBe('after close');
  }, 90_000);
});
