import v8 from 'node:v8';

/* The embedded Postgres' settings, in a module of their own so that the gateway thread can pass them
 * to the database thread (pglite-thread.ts) without loading PGlite itself. */

/**
 * Postgres settings for the one embedded session, beside PGlite's own start parameters. What each
 * costs and why it is safe (figures in the README's performance section):
 * - shared_buffers 8MB (Postgres' default is 128MB): Postgres touches its whole buffer pool at
 *   start, and WASM memory never shrinks, so the pool is resident for the life of the process. A page
 *   that is not cached is one read from the OS page cache. The pool size changes no commit rule.
 *   16MB → 8MB: 10 MB less resident, turns/s at c=64 the same within noise (136-143 against 139-140).
 * - max_connections 8 (default 100): PGlite runs one backend (single-user mode); the setting only
 *   sizes the shared arrays per connection (PGPROC, the lock table: 8 × 64 locks, far above the
 *   migrations' one transaction).
 * Left as they are: synchronous_commit (on), full_page_writes (on), fsync (PGlite starts with -F:
 * a write reaches the OS before COMMIT returns, so a killed process loses nothing; a power cut can).
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '8MB',
  max_connections: '8',
};

/**
 * PGlite's 9 MB WASM module compiled by V8's optimizing tier holds ~100 MB of machine code once a
 * load has warmed it; the baseline compiler's code is a fraction of that. Measured on one store
 * workload (2 transactions + 2 statements per iteration, 3,000 iterations): 5.1-5.7 ms CPU per
 * iteration either way (the cost is in the JS glue and the protocol, not the compiled Postgres),
 * RSS 179-191 MB against 285-297 MB. The flag is process-wide but only WASM compiles by it, and
 * the gateway loads no other WASM; it is set before PGlite compiles its module.
 */
export function baselineWasmOnly(): void {
  v8.setFlagsFromString('--liftoff-only');
}

/** The settings as Postgres command-line arguments, to follow PGlite's own start parameters. */
export function settingArgs(settings: Readonly<Record<string, string>> = PGLITE_SETTINGS): string[] {
  return Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}
