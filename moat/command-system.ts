// Rules for changes to the system that outlive the command or hide it: cron persistence, root
// accounts, kernel hardening switched off with sysctl, logs and auditing wiped or stopped, and
// processes killed by a computed list.
import { hasLong, hasShort, optValues, positionals, type Rule, type RuleContext } from './command-args.js';

// ---------------------------------------------------------------------------------------------
// cron

/** Commands of crontab lines (five time fields or an @keyword, then the command). */
function cronCommands(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const l = line.trim();
    if (!l || l.startsWith('#') || /^[A-Za-z_][A-Za-z0-9_]*\s*=/.test(l)) continue;
    const m = /^@\w+\s+(.*)$/.exec(l) ?? /^(?:\S+\s+){5}(.*)$/.exec(l);
    if (m?.[1]) out.push(m[1]);
  }
  return out;
}

export const crontab: Rule = (v, ctx) => {
  const a = v.args;
  if (hasShort(a, 'r', 'u') || hasLong(a, 'remove')) {
    ctx.add('dangerous', 'crontab -r deletes all scheduled jobs');
    return;
  }
  if (hasShort(a, 'l', 'u') && !hasShort(a, 'e', 'u')) return;
  if (hasShort(a, 'e', 'u')) {
    ctx.add('caution', 'changes scheduled jobs (crontab -e)');
    return;
  }
  // `crontab FILE`, `crontab -`, or a crontab fed on stdin: installs a whole new table unasked.
  const file = positionals(a, 'usc')[0]?.text;
  const source = file && file !== '-' ? file : 'standard input';
  ctx.add('dangerous', `installs a crontab from ${source} (scheduled jobs persist and run unattended)`);
  const text = file && file !== '-' ? ctx.fileContent(file) : v.stdin?.text;
  for (const cmd of text ? cronCommands(text) : []) ctx.classifyCode(cmd, 'crontab entry');
};

// ---------------------------------------------------------------------------------------------
// accounts

const ADMIN_GROUPS = /^(?:root|sudo|wheel|admin|adm|docker|lxd|libvirt|disk|shadow|systemd-journal)$/;

function uidZero(values: string[]): boolean {
  return values.some((u) => /^0+$/.test(u.trim()));
}

/** useradd/adduser: uid 0 (a second root), duplicate uids, admin groups. */
export const useradd: Rule = (v, ctx) => {
  const a = v.args;
  const uids = [...optValues(a, 'u', 'uid')];
  const gids = [...optValues(a, 'g', 'gid'), ...optValues(a, null, 'ingroup')];
  const groups = [...optValues(a, 'G', 'groups'), ...optValues(a, null, 'add_extra_groups')].flatMap((g) => g.split(','));
  if (uidZero(uids)) ctx.add('dangerous', `creates an account with uid 0, a second root (${v.name} ${a.map((x) => x.text).join(' ')})`);
  if (hasShort(a, 'o', 'ugGcdeEfkKpsZ') || hasLong(a, 'non-unique')) ctx.add('caution', `${v.name} -o allows a duplicate uid`);
  if (gids.some((g) => /^(?:0+|root)$/.test(g))) ctx.add('dangerous', `creates an account in the root group (${v.name})`);
  if (groups.some((g) => ADMIN_GROUPS.test(g))) ctx.add('dangerous', `creates an account in an admin group (${groups.join(',')})`);
  // Debian's `adduser USER GROUP` adds an existing user to a group.
  const pos = positionals(a, 'ugGcdeEfkKpsZ', [
    'uid',
    'gid',
    'groups',
    'home',
    'shell',
    'comment',
    'ingroup',
    'gecos',
    'conf',
    'firstuid',
    'lastuid',
    'add_extra_groups',
  ]);
  if (v.name === 'adduser' && pos.length === 2 && ADMIN_GROUPS.test(pos[1]!.text))
    ctx.add('dangerous', `adds ${pos[0]!.text} to the admin group ${pos[1]!.text}`);
  ctx.add('caution', `creates a user account (${v.name})`);
};

