import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One temporary folder per test run, removed when the run ends, and the run's
 * stray processes stopped. Every suite's temporary files (PGlite folders, data
 * folders, private Postgres and Dovecot roots) land in os.tmpdir(), which the
 * workers and every process they spawn read from TMPDIR: pointing TMPDIR at the
 * run's folder puts all of it in one place. A suite that times out or a worker
 * that is killed leaves its files behind only until the run ends; a run that was
 * itself killed is cleaned up by the next one (its folder names a dead pid).
 */
const RUN_PREFIX = 'switchboard-test-run-';
const MARK = 'SWITCHBOARD_TEST_RUN';

export function setup(): () => void {
  const base = tmpdir();
  removeStaleRuns(base);
  const dir = join(base, `${RUN_PREFIX}${process.pid}`);
  mkdirSync(dir, { recursive: true });
  process.env.TMPDIR = dir;
  process.env[MARK] = String(process.pid);
  return () => {
    stopStrays(String(process.pid));
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
}

function removeStaleRuns(base: string): void {
  for (const name of readdirSync(base)) {
    if (!name.startsWith(RUN_PREFIX)) continue;
    const pid = Number(name.slice(RUN_PREFIX.length));
    if (Number.isInteger(pid) && alive(pid)) continue;
    stopStrays(String(pid));
    rmSync(join(base, name), { recursive: true, force: true, maxRetries: 3 });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Kills what this run started and left running (gateways, Redis, Postgres, Dovecot): they carry the run's mark in their environment. */
function stopStrays(run: string): void {
  const mine = new Set([process.pid, process.ppid]);
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return; // not Linux: nothing to look through
  }
  for (const p of pids) {
    const pid = Number(p);
    if (mine.has(pid)) continue;
    let environ: string;
    try {
      if (statSync(`/proc/${p}`).uid !== process.getuid?.()) continue;
      environ = readFileSync(`/proc/${p}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (!environ.split('\0').includes(`${MARK}=${run}`)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already exited
    }
  }
}
