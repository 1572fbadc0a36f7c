import { bwrapArgs, dropToUser, namespaceArgs, prlimitArgs, SANDBOX_UID, SANDBOX_WORKSPACE, SandboxEtc, systemBinds } from './bwrap-args.js';
import type { EgressProxy } from './egress-proxy.js';
import { runCaptured } from './run-captured.js';
import { keyringFilter } from './seccomp.js';
import type { ExecRequest, ExecResult, Sandbox, SandboxOptions } from './types.js';

/** The host programs the sandbox is built from, found by the probe. */
export interface SandboxPrograms {
  bwrap: string;
  prlimit: string;
  /** Only when the gateway runs as root: the command starts through it as the sandbox's own host user. */
  setpriv?: string;
  /** Only with network egress: forwards the sandbox's loopback proxy port to the gateway's proxy socket. */
  socat?: string;
}

/** The only variable bwrap itself gets: its PID 1 inside the sandbox keeps this environment, readable at /proc/1/environ. */
const HOST_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

/**
 * Runs first inside the sandbox: closes every descriptor above 2. bwrap passes
 * on whatever the gateway inherited from its own parent (a descriptor of a
 * host folder would be a way out of the mount namespace).
 */
const CLOSE_INHERITED_FDS = 'for f in /proc/$$/fd/*; do n=${f##*/}; case $n in 0|1|2) ;; *) exec {n}>&- ;; esac; done; ';

/** The niceness of every command: tools yield the CPU to the gateway, Postgres and Redis. */
const TOOL_NICE = 10;

/** Inside the sandbox, the proxy's socket and the loopback port the forwarder listens on. */
const EGRESS_SOCKET = '/run/switchboard-egress.sock';
const EGRESS_PORT = 3128;

/**
 * Runs each command under bubblewrap: its own user, mount, PID, IPC, network,
 * UTS and cgroup namespaces, a read-only minimal system, the workspace at
 * /workspace, resource limits, and — because the command's PID namespace dies
 * with it — nothing left running after the call.
 */
export class BwrapSandbox implements Sandbox {
  readonly mode = 'bwrap' as const;
  readonly owner: { uid: number; gid: number } | null;
  private readonly etc: SandboxEtc;
  private readonly system = systemBinds();

  constructor(
    private readonly opts: SandboxOptions,
    private readonly programs: SandboxPrograms,
    private readonly egress?: EgressProxy,
  ) {
    this.owner = programs.setpriv ? { uid: opts.uid, gid: opts.gid } : null;
    this.etc = this.owner ? new SandboxEtc(this.owner.uid, this.owner.gid) : new SandboxEtc(SANDBOX_UID, SANDBOX_UID);
  }

  get network() {
    return this.opts.network;
  }

  workspacePath(): string {
    return SANDBOX_WORKSPACE;
  }

  /** The full command line for one call (exposed for the probe and tests). */
  argv(command: string, workspace: string): string[] {
    const egress = this.egress && this.programs.socat;
    const proxyUrl = `http://127.0.0.1:${EGRESS_PORT}`;
    const drop = this.owner ? dropToUser(this.programs.setpriv!, this.owner.uid, this.owner.gid) : [];
    // Start the forwarder, wait until it listens, then become the command.
    const forwarder = egress
      ? `${this.programs.socat} -T 600 TCP-LISTEN:${EGRESS_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${EGRESS_SOCKET} 2>/dev/null & for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/${EGRESS_PORT}) 2>/dev/null && break; sleep 0.005; done; `
      : '';
    const inner = [...drop, '/bin/bash', '-c', `${CLOSE_INHERITED_FDS}${forwarder}exec /bin/bash -c "$1"`, 'sandbox', command];
    const bwrap = bwrapArgs({
      namespaces: namespaceArgs(!!this.owner),
      system: this.system,
      etc: this.etc.binds(),
      workspace,
      limits: this.opts.limits,
      extraBinds: egress
        ? ['--ro-bind', this.programs.socat!, this.programs.socat!, '--perms', '0755', '--dir', '/run', '--bind', this.egress!.socketPath, EGRESS_SOCKET]
        : [],
      extraEnv: egress
        ? { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, ALL_PROXY: proxyUrl, NO_PROXY: '', no_proxy: '' }
        : {},
      inner,
    });
    return [this.programs.prlimit, ...prlimitArgs(this.opts.limits), '--', this.programs.bwrap, ...bwrap];
  }

  /**
   * bwrap reads its options from fd 3 (`--args 3`): the sandbox's PID 1 is
   * bwrap itself, and its /proc/1/cmdline then shows the command, not the
   * mounts (/proc/self/mountinfo still shows the workspace's host path). The
   * seccomp filter comes on fd 4.
   */
  exec(req: ExecRequest): Promise<ExecResult> {
    if (req.command.includes('\0')) return Promise.reject(new Error('the command contains a NUL byte'));
    const argv = this.argv(req.command, req.workspace);
    const at = argv.indexOf(this.programs.bwrap);
    const end = argv.indexOf('--', at);
    const filter = keyringFilter();
    const options = [...argv.slice(at + 1, end), ...(filter ? ['--seccomp', '4'] : [])];
    return runCaptured({
      file: argv[0]!,
      args: [...argv.slice(1, at + 1), '--args', '3', ...argv.slice(end)],
      extraFds: [Buffer.from(options.map((a) => `${a}\0`).join('')), ...(filter ? [filter] : [])],
      nice: TOOL_NICE,
      env: HOST_ENV,
      timeoutMs: req.timeoutMs,
      signal: req.signal,
      maxOutputBytes: req.maxOutputBytes,
    });
  }

  async close(): Promise<void> {
    await this.egress?.close();
    this.etc.remove();
  }
}
