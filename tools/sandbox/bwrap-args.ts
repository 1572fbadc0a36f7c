import { existsSync, lstatSync, mkdtempSync, readlinkSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxLimits } from './types.js';

/** Where the workspace is mounted inside the sandbox, and the user the command sees. */
export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_UID = 1000;
export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The top-level folders that are links into /usr on merged-/usr systems (real folders elsewhere). */
const ROOT_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The parts of /etc that programs need to run (the loader cache, alternatives
 * links, TLS roots, time zone); nothing with host accounts, hostnames or secrets.
 */
const ETC_FILES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'protocols',
  'services',
  'mime.types',
  'magic',
  'inputrc',
  'bash.bashrc',
  'os-release',
];

/** The system part of the bwrap command line, read once per process: it only depends on the host's layout. */
export function systemBinds(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const p of ROOT_LINKS) {
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(p), p);
    else if (st.isDirectory()) args.push('--ro-bind', p, p);
  }
  for (const f of ETC_FILES) if (existsSync(join('/etc', f))) args.push('--ro-bind', join('/etc', f), join('/etc', f));
  return args;
}

/** An /etc/passwd, group and hosts that know only the sandbox user and localhost. */
export class SandboxEtc {
  readonly dir = mkdtempSync(join(tmpdir(), 'switchboard-sandbox-etc-'));
  constructor(uid: number, gid: number) {
    writeFileSync(join(this.dir, 'passwd'), `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:${uid}:${gid}:sandbox:${SANDBOX_WORKSPACE}:/bin/bash\n`);
    writeFileSync(join(this.dir, 'group'), `root:x:0:\nsandbox:x:${gid}:\n`);
    writeFileSync(join(this.dir, 'hosts'), '127.0.0.1 localhost sandbox\n::1 localhost\n');
  }
  binds(): string[] {
    return ['passwd', 'group', 'hosts'].flatMap((f) => ['--ro-bind', join(this.dir, f), `/etc/${f}`]);
  }
  remove(): void {
    // The three files it wrote, then the folder; the recursive remover only if something else is in there.
    try {
      for (const f of ['passwd', 'group', 'hosts']) unlinkSync(join(this.dir, f));
      rmdirSync(this.dir);
    } catch {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** Resource limits, applied by util-linux prlimit to bwrap and so to everything it starts. */
export function prlimitArgs(l: SandboxLimits): string[] {
  const mb = 1024 * 1024;
  return [
    // Soft limit first (SIGXCPU, which says why), the hard one two seconds later.
    `--cpu=${l.cpuSeconds}:${l.cpuSeconds + 2}`,
    `--data=${l.memoryMb * mb}`,
    `--nproc=${l.processes}`,
    `--fsize=${l.fileSizeMb * mb}`,
    `--nofile=${l.openFiles}`,
    '--core=0',
  ];
}

export interface BwrapCommand {
  /** Which namespaces to unshare and how the user is set (see namespaceArgs). */
  namespaces: string[];
  system: string[];
  etc: string[];
  workspace: string;
  limits: SandboxLimits;
  /** Binds and environment the network mode adds (the egress proxy's socket and variables). */
  extraBinds: string[];
  extraEnv: Record<string, string>;
  /** The argv run inside the sandbox. */
  inner: string[];
}

/**
 * The namespaces. As an ordinary user, bwrap unshares all of them, the user
 * namespace included (the command is uid 1000 inside, the gateway's user
 * outside, and may not make user namespaces of its own). As root, a user
 * namespace could only map the command to host root, so bwrap unshares the
 * others, keeps just the capabilities to change user, and the command starts
 * through setpriv as its own host user with no capabilities and no_new_privs.
 */
export function namespaceArgs(privileged: boolean): string[] {
  return privileged
    ? ['--unshare-pid', '--unshare-ipc', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID']
    : // --unshare-all only tries the user namespace; --disable-userns needs it for certain (bwrap 0.8).
      ['--unshare-all', '--unshare-user', '--disable-userns', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)];
}

/** As root: what the command starts through to become the sandbox's host user. */
export function dropToUser(setpriv: string, uid: number, gid: number): string[] {
  return [setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs'];
}

/**
 * The bwrap options for one call: the namespaces, a fresh /proc that shows
 * only the sandbox, a read-only minimal system, the workspace read-write at
 * /workspace, a private /tmp, a clean environment, and the sandbox killed with
 * its parent.
 */
export function bwrapArgs(c: BwrapCommand): string[] {
  const env: Record<string, string> = {
    PATH: SANDBOX_PATH,
    HOME: SANDBOX_WORKSPACE,
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    TMPDIR: '/tmp',
    ...c.extraEnv,
  };
  return [
    ...c.namespaces,
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    ...c.system,
    ...c.etc,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    // Writable by the command's user whoever created it (as root, bwrap makes it root's).
    '--perms',
    '1777',
    '--size',
    String(c.limits.tmpMb * 1024 * 1024),
    '--tmpfs',
    '/tmp',
    '--bind',
    c.workspace,
    SANDBOX_WORKSPACE,
    ...c.extraBinds,
    '--chdir',
    SANDBOX_WORKSPACE,
    '--clearenv',
    ...Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]),
    '--',
    ...c.inner,
  ];
}
