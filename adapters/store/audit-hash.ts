import { createHash } from 'node:crypto';
import type { LedgerEntry } from './ports/audit-ledger.js';

/** The hash before the first row. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * A ledger row's hash, computed here rather than trusted from the database: sha256 over each
 * field as `<utf-8 byte length>:<text>`, joined by `|` (the same as audit_row_hash in
 * migration 022, so the trigger's hashes verify, and a replaced trigger function does not).
 */
export function ledgerHash(e: Omit<LedgerEntry, 'hash'>): string {
  const field = (s: string) => `${Buffer.byteLength(s)}:${s}`;
  const text = [e.prevHash, String(e.seq), e.at, e.actor, e.action, e.subject ?? '', e.details].map(field).join('|');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
