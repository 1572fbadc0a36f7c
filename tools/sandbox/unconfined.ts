import { runCaptured } from './run-captured.js';
import type { ExecRequest, ExecResult, Sandbox } from './types.js';

/**
 * `tools.sandbox: none`: the command runs as the gateway's own user, in the
 * workspace folder, with only a scrubbed environment between it and the host.
 * Only for hosts that are themselves a sandbox; start and doctor warn.
 */
export class UnconfinedSandbox implements Sandbox {
  readonly mode = 'none' as const;
  readonly network = 'egress' as const;
  readonly owner = null;

  workspacePath(hostWorkspace: string): string {
    return hostWorkspace;
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    const env = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: req.workspace, LANG: 'C.UTF-8', TERM: 'dumb', TMPDIR: req.workspace };
    return runCaptured({
      file: 'bash',
      args: ['-c', req.command],
      cwd: req.workspace,
      env,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      maxOutputBytes: req.maxOutputBytes,
    });
  }

  async close(): Promise<void> {}
}
