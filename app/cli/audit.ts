import { parseArgs } from 'node:util';
import { AuditLedgerStore } from '../../adapters/store/audit-ledger.js';
import { migrate } from '../../adapters/store/migrate.js';
import type { LedgerEntry } from '../../adapters/store/ports/audit-ledger.js';
import { loadConfig } from '../../src/config.js';
import { lockDataDir, openDb } from '../infra.js';

export const AUDIT_USAGE = `usage: switchboard audit <verb> [--json]
  verify [--head HASH]     recompute every row's hash and check the chain; --head: also check that a head
                           recorded earlier (from verify or export) is still in the chain, so nothing after it
                           was cut off. Exit 0 intact, 1 broken.
  export [--after SEQ]     the ledger as JSON lines (one row each, in chain order), from row SEQ+1

Opens the database itself (DATABASE_URL, or the embedded data folder, which a running \`switchboard start\` holds:
stop it first).`;

/** `switchboard audit verify|export`: the hash-chained audit ledger, read from the database directly. */
export async function runAudit(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, head: { type: 'string' }, after: { type: 'string' } } });
  } catch (e) {
    err.write(`switchboard audit: ${(e as Error).message}\n${AUDIT_USAGE}\n`);
    return 2;
  }
  const [verb, ...extra] = parsed.positionals;
  const after = parsed.values.after === undefined ? 0 : Number(parsed.values.after);
  if (!verb || !['verify', 'export'].includes(verb) || extra.length || !Number.isInteger(after) || after < 0) {
    err.write(`${AUDIT_USAGE}\n`);
    return 2;
  }
  const cfg = loadConfig();
  const lock = cfg.databaseUrl ? undefined : lockDataDir(cfg, 'audit');
  try {
    const db = await openDb(cfg);
    try {
      await migrate(db);
      const ledger = new AuditLedgerStore(db);
      return verb === 'verify' ? await verify(ledger, parsed.values.head, parsed.values.json === true, out) : await exportLedger(ledger, after, out);
    } finally {
      await db.close();
    }
  } finally {
    lock?.release();
  }
}

async function verify(ledger: AuditLedgerStore, head: string | undefined, json: boolean, out: NodeJS.WritableStream): Promise<number> {
  const verdict = await ledger.verify();
  let headFound: boolean | undefined;
  if (verdict.ok && head !== undefined) headFound = await contains(ledger, head);
  const ok = verdict.ok && headFound !== false;
  if (json) out.write(`${JSON.stringify({ ...verdict, ok, ...(head !== undefined ? { headFound } : {}) })}\n`);
  else if (!verdict.ok) out.write(`audit ledger BROKEN at row ${verdict.brokenAt} (${verdict.reason}): ${verdict.detail}; ${verdict.rows} rows read\n`);
  else if (headFound === false)
    out.write(`audit ledger BROKEN: the head ${head} is not in the chain (rows after it were removed, or it is from another ledger)\n`);
  else out.write(`audit ledger intact: ${verdict.rows} rows, head ${verdict.head ?? '(empty)'}\n`);
  return ok ? 0 : 1;
}

async function contains(ledger: AuditLedgerStore, hash: string): Promise<boolean> {
  for (let after = 0; ; ) {
    const page = await ledger.entries(after, 1000);
    if (!page.length) return false;
    if (page.some((e) => e.hash === hash)) return true;
    after = page[page.length - 1]!.seq;
  }
}

async function exportLedger(ledger: AuditLedgerStore, after: number, out: NodeJS.WritableStream): Promise<number> {
  for (;;) {
    const page: LedgerEntry[] = await ledger.entries(after, 1000);
    if (!page.length) return 0;
    for (const e of page) out.write(`${JSON.stringify(e)}\n`);
    after = page[page.length - 1]!.seq;
  }
}