/** gpasswd -a/-M, usermod is dangerous as a whole (./command-rules.ts). */
export const gpasswd: Rule = (v, ctx) => {
  const group = positionals(v.args, 'adMAr')[0]?.text ?? '';
  if ((hasShort(v.args, 'aMA') || hasLong(v.args, 'add', 'members', 'administrators')) && ADMIN_GROUPS.test(group))
    ctx.add('dangerous', `adds a user to the admin group ${group} (gpasswd)`);
  ctx.add('caution', `changes group membership (gpasswd ${v.args.map((x) => x.text).join(' ')})`);
};

// ---------------------------------------------------------------------------------------------
// kernel hardening (sysctl)

// Hardening switches and the values that weaken them (documented in the kernel's sysctl docs and
// the usual hardening guides). Keys use dots; sysctl also accepts slashes.
const HARDENING: [RegExp, (v: string) => boolean, string][] = [
  [/^kernel\.randomize_va_space$/, (v) => v !== '2', 'address space layout randomisation'],
  [/^kernel\.yama\.ptrace_scope$/, (v) => v === '0', "ptrace restrictions (any process can read another one's memory)"],
  [/^kernel\.kptr_restrict$/, (v) => v === '0', 'kernel pointer hiding'],
  [/^kernel\.dmesg_restrict$/, (v) => v === '0', 'kernel log restriction'],
  [/^kernel\.perf_event_paranoid$/, (v) => Number(v) < 2, 'perf event restrictions'],
  [/^kernel\.unprivileged_bpf_disabled$/, (v) => v === '0', 'unprivileged BPF restriction'],
  [/^kernel\.unprivileged_userns_clone$/, (v) => v === '1', 'unprivileged user namespace restriction'],
  [/^kernel\.kexec_load_disabled$/, (v) => v === '0', 'kexec lock'],
  [/^kernel\.sysrq$/, (v) => v !== '0' && v !== '176', 'SysRq restriction'],
  [/^kernel\.core_pattern$/, (v) => v.startsWith('|'), 'core dump handling (a program the kernel runs as root)'],
  [/^kernel\.modprobe$/, () => true, 'module loader path (a program the kernel runs as root)'],
  [/^kernel\.io_uring_disabled$/, (v) => v === '0', 'io_uring restriction'],
  [/^vm\.mmap_min_addr$/, (v) => Number(v) < 4096, 'NULL-page protection'],
  [/^vm\.unprivileged_userfaultfd$/, (v) => v === '1', 'userfaultfd restriction'],
  [/^fs\.protected_(?:symlinks|hardlinks|fifos|regular)$/, (v) => v === '0', 'link and file protections in shared folders'],
  [/^fs\.suid_dumpable$/, (v) => v !== '0', 'core dumps of setuid programs'],
  [/^dev\.tty\.ldisc_autoload$/, (v) => v === '1', 'line discipline autoload restriction'],
  [/^net\.ipv[46]\.conf\.[^.]+\.rp_filter$/, (v) => v === '0', 'reverse path filtering'],
  [/^net\.ipv[46]\.conf\.[^.]+\.accept_source_route$/, (v) => v !== '0', 'source route rejection'],
  [/^net\.ipv[46]\.conf\.[^.]+\.(?:accept_redirects|secure_redirects)$/, (v) => v !== '0', 'ICMP redirect rejection'],
  [/^net\.ipv4\.tcp_syncookies$/, (v) => v === '0', 'SYN flood protection'],
  [/^net\.ipv4\.icmp_echo_ignore_broadcasts$/, (v) => v === '0', 'broadcast ping protection'],
];

