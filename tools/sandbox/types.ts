import { SwitchboardError } from '../../kernel/errors.js';

/**
 * The execution boundary for tools that run programs. A Sandbox runs one shell
 * command in one conversation's workspace and guarantees that nothing it
 * started is still running when exec() settles.
 *
 * Contract: exec() never throws for what the command did (exit codes, signals,
 * limits, the deadline and aborts are in the result); it rejects only when the
 * command could not be started at all.
 */
export const SANDBOX_MODES = ['bwrap', 'none'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];
export const SANDBOX_NETWORKS = ['none', 'egress'] as const;
export type SandboxNetwork = (typeof SANDBOX_NETWORKS)[number];

export interface SandboxLimits {
  /** CPU seconds per process (RLIMIT_CPU). */
  cpuSeconds: number;
  /** Writable memory per process, in MiB (RLIMIT_DATA). */
  memoryMb: number;
  /** Processes the sandbox user may have at once (RLIMIT_NPROC). */
  processes: number;
  /** Largest file a command may write, in MiB (RLIMIT_FSIZE). */
  fileSizeMb: number;
  /** Open files per process (RLIMIT_NOFILE). */
  openFiles: number;
  /** Size of the sandbox's private /tmp, in MiB. */
  tmpMb: number;
}

export interface SandboxOptions {
  mode: SandboxMode;
  network: SandboxNetwork;
  limits: SandboxLimits;
  /** Host user and group the sandbox runs as when the gateway itself runs as root. */
  uid: number;
  gid: number;
  /** The bubblewrap program; unset: `bwrap` found on PATH. */
  bwrapPath?: string;
}

export interface ExecRequest {
  command: string;
  /** The conversation's workspace folder (host path, already created). */
  workspace: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Output bytes kept (stdout and stderr interleaved); the rest is counted, not kept. */
  maxOutputBytes: number;
}

export interface ExecResult {
  output: string;
  droppedBytes: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
}

export interface Sandbox {
  readonly mode: SandboxMode;
  readonly network: SandboxNetwork;
  /** Where the workspace appears to the command. */
  readonly workspacePath: (hostWorkspace: string) => string;
  /** Owner that files in a workspace must have for the sandboxed command to write them; null: the gateway's own user. */
  readonly owner: { uid: number; gid: number } | null;
  exec(req: ExecRequest): Promise<ExecResult>;
  close(): Promise<void>;
}

export const DEFAULT_LIMITS: SandboxLimits = { cpuSeconds: 60, memoryMb: 1024, processes: 256, fileSizeMb: 256, openFiles: 1024, tmpMb: 256 };

export class SandboxUnavailableError extends SwitchboardError {
  readonly code = 'sandbox_unavailable';
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}
