/**
 * The audit ledger: every audit row is chained to the one before it by hash, updates and
 * deletes are refused, and `switchboard audit verify` finds a row changed behind the
 * database's back (triggers disabled, as an attacker with the database's superuser would).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../adapters/db/pg.js';
import { openPglite } from '../adapters/db/pglite.js';
import type { Db } from '../adapters/db/port.js';
import { AccessStore } from '../adapters/store/access.js';
import { ApprovalStore } from '../adapters/store/approvals.js';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
import { migrate } from '../adapters/store/migrate.js';
import { packageRoot } from '../kernel/paths.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

function cli(args: string[], databaseUrl: string) {
  const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'audit', ...args], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Changes a row as someone with the database's superuser would: with the triggers off. */
async function tamper(db: Db, sql: string, params: unknown[] = []): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('set local session_replication_role = replica');
    await tx.query(sql, params);
  });
}

const backends = [
  { name: 'pglite', open: async () => ({ db: await openPglite(), drop: async () => {} }) },
  {
    name: 'postgres',
    open: async () => {
      const t: TestDatabase = await createTestDatabase();
      return { db: await openPostgres(t.url), drop: () => t.drop(), url: t.url };
    },
  },
] as Array<{ name: string; open(): Promise<{ db: Db; drop(): Promise<void>; url?: string }> }>;

describe.each(backends)('the audit ledger on $name', (backend) => {
  let db: Db;
  let drop: () => Promise<void>;
  let url: string | undefined;
  let ledger: AuditLedgerStore;
  beforeAll(async () => {
    ({ db, drop, url } = await backend.open());
    // Rows written by a version before the ledger join the chain when it is migrated.
    await migrate(db, { until: '015_inbox_request_fields.sql' });
    await db.query(
      `insert into audit (actor, action, subject, details) values ('http:op', 'approval.approved', 'K7Q4P', '{"turn":"t0"}'), ('deadline', 'approval.expired', 'M2R8X', null)`,
    );
    await migrate(db);
    ledger = new AuditLedgerStore(db);
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  it('chains old rows and concurrent new ones in one unbroken sequence', async () => {
    const approvals = new ApprovalStore(db);
    await Promise.all(Array.from({ length: 20 }, (_, i) => approvals.audit(`slack:U${i}`, 'approval.approved', `C${i}`, { turn: `t${i}`, tier: 'caution' })));
    const entries = await ledger.entries();
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    expect(entries.slice(0, 2).map((e) => e.action)).toEqual(['approval.approved', 'approval.expired']);
    for (let i = 1; i < entries.length; i++) expect(entries[i]!.prevHash).toBe(entries[i - 1]!.hash);
    expect(await ledger.verify()).toEqual({ ok: true, rows: 22, head: entries[21]!.hash });
  });

  it('refuses updates and deletes', async () => {
    await expect(db.query(`update audit set action = 'approval.denied' where seq = 3`)).rejects.toThrow(/append-only/);
    await expect(db.query('delete from audit where seq = 3')).rejects.toThrow(/append-only/);
    expect((await ledger.verify()).ok).toBe(true);
  });

  it('finds a row changed behind its back, and a hash recomputed to hide it', async () => {
    const before = await ledger.entries(4, 1);
    await tamper(db, `update audit set actor = 'slack:UATTACKER' where seq = 5`);
    expect(await ledger.verify()).toMatchObject({ ok: false, brokenAt: 5, reason: 'hash' });
    // The attacker recomputes row 5's hash with the database's own function: row 6 no longer follows.
    await tamper(db, `update audit set hash = audit_row_hash(seq, at, actor, action, subject, details, prev_hash) where seq = 5`);
    expect(await ledger.verify()).toMatchObject({ ok: false, brokenAt: 6, reason: 'link' });
    // Put back as it was: intact again.
    await tamper(db, `update audit set actor = $1, hash = $2 where seq = 5`, [before[0]!.actor, before[0]!.hash]);
    expect((await ledger.verify()).ok).toBe(true);
  });

  it('finds a row removed from the middle', async () => {
    const row = (await ledger.entries(9, 1))[0]!;
    await tamper(db, 'delete from audit where seq = 10');
    expect(await ledger.verify()).toMatchObject({ ok: false, brokenAt: 10, reason: 'gap' });
    await tamper(
      db,
      `insert into audit (actor, action, subject, details, seq, prev_hash, hash, at) values ($1, $2, $3, $4::jsonb, $5, $6, $7, $8::timestamptz)`,
      [row.actor, row.action, row.subject, row.details, row.seq, row.prevHash, row.hash, row.at],
    );
    expect((await ledger.verify()).ok).toBe(true);
  });

  // The CLI opens the database itself: against the Postgres one (an embedded folder is one process's).
  if (backend.name === 'postgres')
    it('switchboard audit verify and export, as an operator runs them', async () => {
      const ok = cli(['verify', '--json'], url!);
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      const verdict = JSON.parse(ok.stdout) as { ok: boolean; rows: number; head: string };
      expect(verdict).toMatchObject({ ok: true, rows: 22 });

      const exported = cli(['export', '--after', '20'], url!);
      expect(exported.code).toBe(0);
      const lines = exported.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { seq: number; hash: string; details: string });
      expect(lines.map((l) => l.seq)).toEqual([21, 22]);
      expect(lines[1]!.hash).toBe(verdict.head);
      expect(JSON.parse(lines[1]!.details)).toMatchObject({ tier: 'caution' });

      // The last row cut off: the chain alone still holds, the head recorded earlier does not.
      await tamper(db, 'delete from audit where seq = 22');
      const cut = cli(['verify', '--head', verdict.head], url!);
      expect(cut.code).toBe(1);
      expect(cut.stdout).toMatch(/BROKEN: the head [0-9a-f]{64} is not in the chain/);

      await tamper(db, `update audit set details = '{"turn":"t9","tier":"safe"}' where seq = 12`);
      const broken = cli(['verify'], url!);
      expect(broken.code).toBe(1);
      expect(broken.stdout).toMatch(/audit ledger BROKEN at row 12 \(hash\): row 12 was changed after it was written/);
      expect(cli(['frobnicate'], url!).code).toBe(2);
    });

  it('records access changes, with who made them and no message text', async () => {
    const access = new AccessStore(db);
    const before = (await ledger.entries(0, 10_000)).length;
    await access.setStatus('discord', '4242', 'denied', 'http:ops');
    await access.requestPairing('sms', '+15550100', 'PAIR42', 60_000);
    await access.approvePairing('PAIR42', 'slack:T1:UOPS');
    const added = (await ledger.entries(0, 10_000)).slice(before);
    expect(added.map((e) => [e.actor, e.action, e.subject])).toEqual([
      ['http:ops', 'access.denied', 'discord:4242'],
      ['slack:T1:UOPS', 'access.paired', 'sms:+15550100'],
    ]);
  });
});
