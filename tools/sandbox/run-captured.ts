import { spawn } from 'node:child_process';
import type { ExecResult } from './types.js';

export interface CapturedRun {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  timeoutMs: number;
  signal: AbortSignal;
  maxOutputBytes: number;
  /** Written to the program's fd 3, then closed (bwrap reads its options there: `--args 3`). */
  fd3?: Buffer;
}

/**
 * Spawns a program in its own process group, keeps the first maxOutputBytes of
 * its interleaved stdout and stderr, and SIGKILLs the whole group at the
 * deadline or on abort. Resolves when the program's pipes close.
 */
export function runCaptured(run: CapturedRun): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    if (run.signal.aborted) return resolve({ output: '', droppedBytes: 0, code: null, signal: null, timedOut: false, aborted: true });
    const child = spawn(run.file, run.args, { cwd: run.cwd, env: run.env, detached: true, stdio: ['ignore', 'pipe', 'pipe', run.fd3 ? 'pipe' : 'ignore'] });
    if (run.fd3) {
      const fd3 = child.stdio[3] as NodeJS.WritableStream & { on(e: 'error', f: () => void): void };
      fd3.on('error', () => {}); // a program that exits without reading it is reported by its exit
      fd3.end(run.fd3);
    }
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
    let aborted = false;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, run.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    run.signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const done = () => {
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      run.signal.removeEventListener('abort', onAbort);
    };
    child.on('error', (err) => {
      if (settled) return;
      done();
      reject(err);
    });
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
