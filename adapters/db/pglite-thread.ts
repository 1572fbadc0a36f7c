import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ignoreError } from '../../kernel/errors.js';
import { packageRoot } from '../../kernel/paths.js';
import { needsInit, unpackPgliteSeed } from './pglite-seed.js';
import { baselineWasmOnly, settingArgs } from './pglite-settings.js';
import type { Db, Queryable, QueryResult } from './port.js';

/**
 * The embedded database on a thread of its own. PGlite is Postgres compiled to WASM: every statement
 * runs in the calling thread, so on the gateway's event loop each turn's SQL (and PGlite's protocol
 * glue, most of its cost) waited its turn with the HTTP, agent and provider work on one core. Here it
 * runs on the other core, and the gateway thread only posts a message per statement. The SQL, the
 * one session, `synchronous_commit` and every transaction boundary are unchanged: a transaction holds
 * the session on that thread until the gateway thread says commit or roll back, exactly as
 * PGlite's own `transaction` did in process.
 */

const workerFile = join(packageRoot, 'adapters', 'db', 'pglite-thread-worker.mjs');

interface Reply {
  id: number;
  rows?: unknown[];
  rowCount?: number;
  ready?: boolean;
  error?: Record<string, unknown> & { message: string };
}

/** A Postgres error from the thread, with its fields (code, constraint...) as the store reads them. */
function revive(e: Reply['error'] & {}): Error {
  const err = new Error(e.message);
  return Object.assign(err, e);
}

export async function openPgliteThread(dataDir?: string): Promise<Db> {
  baselineWasmOnly();
  if (dataDir && needsInit(dataDir)) await unpackPgliteSeed(dataDir);
  // execArgv: none of the process's own flags (a script's --input-type, a profiler's --cpu-prof) apply to this thread.
  // resourceLimits: the thread's young generation capped at 16 MB (V8's default lets it grow to 48 MB under load, all
  // of it resident afterwards): PGlite's glue allocates short-lived buffers per statement. Measured bare (4,800
  // inserts and 300 reads at 16 in flight): +35 MB RSS after load uncapped, +12 MB capped, the same time.
  const worker = new Worker(workerFile, {
    workerData: { dataDir, settingArgs: settingArgs() },
    execArgv: [],
    resourceLimits: { maxYoungGenerationSizeMb: 16 },
  });
  const waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  let next = 1;
  let stopped: Error | undefined;
  /** Set by close: the thread then holds the process until it has exited, so what runs after close (the data lock's release) still runs. */
  let closing = false;

  const ready = new Promise<void>((resolve, reject) => {
    waiting.set(0, { resolve: () => resolve(), reject });
  });
  worker.on('message', (r: Reply) => {
    const w = waiting.get(r.id);
    if (!w) return;
    waiting.delete(r.id);
    if (waiting.size === 0 && !closing) worker.unref();
    if (r.error) w.reject(revive(r.error));
    else w.resolve(r);
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const stop = (err: Error) => {
    stopped ??= err;
    for (const w of waiting.values()) w.reject(stopped);
    waiting.clear();
  };
  worker.on('error', (err) => stop(new Error(`the embedded database thread failed: ${err.message}`, { cause: err })));
  worker.on('exit', (code) => stop(new Error(`the embedded database thread stopped (exit code ${code})`)));

  const call = (msg: Record<string, unknown>): Promise<Reply> => {
    if (stopped) return Promise.reject(stopped);
    const id = next++;
    return new Promise((resolve, reject) => {
      // The thread keeps the process alive only while a statement is in flight: an idle handle
      // left open (a CLI verb that never closes it) must not hold the process.
      if (waiting.size === 0) worker.ref();
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...msg });
    });
  };
  const queryable = (tx?: number): Queryable => ({
    async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
      const r = await call({ op: 'query', sql, params, tx });
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
  });

  await ready;
  const base = queryable();
  return {
    kind: 'pglite',
    query: base.query,
    async transaction(fn) {
      const { id } = await call({ op: 'begin' });
      let result: Awaited<ReturnType<typeof fn>>;
      try {
        result = await fn(queryable(id));
      } catch (err) {
        // The error that made fn throw is the one to report; a failed rollback only means the thread is gone.
        await call({ op: 'end', tx: id, commit: false }).catch(ignoreError('the rollback of a failed transaction'));
        throw err;
      }
      await call({ op: 'end', tx: id, commit: true });
      return result;
    },
    async exec(sql) {
      await call({ op: 'exec', sql });
    },
    async close() {
      if (stopped) return;
      closing = true;
      await call({ op: 'close' });
      await exited;
    },
  };
}