/** The hardening a `key=value` assignment switches off, or undefined. */
export function weakensKernel(key: string, value: string): string | undefined {
  const k = key.replace(/\//g, '.').toLowerCase();
  const v = value.trim().replace(/^["']|["']$/g, '');
  return HARDENING.find(([re, weak]) => re.test(k) && weak(v))?.[2];
}

function sysctlAssignments(text: string, ctx: RuleContext, how: string): void {
  const m = /^\s*-?\s*([\w.\/*-]+)\s*=\s*(.*)$/.exec(text);
  if (!m) return;
  const what = weakensKernel(m[1]!, m[2]!);
  if (what) ctx.add('dangerous', `switches off kernel hardening: ${what} (${how} ${m[1]}=${m[2]})`);
}

export const sysctl: Rule = (v, ctx) => {
  const a = v.args;
  const assigns = a.filter((x) => !x.text.startsWith('-') && x.text.includes('='));
  const load = optValues(a, 'p', 'load');
  const loading = hasShort(a, 'p') || hasLong(a, 'load', 'system');
  if (!assigns.length && !loading && !hasShort(a, 'w') && !hasLong(a, 'write')) return; // reads: sysctl -a, sysctl key
  ctx.add('caution', 'changes kernel parameters (sysctl)');
  for (const x of assigns) sysctlAssignments(x.text, ctx, 'sysctl');
  for (const f of load) {
    const text = ctx.fileContent(f);
    if (text) for (const line of text.split('\n')) sysctlAssignments(line, ctx, `sysctl -p ${f}:`);
  }
};

/** A write to /proc/sys/<key>: the same check as sysctl, from the path and the written text. */
export function procSysWrite(path: string, text: string | undefined, ctx: RuleContext): void {
  const m = /^\/proc\/sys\/(.+)$/.exec(path);
  if (!m || text === undefined) return;
  sysctlAssignments(`${m[1]}=${text.trim()}`, ctx, `write to ${path}:`);
}

// ---------------------------------------------------------------------------------------------
// logs and auditing

export const journalctl: Rule = (v, ctx) => {
  const vac = v.args.find((x) => /^--vacuum-(?:size|time|files)/.test(x.text));
  if (vac) ctx.add('dangerous', `deletes system logs (journalctl ${vac.text})`);
  else if (v.args.some((x) => /^--(?:rotate|flush|relinquish-var|setup-keys|sync)/.test(x.text))) ctx.add('caution', 'changes the journal (journalctl)');
};

export const dmesg: Rule = (v, ctx) => {
  if (hasShort(v.args, 'cC', 'FflnsS') || hasLong(v.args, 'clear', 'read-clear')) ctx.add('dangerous', 'clears the kernel log (dmesg -c/-C)');
  else if (hasShort(v.args, 'nDE', 'FflsS') || hasLong(v.args, 'console-off', 'console-on', 'console-level'))
    ctx.add('caution', 'changes kernel console logging (dmesg)');
};

export const auditctl: Rule = (v, ctx) => {
  const enable = optValues(v.args, 'e', null);
  if (hasShort(v.args, 'D', 'abeflmrRsw') || enable.includes('0')) ctx.add('dangerous', 'turns off or deletes audit rules (auditctl)');
  else if (hasShort(v.args, 'lsm', 'abefrRw') && v.args.length <= 1) return;
  else ctx.add('caution', 'changes audit rules (auditctl)');
};

/** Services whose stop cuts off access or hides what happens next. */
export const CRITICAL_SERVICES =
  /^(?:ssh|sshd|openssh-server|networking|network|NetworkManager|systemd-networkd|systemd-resolved|dbus|firewalld|ufw|iptables|nftables|systemd-logind|docker|containerd|kubelet|auditd|rsyslog|syslog|syslog-ng|systemd-journald|journald|apparmor|fail2ban|osqueryd|falco|wazuh-agent|crowdstrike|falcon-sensor)(?:\.service|\.socket)?$/;

/** `service NAME stop|restart|...` (SysV init wrapper). */
export const service: Rule = (v, ctx) => {
  const pos = positionals(v.args);
  const [unit = '', action = ''] = pos.map((p) => p.text);
  if (!action || /^(?:status|--status-all)$/.test(action) || unit === '--status-all') return;
  if (/^(?:stop|disable|mask|kill|restart|force-stop)$/.test(action) && CRITICAL_SERVICES.test(unit))
    ctx.add('dangerous', `service ${unit} ${action} (cuts off access or stops logging)`);
  ctx.add('caution', `changes services (service ${unit} ${action})`);
};

// ---------------------------------------------------------------------------------------------
// processes

export const kill: Rule = (v, ctx) => {
  const a = v.args;
  let signal = 'TERM';
  let sigSet = false;
  const pids: typeof a = [];
  for (let i = 0; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--') {
      pids.push(...a.slice(i + 1));
      break;
    }
    if ((t === '-s' || t === '-n') && i + 1 < a.length && !sigSet) {
      signal = a[++i]!.text;
      sigSet = true;
      continue;
    }
    if (t === '-l' || t === '-L' || t === '--list' || t === '--table') return;
    if (!sigSet && pids.length === 0 && /^-[A-Za-z0-9+]+$/.test(t)) {
      signal = t.slice(1);
      sigSet = true;
      continue;
    }
    pids.push(a[i]!);
  }
  const ids = pids.map((p) => p.text);
  const sig = signal.toUpperCase().replace(/^SIG/, '');
  const hard = sig === '9' || sig === 'KILL';
  if (ids.includes('-1')) {
    ctx.add('blocked', `kill -${signal} -1 signals every process (kills the session/system)`);
    return;
  }
  if (ids.includes('1') && !/^(?:HUP|1|0|USR1|USR2|10|12|CONT|18)$/.test(sig)) {
    ctx.add('blocked', `kill -${signal} 1 targets init (PID 1)`);
    return;
  }
  if (ids.some((p) => /^-\d+$/.test(p))) ctx.add('dangerous', `kill signals a whole process group (${ids.join(' ')})`);
  // A list from a substitution (`$(pgrep x)`, `` `pidof x` ``, a variable holding one) or from
  // xargs is chosen at run time; signal 0 only probes.
  const computed = pids.filter((p) => p.subst);
  if ((computed.length || v.viaXargs) && sig !== '0') {
    ctx.add('dangerous', `kills a computed list of processes (kill ${computed.map((p) => p.raw).join(' ') || 'via xargs'})`);
  }
  ctx.add('caution', `kills processes${hard ? ' with SIGKILL' : ''} (${ids.join(' ')})`);
};

export const pkill: Rule = (v, ctx) => {
  const a = v.args;
  const users = [...optValues(a, 'u', 'euid'), ...optValues(a, 'U', 'uid'), ...optValues(a, null, 'user')];
  if (users.some((u) => u.split(',').some((x) => x === 'root' || x === '0'))) {
    ctx.add('blocked', `${v.name} -u root kills every root process`);
    return;
  }
  if (users.length) ctx.add('dangerous', `${v.name} kills every process of user ${users.join(',')}`);
  const pats = positionals(a, v.name === 'killall' ? 'suognyo' : 'sugUGPtFnoaHc', [
    'signal',
    'user',
    'uid',
    'euid',
    'group',
    'pgroup',
    'parent',
    'session',
    'terminal',
    'pidfile',
    'ns',
    'nslist',
    'older-than',
    'younger-than',
    'context',
  ]).map((p) => p.text);
  if (v.name !== 'killall' && pats.some((p) => p === '' || p === '.' || p === '.*' || p === '^' || p === '$')) {
    ctx.add('blocked', `${v.name} pattern "${pats.join(' ')}" matches every process`);
    return;
  }
  if (pats.some((p) => /^(?:init|systemd|kthreadd|launchd)$/.test(p))) {
    ctx.add('blocked', `${v.name} kills ${pats.join(' ')} (PID 1 / kernel threads)`);
    return;
  }
  if (pats.some((p) => /^(?:sshd|dbus-daemon|dbus|systemd-logind|Xorg|gdm|sddm|lightdm|NetworkManager|containerd|dockerd)$/.test(p))) {
    ctx.add('dangerous', `${v.name} kills ${pats.join(' ')} (can cut off access)`);
  }
  // Matching by name (or by whole command line with -f) picks the victims at run time: every
  // process that matches, including the gateway itself when it shares the name (node).
  const full = v.name !== 'killall' && (hasShort(a, 'f', 'sugUGPtFnoaHc') || hasLong(a, 'full'));
  ctx.add('dangerous', `kills every process matching ${full ? 'the command line ' : ''}"${pats.join(' ')}" (${v.name})`);
};
