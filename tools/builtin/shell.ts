import { constants } from 'node:os';
import { z } from 'zod';
import { defineTool, ToolError } from '../contract.js';
import type { Sandbox } from '../sandbox/types.js';
import { ensureWorkspace } from '../workspace.js';

const MAX_OUTPUT = 64 * 1024;

/** `shell_exec`: one bash command in the conversation's workspace, inside the sandbox. */
export function shellExecTool(sandbox: Sandbox) {
  return defineTool({
    name: 'shell_exec',
    description:
      sandbox.mode === 'bwrap'
        ? 'Run a bash command in the conversation workspace (mounted at /workspace, the working folder) inside a sandbox' +
          (sandbox.network === 'egress' ? ' whose network goes through a filtering proxy' : ' with no network') +
          '. Nothing started survives the call. Risky commands need an operator approval; some are never run.'
        : 'Run a bash command in the conversation workspace. Risky commands need an operator approval; some are never run.',
    effect: 'exec',
    toolset: 'shell',
    timeoutMs: 120_000,
    schema: z.object({
      command: z.string().min(1).max(10_000),
      timeoutSeconds: z.number().int().positive().max(600).optional(),
    }),
    commandOf: (args) => args.command,
    async execute({ command, timeoutSeconds }, ctx) {
      const workspace = ensureWorkspace(ctx.workspace, sandbox.owner);
      const seconds = timeoutSeconds ?? 60;
      const r = await sandbox.exec({ command, workspace, timeoutMs: seconds * 1000, signal: ctx.signal, maxOutputBytes: MAX_OUTPUT }).catch((err: Error) => {
        throw new ToolError(`could not run the command: ${err.message}`);
      });
      const tail = r.droppedBytes ? `\n[… ${r.droppedBytes} more bytes of output dropped]` : '';
      if (r.timedOut) throw new ToolError(`timed out after ${seconds} s (everything it started was stopped); output so far:\n${r.output}${tail}`);
      if (r.aborted) throw new ToolError('aborted (everything it started was stopped)');
      const status = r.signal ? `killed by ${r.signal}${limitHint(r.signal)}` : `exit code ${r.code}${signalledExit(r.code)}`;
      return { text: `${r.output}${tail}\n[${status}]`, details: { code: r.code, signal: r.signal } };
    },
  });
}

/** bash reports a command killed by signal N as exit code 128 + N. */
function signalledExit(code: number | null): string {
  if (code === null || code <= 128) return '';
  const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0];
  return name ? ` (killed by ${name}${limitHint(name)})` : '';
}

/** What a signal from a resource limit means, for the model. */
function limitHint(signal: string): string {
  if (signal === 'SIGXCPU') return ': the CPU time limit was reached';
  if (signal === 'SIGXFSZ') return ': the file size limit was reached';
  return '';
}
