import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { migrationsDir } from '../../kernel/paths.js';
import type { Db } from '../db/port.js';

// Any fixed number: serializes migrations across processes starting together.
const MIGRATION_LOCK = 74_201_177;

export interface MigrationReport {
  applied: string[];
  current: string[];
}

/**
 * Applies the plain-SQL files in adapters/store/migrations in name order, each once.
 * `until` (a file name) stops after that file: tests use it to write rows as an older
 * version would, then migrate them.
 */
export async function migrate(db: Db, opts: { until?: string } = {}): Promise<MigrationReport> {
  const files = readdirSync(migrationsDir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .filter((f) => opts.until === undefined || f <= opts.until);
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(`create table if not exists schema_migrations (
      version text primary key, applied_at timestamptz not null default now())`);
    const done = new Set((await tx.query<{ version: string }>('select version from schema_migrations')).rows.map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = readFileSync(join(migrationsDir, file), 'utf8');
      // Statements go one by one: pg's extended protocol takes a single statement.
      for (const stmt of splitSql(sql)) await tx.query(stmt);
      await tx.query('insert into schema_migrations (version) values ($1)', [file]);
      applied.push(file);
    }
    return { applied, current: files };
  });
}

/**
 * Splits on semicolons at the end of a line, outside dollar-quoted bodies ($$ … $$, for
 * functions); our migrations keep one statement per such span.
 */
export function splitSql(sql: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (const line of sql.split('\n')) {
    const code = line.replace(/^\s*--.*$/, '');
    quoted = (code.match(/\$\$/g)?.length ?? 0) % 2 === 1 ? !quoted : quoted;
    current += `${code}\n`;
    if (!quoted && /;\s*$/.test(code)) {
      out.push(current.trim().replace(/;$/, '').trim());
      current = '';
    }
  }
  out.push(current.trim());
  return out.filter(Boolean);
}
