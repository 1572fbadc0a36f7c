import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SwitchboardError } from '../../kernel/errors.js';

/**
 * PGlite is one Postgres inside one process: two processes opening the same
 * data folder each see only their own writes, and one loses them on restart.
 * The embedded default therefore holds `<dataDir>/switchboard.lock` for as long
 * as it runs. The file is created atomically (written aside, then hard-linked
 * into place, which fails when it exists), so it is never seen half-written.
 *
 * A lock whose pid is no longer alive (a crash, SIGKILL) is stale and taken over.
 */
export interface DataLockHolder {
  pid: number;
  /** What holds it: `start`, `migrate`... */
  command: string;
  /** Where the holder listens, once known (http://host:port), or the configured host:port. */
  url?: string;
  startedAt: string;
}

export class DataFolderInUseError extends SwitchboardError {
  readonly code = 'data_folder_in_use';
  constructor(
    readonly dataDir: string,
    readonly holder: DataLockHolder | null,
    readonly lockFile: string,
  ) {
    super(
      holder
        ? `the data folder ${dataDir} is in use by switchboard ${holder.command} (pid ${holder.pid}${holder.url ? `, ${holder.url}` : ''}, since ${holder.startedAt}); stop it first, or give this process its own SWITCHBOARD_DATA (if no such process runs, delete ${lockFile})`
        : `the data folder ${dataDir} is locked by ${lockFile}, which cannot be read; if no switchboard runs on this folder, delete it`,
    );
    this.name = 'DataFolderInUseError';
  }
}

export interface DataLock {
  readonly file: string;
  readonly holder: DataLockHolder;
  /** Records where this process listens (the port is known only once bound). */
  update(patch: { url: string }): void;
  /** Removes the lock file if it is still ours; idempotent. */
  release(): void;
}

export function dataLockFile(dataDir: string): string {
  return join(resolve(dataDir), 'switchboard.lock');
}

/**
 * Takes the lock on dataDir or throws DataFolderInUseError naming the holder.
 * `onStale` is told when a dead holder's lock is taken over.
 */
export function acquireDataLock(dataDir: string, who: { command: string; url?: string }, onStale?: (stale: DataLockHolder) => void): DataLock {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const file = dataLockFile(dir);
  const holder: DataLockHolder = { pid: process.pid, command: who.command, ...(who.url ? { url: who.url } : {}), startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(file, holder)) return lockHandle(file, holder);
    const raw = readRaw(file);
    if (raw === undefined) continue; // released meanwhile: try again
    const current = parseHolder(raw);
    if (!current) throw new DataFolderInUseError(dir, null, file);
    if (alive(current.pid)) throw new DataFolderInUseError(dir, current, file);
    // Stale. Remove it only if it is still the file we judged (another process may be taking it over too).
    if (readRaw(file) === raw) {
      try {
        unlinkSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      onStale?.(current);
    }
  }
  const last = parseHolder(readRaw(file) ?? '');
  throw new DataFolderInUseError(dir, last, file);
}

function tryCreate(file: string, holder: DataLockHolder): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(holder) + '\n', { mode: 0o644 });
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

function lockHandle(file: string, holder: DataLockHolder): DataLock {
  let released = false;
  const ours = () => {
    const current = parseHolder(readRaw(file) ?? '');
    return current?.pid === holder.pid && current.startedAt === holder.startedAt;
  };
  return {
    file,
    holder,
    update(patch) {
      if (released || !ours()) return;
      Object.assign(holder, patch);
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(holder) + '\n', { mode: 0o644 });
      renameSync(tmp, file); // atomic replace: readers see the old or the new record
    },
    release() {
      if (released) return;
      released = true;
      if (!ours()) return;
      try {
        unlinkSync(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    },
  };
}

function readRaw(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseHolder(raw: string): DataLockHolder | null {
  try {
    const v = JSON.parse(raw) as Partial<DataLockHolder>;
    if (typeof v.pid !== 'number' || !Number.isInteger(v.pid) || v.pid <= 0) return null;
    return {
      pid: v.pid,
      command: typeof v.command === 'string' ? v.command : 'start',
      ...(typeof v.url === 'string' ? { url: v.url } : {}),
      startedAt: typeof v.startedAt === 'string' ? v.startedAt : 'unknown',
    };
  } catch {
    return null;
  }
}

/** Signal 0 checks existence: ESRCH means gone, EPERM means alive under another user. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
