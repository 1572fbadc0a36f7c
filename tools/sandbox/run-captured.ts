import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { ignoreError } from '../../kernel/errors.js';
import type { ExecResult } from './types.js';

export interface CapturedRun {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  timeoutMs: number;
  signal: AbortSignal;
  maxOutputBytes: number;
  /** Written to the program's fds 3, 4, … in order, then closed (bwrap reads its options and seccomp filter there). */
  extraFds?: Buffer[];
  /** Niceness of the program (and all it starts): tools yield the CPU to the gateway. */
  nice?: number;
}

/**
 * Spawns a program in its own process group, keeps the first maxOutputBytes of
 * its interleaved stdout and stderr, and SIGKILLs the whole group at the
 * deadline or on abort. Resolves when the program's pipes close.
 */
export function runCaptured(run: CapturedRun): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    let aborted = false;
    function done() {
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      run.signal.removeEventListener('abort', onAbort);
    }
    if (run.signal.aborted) return resolve({ output: '', droppedBytes: 0, code: null, signal: null, timedOut: false, aborted: true });
    const extra = run.extraFds ?? [];
    const child = spawn(run.file, run.args, {
      cwd: run.cwd,
      env: run.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...extra.map(() => 'pipe' as const)],
    });
    // Before anything else: a spawn that fails (EMFILE, ENOENT) reports here, never as an unhandled 'error'.
    child.on('error', (err) => {
      if (settled) return;
      done();
      reject(err);
    });
    if (child.pid === undefined || !child.stdout || !child.stderr) return; // the 'error' above rejects
    if (run.nice !== undefined) {
      try {
        setPriority(child.pid, run.nice);
      } catch {
        /* not fatal: the limits still hold */
      }
    }
    extra.forEach((data, i) => {
      const w = child.stdio[3 + i] as (NodeJS.WritableStream & { on(e: 'error', f: () => void): void }) | null;
      if (!w) return;
      w.on('error', ignoreError('a program that exits without reading it is reported by its exit'));
      w.end(data);
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let dropped = 0;
    const take = (b: Buffer) => {
      const room = run.maxOutputBytes - kept;
      if (room <= 0) {
        dropped += b.length;
        return;
      }
      const part = b.length > room ? b.subarray(0, room) : b;
      chunks.push(part);
      kept += part.length;
      dropped += b.length - part.length;
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    let timedOut = false;
    function killGroup() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, run.timeoutMs);
    run.signal.addEventListener('abort', onAbort, { once: true });

    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      done();
      // Anything left in the group goes too (only possible without a PID namespace).
      killGroup();
      resolve({ output: Buffer.concat(chunks).toString('utf8'), droppedBytes: dropped, code, signal, timedOut, aborted });
    };
    child.on('close', finish);
    // A process that left the group (setsid) may hold the pipes open after the
    // program exited; without a PID namespace to take it down, stop reading.
    child.on('exit', (code, signal) => {
      grace = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(code, signal);
      }, 250);
    });
  });
}
