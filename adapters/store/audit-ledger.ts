import type { Db } from '../db/port.js';
import { GENESIS_HASH, ledgerHash } from './audit-hash.js';
import type { AuditLedger, LedgerEntry, LedgerVerdict } from './ports/audit-ledger.js';

interface LedgerColumns {
  seq: string;
  at: string;
  actor: string;
  action: string;
  subject: string | null;
  details: string;
  prev_hash: string;
  hash: string;
}

const COLUMNS = `seq, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, actor, action, subject,
  coalesce(details::text, 'null') as details, prev_hash, hash`;

const entryFromRow = (r: LedgerColumns): LedgerEntry => ({
  seq: Number(r.seq),
  at: r.at,
  actor: r.actor,
  action: r.action,
  subject: r.subject,
  details: r.details,
  prevHash: r.prev_hash,
  hash: r.hash,
});

export class AuditLedgerStore implements AuditLedger {
  constructor(private readonly db: Db) {}

  async entries(afterSeq = 0, limit = 1000): Promise<LedgerEntry[]> {
    const r = await this.db.query<LedgerColumns>(`select ${COLUMNS} from audit where seq > $1 order by seq limit $2`, [afterSeq, limit]);
    return r.rows.map(entryFromRow);
  }

  async verify(): Promise<LedgerVerdict> {
    let prev = GENESIS_HASH;
    let expected = 1;
    let rows = 0;
    for (;;) {
      const page = await this.entries(expected - 1, 1000);
      if (!page.length) break;
      for (const e of page) {
        rows++;
        if (e.seq !== expected) return { ok: false, rows, brokenAt: expected, reason: 'gap', detail: `row ${expected} is missing (next is ${e.seq})` };
        if (e.prevHash !== prev) return { ok: false, rows, brokenAt: e.seq, reason: 'link', detail: `row ${e.seq} does not follow row ${e.seq - 1}` };
        if (ledgerHash(e) !== e.hash) return { ok: false, rows, brokenAt: e.seq, reason: 'hash', detail: `row ${e.seq} was changed after it was written` };
        prev = e.hash;
        expected++;
      }
    }
    return { ok: true, rows, head: rows ? prev : null };
  }
}
