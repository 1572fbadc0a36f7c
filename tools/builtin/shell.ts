import { spawn } from 'node:child_process';
import { z } from 'zod';
import { defineTool, ToolError } from '../contract.js';
import { ensureWorkspace } from '../workspace.js';

const MAX_OUTPUT = 64 * 1024;

/** Only these reach a command: nothing from the gateway's own environment (keys, URLs). */
function scrubbedEnv(workspace: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: workspace, LANG: 'C.UTF-8', TERM: 'dumb', TMPDIR: workspace };
}

export const shellExec = defineTool({
  name: 'shell_exec',
  description: 'Run a bash command in the conversation workspace. Risky commands need an operator approval; some are never run.',
  effect: 'exec',
  toolset: 'shell',
  timeoutMs: 120_000,
  schema: z.object({
    command: z.string().min(1).max(10_000),
    timeoutSeconds: z.number().int().positive().max(600).optional(),
  }),
  commandOf: (args) => args.command,
  execute({ command, timeoutSeconds }, ctx) {
    return new Promise((resolve, reject) => {
      const workspace = ensureWorkspace(ctx.workspace);
      const child = spawn('bash', ['-c', command], { cwd: workspace, env: scrubbedEnv(workspace), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let dropped = 0;
      const take = (b: Buffer) => {
        const room = MAX_OUTPUT - Buffer.byteLength(out);
        if (room <= 0) dropped += b.length;
        else {
          out += b.subarray(0, room).toString('utf8');
          dropped += Math.max(0, b.length - room);
        }
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      // Kill the whole process group: a command's children must not outlive it.
      const kill = () => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      };
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, (timeoutSeconds ?? 60) * 1000);
      ctx.signal.addEventListener('abort', kill, { once: true });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(new ToolError(`could not run the command: ${err.message}`));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', kill);
        const tail = dropped ? `\n[… ${dropped} more bytes of output dropped]` : '';
        if (timedOut) return reject(new ToolError(`timed out after ${timeoutSeconds ?? 60} s; output so far:\n${out}${tail}`));
        const status = signal ? `killed by ${signal}` : `exit code ${code}`;
        resolve({ text: `${out}${tail}\n[${status}]`, details: { code, signal } });
      });
    });
  },
});
