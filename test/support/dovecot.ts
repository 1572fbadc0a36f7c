/**
 * A private Dovecot IMAP server for the email tests. Installs nothing: it needs
 * the `dovecot` binary (Debian: `apt-get install -y dovecot-imapd`) and fails
 * with a message that says so when it is missing.
 *
 * Everything lives in a temp dir: its own config file (plaintext IMAP on
 * 127.0.0.1 and a free port, no TLS, a passwd-file with one {PLAIN} user,
 * maildir storage), base/state dirs and the log. Run as root, login and mail
 * processes drop to the package's `dovenull`/`dovecot` users; run as anyone
 * else, everything runs as that user.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export interface Dovecot {
  host: string;
  port: number;
  user: string;
  password: string;
  dir: string;
  /** The server's log so far (for failure messages). */
  log(): string;
  /** Stops the server (every connection drops) and starts it again on the same port and mail. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export function dovecotBinary(): string | null {
  for (const p of ['/usr/sbin/dovecot', '/usr/local/sbin/dovecot']) if (existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v dovecot'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** True once the server sends its IMAP greeting. */
function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 1_000);
    sock.once('data', (d: Buffer) => done(d.toString().startsWith('* OK')));
    sock.once('error', () => done(false));
  });
}

/** Signals the process group of a dovecot this helper started (the master and every process it forked). */
function killGroupOf(proc: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!proc.pid) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    /* already gone */
  }
}

function idOf(name: string, flag: '-u' | '-g'): number | null {
  const r = spawnSync('id', [flag, name], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : null;
}

export async function startDovecot(opts: { user?: string; password?: string } = {}): Promise<Dovecot> {
  const bin = dovecotBinary();
  if (!bin) {
    throw new Error('dovecot is not installed: the email tests need a real IMAP server. Install it with `apt-get install -y dovecot-imapd` (Debian/Ubuntu).');
  }
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!/^2\.3\./.test(version)) {
    throw new Error(
      `dovecot ${version || '(unknown version)'} found at ${bin}; this helper writes a Dovecot 2.3 configuration (Debian 12 "bookworm": apt-get install -y dovecot-imapd).`,
    );
  }
  const user = opts.user ?? 'bot@example.test';
  const password = opts.password ?? 'bot-password-1';
  const dir = mkdtempSync(join(tmpdir(), 'sb-dovecot-'));
  chmodSync(dir, 0o755); // the auth process (dovecot user) reads the passwd file
  const mailRoot = join(dir, 'mail');
  mkdirSync(mailRoot);
  mkdirSync(join(dir, 'state'));
  const port = await freePort();
  writeFileSync(join(dir, 'passwd'), `${user}:{PLAIN}${password}::::::\n`, { mode: 0o644 });

  const root = process.getuid?.() === 0;
  let identity: string;
  if (root) {
    const uid = idOf('dovecot', '-u');
    const gid = idOf('dovecot', '-g');
    if (uid === null || gid === null || idOf('dovenull', '-u') === null) {
      throw new Error('dovecot is installed but its system users (dovecot, dovenull) are missing: reinstall dovecot-core.');
    }
    chownSync(mailRoot, uid, gid);
    identity = `mail_uid = ${uid}\nmail_gid = ${gid}\nfirst_valid_uid = 1\nfirst_valid_gid = 1\n`;
  } else {
    const me = userInfo().username;
    const group = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim();
    identity = `default_internal_user = ${me}\ndefault_internal_group = ${group}\ndefault_login_user = ${me}\n`;
  }

  const conf = join(dir, 'dovecot.conf');
  writeFileSync(
    conf,
    `# private test instance
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
login_trusted_networks = 127.0.0.0/8
${identity}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = static
  args = home=${mailRoot}/%u
}
mail_location = maildir:${mailRoot}/%u/Maildir
namespace inbox {
  inbox = yes
  separator = /
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
  chroot =
}
service anvil {
  chroot =
}
`,
  );

  let output = '';
  const log = () => {
    let file = '';
    try {
      file = readFileSync(join(dir, 'dovecot.log'), 'utf8');
    } catch {
      /* not yet */
    }
    return `${output}${file}`;
  };
  const launch = async (): Promise<{ proc: ChildProcess; exited: Promise<void> }> => {
    // Its own process group: stopping it ends the mail processes too (they outlive the master otherwise).
    const proc: ChildProcess = spawn(bin, ['-F', '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const killGroup = () => killGroupOf(proc);
    process.once('exit', killGroup);
    proc.once('exit', () => {
      killGroup();
      process.off('exit', killGroup);
    });
    proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`dovecot exited (${proc.exitCode}) at start:\n${log()}`);
      if (await canConnect(port)) break;
      if (Date.now() > deadline) {
        killGroupOf(proc);
        throw new Error(`dovecot did not accept connections on 127.0.0.1:${port}:\n${log()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { proc, exited };
  };
  const halt = async (running: { proc: ChildProcess; exited: Promise<void> }) => {
    if (running.proc.exitCode === null && running.proc.signalCode === null) {
      killGroupOf(running.proc, 'SIGTERM');
      const t = setTimeout(() => killGroupOf(running.proc), 5_000);
      await running.exited;
      clearTimeout(t);
    }
    killGroupOf(running.proc);
  };
  let running = await launch();

  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    dir,
    log,
    async restart() {
      await halt(running);
      running = await launch();
    },
    async stop() {
      await halt(running);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
