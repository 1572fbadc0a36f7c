/**
 * The embedded database's own thread (adapters/db/pglite-thread.ts starts it). It holds the one
 * PGlite instance and answers the gateway thread's messages:
 *   { id, op: 'query', sql, params, tx? }  -> { id, rows, rowCount } | { id, error }
 *   { id, op: 'begin' }                    -> { id } once the transaction holds the session
 *   { id, op: 'end', tx, commit }          -> { id } once it committed (or rolled back) | { id, error }
 *   { id, op: 'exec', sql }                -> { id }
 *   { id, op: 'close' }                    -> { id }, then the thread ends
 * Plain JavaScript, so the same file runs from the sources (tests) and from dist/.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/** Every field of a Postgres error the store reads (code, constraint, detail...) survives the copy. */
function plainError(err) {
  const e = err instanceof Error ? err : new Error(String(err));
  return { ...e, name: e.name, message: e.message, stack: e.stack };
}

const reply = (msg) => parentPort.postMessage(msg);
const db = await PGlite.create(workerData.dataDir ?? undefined, { startParams: [...PGlite.defaultStartParams, ...workerData.settingArgs] });
/** Open transactions by the id of their `begin`: the PGlite handle, and how to end it. */
const open = new Map();

async function handle(m) {
  switch (m.op) {
    case 'query': {
      const target = m.tx === undefined ? db : open.get(m.tx)?.tx;
      if (!target) throw new Error(`transaction ${m.tx} is not open`);
      const r = await target.query(m.sql, m.params);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    }
    case 'begin': {
      const entry = {};
      open.set(m.id, entry);
      let began;
      const holding = new Promise((resolve) => {
        began = resolve;
      });
      entry.done = db.transaction(
        (tx) =>
          new Promise((commit, rollback) => {
            Object.assign(entry, { tx, commit, rollback });
            began();
          }),
      );
      // A BEGIN that fails settles `done` before the callback ever runs.
      await Promise.race([holding, entry.done]).catch((err) => {
        open.delete(m.id);
        throw err;
      });
      // `end` awaits `done` and reports its outcome; this only keeps a rejection from being unhandled first.
      entry.done.catch(() => undefined);
      return {};
    }
    case 'end': {
      const entry = open.get(m.tx);
      if (!entry) throw new Error(`transaction ${m.tx} is not open`);
      open.delete(m.tx);
      if (m.commit) entry.commit();
      else entry.rollback(new Error('rolled back'));
      try {
        await entry.done;
      } catch (err) {
        if (m.commit) throw err;
      }
      return {};
    }
    case 'exec':
      await db.exec(m.sql);
      return {};
    case 'close':
      await db.close();
      return {};
    default:
      throw new Error(`unknown operation ${m.op}`);
  }
}

parentPort.on('message', (m) => {
  handle(m).then(
    (r) => {
      reply({ id: m.id, ...r });
      if (m.op === 'close') parentPort.close();
    },
    (err) => reply({ id: m.id, error: plainError(err) }),
  );
});
reply({ id: 0, ready: true });
