import type { Db, Queryable } from '../db/port.js';
import type { AccessEntry, AccessRepository } from './ports/access.js';

export type { AccessEntry, AccessRepository } from './ports/access.js';

/** The access columns as an AccessEntry: every statement selects (or returns) these. */
const ENTRY = 'channel, sender, status, code, expires_at as "expiresAt", decided_by as "decidedBy"';

export class AccessStore implements AccessRepository {
  constructor(private readonly db: Db) {}

  /** The row of a sender, by the forms that may name it, most specific first (kernel/identity.ts entryForms): the most specific row found wins. */
  async get(channel: string, senders: string | string[]): Promise<AccessEntry | undefined> {
    const forms = typeof senders === 'string' ? [senders] : senders;
    return (
      await this.db.query<AccessEntry>(
        `select ${ENTRY} from access where channel = $1 and sender = any($2::text[]) order by array_position($2::text[], sender) limit 1`,
        [channel, forms],
      )
    ).rows[0];
  }

  async pendingCount(channel: string): Promise<number> {
    return (
      await this.db.query<{ n: number }>(`select count(*)::int as n from access where channel = $1 and status = 'pending' and expires_at > now()`, [channel])
    ).rows[0]!.n;
  }

  /** A pairing request: keeps an unexpired code, else issues the new one. */
  async requestPairing(channel: string, sender: string, code: string, ttlMs: number): Promise<AccessEntry> {
    return (
      await this.db.query<AccessEntry>(
        `insert into access (channel, sender, status, code, expires_at) values ($1, $2, 'pending', $3, now() + ($4::double precision * interval '1 millisecond'))
         on conflict (channel, sender) do update set
           code = case when access.status = 'pending' and access.expires_at > now() then access.code else excluded.code end,
           expires_at = case when access.status = 'pending' and access.expires_at > now() then access.expires_at else excluded.expires_at end,
           status = 'pending', updated_at = now()
         where access.status <> 'allowed'
         returning ${ENTRY}`,
        [channel, sender, code, ttlMs],
      )
    ).rows[0]!;
  }

  /** Access changes are audited in the same transaction (the ledger, migration 022). */
  async approvePairing(code: string, by: string): Promise<AccessEntry | undefined> {
    return this.db.transaction(async (tx) => {
      const row = (
        await tx.query<AccessEntry>(
          `update access set status = 'allowed', decided_by = $2, code = null, updated_at = now() where code = $1 and status = 'pending' and expires_at > now() returning ${ENTRY}`,
          [code, by],
        )
      ).rows[0];
      if (row) await auditAccess(tx, by, 'access.paired', row.channel, row.sender);
      return row;
    });
  }

  async setStatus(channel: string, sender: string, status: AccessEntry['status'], by: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `insert into access (channel, sender, status, decided_by) values ($1, $2, $3, $4)
         on conflict (channel, sender) do update set status = excluded.status, decided_by = excluded.decided_by, code = null, updated_at = now()`,
        [channel, sender, status, by],
      );
      await auditAccess(tx, by, `access.${status}`, channel, sender);
    });
  }

  async list(status?: AccessEntry['status']): Promise<AccessEntry[]> {
    return (await this.db.query<AccessEntry>(`select ${ENTRY} from access where ($1::text is null or status = $1) order by updated_at desc`, [status ?? null]))
      .rows;
  }
}

function auditAccess(q: Queryable, by: string, action: string, channel: string, sender: string) {
  return q.query('insert into audit (actor, action, subject, details) values ($1, $2, $3, $4)', [
    by,
    action,
    `${channel}:${sender}`,
    JSON.stringify({ channel, sender }),
  ]);
}
