import { accessSync, chownSync, constants, mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SsrfOptions } from '../../moat/ssrf.js';
import { BwrapSandbox, type SandboxPrograms } from './bwrap.js';
import type { EgressLog } from './egress-proxy.js';
import { type Sandbox, type SandboxOptions, SandboxUnavailableError } from './types.js';
import { UnconfinedSandbox } from './unconfined.js';

export { BwrapSandbox } from './bwrap.js';
export * from './types.js';
export { UnconfinedSandbox } from './unconfined.js';

const SEARCH_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findProgram(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':').filter((d) => d.startsWith('/')), ...SEARCH_PATH];
  return dirs.map((d) => join(d, name)).find(executable);
}

export const HOW_TO_FIX =
  'install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`); in a container, allow user namespaces ' +
  '(Docker: `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`; Ubuntu 24.04 hosts: ' +
  '`sysctl kernel.apparmor_restrict_unprivileged_userns=0`); or run tools without confinement with ' +
  '`tools.sandbox: none` (SWITCHBOARD_SANDBOX=none), only on a host that is itself a sandbox';

/** Finds the programs the bwrap sandbox needs; throws SandboxUnavailableError naming what is missing and how to fix it. */
export function findSandboxPrograms(opts: SandboxOptions): SandboxPrograms {
  if (opts.bwrapPath && !executable(opts.bwrapPath))
    throw new SandboxUnavailableError(`the tool sandbox's bubblewrap (tools.sandbox.bwrapPath) ${opts.bwrapPath} is not an executable file: ${HOW_TO_FIX}`);
  const bwrap = opts.bwrapPath ?? findProgram('bwrap');
  if (!bwrap) throw new SandboxUnavailableError(`the tool sandbox (tools.sandbox: bwrap) needs bubblewrap, which is not installed: ${HOW_TO_FIX}`);
  const prlimit = findProgram('prlimit');
  if (!prlimit) throw new SandboxUnavailableError('the tool sandbox needs prlimit (util-linux) for its resource limits: install util-linux');
  const programs: SandboxPrograms = { bwrap, prlimit };
  if (process.getuid?.() === 0) {
    const setpriv = findProgram('setpriv');
    if (!setpriv)
      throw new SandboxUnavailableError(
        'the gateway runs as root, and the tool sandbox needs setpriv (util-linux) to run tools as their own user: install util-linux',
      );
    programs.setpriv = setpriv;
  }
  if (opts.network === 'egress') {
    const socat = findProgram('socat');
    if (!socat)
      throw new SandboxUnavailableError(
        "tools.sandbox.network: egress needs socat inside the sandbox to reach the gateway's proxy: install socat (`apt-get install socat`), or use network: none",
      );
    programs.socat = socat;
  }
  return programs;
}

/** The flat `tools.sandbox` configuration, as the config schema gives it. */
export type SandboxSettings = Pick<SandboxOptions, 'mode' | 'network' | 'uid' | 'gid' | 'bwrapPath'> & SandboxOptions['limits'];

export function sandboxOptions(c: SandboxSettings): SandboxOptions {
  const { mode, network, uid, gid, bwrapPath, cpuSeconds, memoryMb, processes, fileSizeMb, openFiles, tmpMb } = c;
  return { mode, network, uid, gid, ...(bwrapPath ? { bwrapPath } : {}), limits: { cpuSeconds, memoryMb, processes, fileSizeMb, openFiles, tmpMb } };
}

export interface CreateSandboxDeps {
  /** The SSRF guard's exemptions for the egress proxy (the same as web_fetch's). */
  ssrf?: SsrfOptions;
  log?: EgressLog;
}

/**
 * The sandbox setups this process has already seen work (programs, network mode, owner, limits): a
 * second createSandbox with the same ones (doctor in the same process as start, tests) skips the probe.
 * Only a success is remembered: a failing host is probed again, so that fixing it shows at once.
 */
const proven = new Set<string>();

/**
 * Builds the configured sandbox and proves it works by running `true` in it:
 * a host where bubblewrap is missing or cannot create namespaces fails here,
 * at start, with how to fix it — never at the first tool call.
 */
export async function createSandbox(opts: SandboxOptions, deps: CreateSandboxDeps = {}): Promise<Sandbox> {
  if (opts.mode === 'none') return new UnconfinedSandbox();
  const programs = findSandboxPrograms(opts);
  // The proxy (and the SSRF guard under it) is loaded only for network: egress; doctor and a network: none start skip it.
  const egress = opts.network === 'egress' ? await (await import('./egress-proxy.js')).EgressProxy.start(deps.ssrf, deps.log) : undefined;
  const sandbox = new BwrapSandbox(opts, programs, egress);
  const setup = JSON.stringify([programs, opts.network, opts.uid, opts.gid, opts.limits]);
  if (proven.has(setup)) return sandbox;
  const probe = mkdtempSync(join(tmpdir(), 'switchboard-sandbox-probe-'));
  try {
    if (sandbox.owner) chownSync(probe, sandbox.owner.uid, sandbox.owner.gid);
    const r = await sandbox.exec({
      command: 'test -w /workspace && echo sandbox-ok',
      workspace: probe,
      timeoutMs: 15_000,
      signal: new AbortController().signal,
      maxOutputBytes: 4096,
    });
    if (r.code !== 0 || !r.output.includes('sandbox-ok')) {
      throw new SandboxUnavailableError(
        `the tool sandbox (bubblewrap at ${programs.bwrap}) could not start a sandbox here: ${r.output.trim() || (r.timedOut ? 'timed out' : `exit ${r.code ?? r.signal}`)}; ${HOW_TO_FIX}`,
      );
    }
  } catch (err) {
    await sandbox.close();
    throw err;
  } finally {
    // Empty unless the probe wrote to it: rmdir, without loading the recursive remover for nothing.
    try {
      rmdirSync(probe);
    } catch {
      rmSync(probe, { recursive: true, force: true });
    }
  }
  proven.add(setup);
  return sandbox;
}
