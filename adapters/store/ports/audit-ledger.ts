/** One row of the audit ledger: metadata of a decision or change, never message text. */
export interface LedgerEntry {
  seq: number;
  /** ISO 8601 in UTC with microseconds, exactly as hashed. */
  at: string;
  actor: string;
  action: string;
  subject: string | null;
  /** The details as stored (jsonb text), exactly as hashed. */
  details: string;
  prevHash: string;
  hash: string;
}

export type LedgerVerdict =
  | { ok: true; rows: number; head: string | null }
  | { ok: false; rows: number; brokenAt: number; reason: 'hash' | 'link' | 'gap'; detail: string };

/** The hash-chained audit ledger (adapters/store/migrations/022_audit_ledger.sql); rows are written through ApprovalRepository.audit and other writers' inserts. */
export interface AuditLedger {
  /** Entries in chain order after `afterSeq`, at most `limit`. */
  entries(afterSeq?: number, limit?: number): Promise<LedgerEntry[]>;
  /** Walks the whole chain, recomputing every hash: the first row that does not fit, or the head's hash. */
  verify(): Promise<LedgerVerdict>;
}
