import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AuditLedgerStore } from '../../adapters/store/audit-ledger.js';
import type { LedgerEntry } from '../../adapters/store/ports/audit-ledger.js';
import { loadConfig } from '../../src/config.js';
import { pgliteDir } from '../infra-mode.js';

/** What verify and export read of the ledger. */
type Ledger = Pick<AuditLedgerStore, 'verify' | 'entries'>;

/** The ledger of an embedded data folder that holds no database yet: no rows (nothing is created to find that out). */
const EMPTY_LEDGER: Ledger = { verify: async () => ({ ok: true, rows: 0, head: null }), entries: async () => [] };

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
  const run = (ledger: Ledger) => (verb === 'verify' ? verify(ledger, parsed.values.head, parsed.values.json === true, out) : exportLedger(ledger, after, out));
  // An embedded folder without a database has an empty ledger: said without starting PGlite (or creating the folder).
  if (!cfg.databaseUrl && !existsSync(pgliteDir(cfg))) return run(EMPTY_LEDGER);
  // The store and the database drivers are loaded only to read a database.
  const [{ AuditLedgerStore }, { migrate }, { lockDataDir, openDb }] = await Promise.all([
    import('../../adapters/store/audit-ledger.js'),
    import('../../adapters/store/migrate.js'),
    import('../infra.js'),
  ]);
  const lock = cfg.databaseUrl ? undefined : lockDataDir(cfg, 'audit');
  try {
    const db = await openDb(cfg);
    try {
      await migrate(db);
      return await run(new AuditLedgerStore(db));
    } finally {
      await db.close();
    }
  } finally {
    lock?.release();
  }
}

async function verify(ledger: Ledger, head: string | undefined, json: boolean, out: NodeJS.WritableStream): Promise<number> {
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

async function contains(ledger: Ledger, hash: string): Promise<boolean> {
  for (let after = 0; ; ) {
    const page = await ledger.entries(after, 1000);
    if (!page.length) return false;
    if (page.some((e) => e.hash === hash)) return true;
    after = page[page.length - 1]!.seq;
  }
}

async function exportLedger(ledger: Ledger, after: number, out: NodeJS.WritableStream): Promise<number> {
  for (;;) {
    const page: LedgerEntry[] = await ledger.entries(after, 1000);
    if (!page.length) return 0;
    for (const e of page) out.write(`${JSON.stringify(e)}\n`);
    after = page[page.length - 1]!.seq;
  }
}
