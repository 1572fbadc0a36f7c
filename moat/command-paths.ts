// Path predicates shared by the command classifier's rules: normalisation, the system and home
// locations whose change wrecks the machine or persists, credential material, and the workspace
// boundary (the shell runs in the conversation's workspace folder, so relative paths that do not
// climb out are inside it; absolute, home-relative and climbing paths are not).
import type { Tier } from './command-tier.js';

const HOME_RE = /^(?:~[A-Za-z0-9_.-]*|\$HOME|\$\{HOME\})(?=\/|$)/;
const HOME_DIR_RE = /^\/(?:home|Users)\/[^/]+(?=\/|$)|^\/root(?=\/|$)/;

/** Lexically normalises a path: `$HOME`→`~`, collapses `//`, resolves `.`/`..`, drops a trailing `/`. */
export function normPath(input: string): string {
  let s = input.trim();
  let prefix = '';
  const m = HOME_RE.exec(s);
  if (m) {
    prefix = m[0].startsWith('~') ? m[0] : '~';
    s = s.slice(m[0].length);
  } else if (!s.startsWith('/')) {
    return s.replace(/\/+/g, '/').replace(/^(\.\/)+/, '') || s;
  }
  const out: string[] = [];
  for (const part of s.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0 && prefix) return '/home';
      out.pop();
      continue;
    }
    out.push(part);
  }
  if (prefix) return out.length ? `${prefix}/${out.join('/')}` : prefix;
  return `/${out.join('/')}`;
}

/** Rewrites `/home/u/x`, `/root/x`, `/Users/u/x` to `~/x` so home-relative checks see one form. */
export function homeRelative(p: string): string {
  if (p.startsWith('~')) return p.replace(/^~[^/]*/, '~');
  return p.replace(HOME_DIR_RE, '~');
}

const TOP_DIRS = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'home',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'opt',
  'proc',
  'root',
  'run',
  'sbin',
  'srv',
  'sys',
  'usr',
  'var',
  'snap',
  'mnt',
  'media',
  'Users',
  'System',
  'Library',
  'Applications',
  'private',
  'Volumes',
  'nix',
]);
const USR_DIRS = new Set(['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libexec', 'local', 'share', 'include']);
const GLOB_ONLY_SEG = /^[*?.[\]!{},]*\*[*?.[\]!{},]*$/;

/**
 * True for paths whose recursive removal/permission change wrecks the machine: `/`, `/*`,
 * top-level system directories (`/etc`, `/usr`, `/home`, ...), a few second-level ones (`/usr/lib`,
 * `/var/lib`), globs over the top level (`/e*`), and (with `home`) the home directory itself.
 */
export function isCriticalPath(text: string, home = true): boolean {
  if (text.trim() === '') return false;
  let p = normPath(text);
  for (;;) {
    const segs = p.split('/');
    const last = segs[segs.length - 1]!;
    if (segs.length > 1 && GLOB_ONLY_SEG.test(last)) {
      p = segs.slice(0, -1).join('/') || '/';
      continue;
    }
    break;
  }
  if (p === '/') return true;
  if (p.startsWith('~')) return home && /^~[A-Za-z0-9_.-]*$/.test(p);
  if (/^\/(?:home|Users)\/[^/]+$/.test(p)) return home;
  const segs = p.split('/');
  if (segs[0] !== '') return false;
  const top = segs[1] ?? '';
  if (segs.length === 2) return TOP_DIRS.has(top) || /[*?[]/.test(top);
  if (/[*?[]/.test(top)) return true;
  if (segs.length === 3) {
    const second = segs[2]!;
    if (top === 'usr' && USR_DIRS.has(second)) return true;
    if (top === 'var' && (second === 'lib' || second === 'spool')) return true;
    if (top === 'private' && (second === 'etc' || second === 'var')) return true;
    if (top === 'System' || top === 'Library') return true;
  }
  return false;
}

export function isBlockDevice(text: string): boolean {
  const p = normPath(text);
  return /^\/dev\/(?:[shv]d[a-z*?[]|xvd[a-z*?[]|nvme\d|mmcblk\d|r?disk\d|md\d|md\/|dm-\d|mapper\/|nbd\d|loop\d|sr\d|sg\d|mtdblock|root$|block\/|disk\/|[sv]d\*)/.test(
    p,
  );
}

export function isKernelMemory(p: string): boolean {
  return /^\/dev\/(?:k?mem|port)$/.test(p) || p === '/proc/sysrq-trigger' || p === '/proc/kcore';
}

export function isBenignDev(p: string): boolean {
  return /^\/dev\/(?:null|zero|stdout|stderr|stdin|tty|fd\/\d+|pts\/\d+|full)$/.test(p) || /^\/proc\/self\/fd\/\d+$/.test(p);
}

export function isHistoryFile(text: string): boolean {
  if (/^\$\{?HISTFILE\}?$/.test(text.trim())) return true;
  const last = normPath(text).split('/').pop() ?? '';
  return /^\.(?:bash_|zsh_|sh_|ksh_|python_|mysql_|psql_|node_repl_|sqlite_|irb_|)history$|^\.zhistory$|^fish_history$|^\.lesshst$/.test(last);
}

// Files and folders under the home directory that programs read at login, at shell start or when
// they run (so a write there persists or hijacks a later command), plus ssh and credential stores.
const STARTUP_RE = new RegExp(
  '^~/(?:Library/LaunchAgents(?:/|$)|bin(?:/|$)|\\.(?:' +
    [
      'ssh(?:/|$)',
      'bashrc$',
      'bash_profile$',
      'bash_login$',
      'bash_logout$',
      'bash_aliases$',
      'profile$',
      'zshrc$',
      'zshenv$',
      'zprofile$',
      'zlogin$',
      'zlogout$',
      'cshrc$',
      'tcshrc$',
      'kshrc$',
      'config/fish/',
      'config/autostart(?:/|$)',
      'config/autostart-scripts/',
      'config/systemd/',
      'local/share/systemd/',
      'config/environment\\.d/',
      'config/plasma-workspace/',
      'xinitrc$',
      'xsession$',
      'xsessionrc$',
      'xprofile$',
      'pam_environment$',
      'gnupg(?:/|$)',
      'aws/',
      'kube/',
      'docker/config\\.json$',
      'netrc$',
      'git-credentials$',
      'gitconfig$',
      'config/git/',
      'vimrc$',
      'vim/',
      'exrc$',
      'config/nvim/',
      'emacs$',
      'emacs\\.d/',
      'tmux\\.conf$',
      'screenrc$',
      'curlrc$',
      'wgetrc$',
      'npmrc$',
      'pypirc$',
      'config/pip/',
      'pip/',
      'local/bin(?:/|$)',
      'lesskey$',
    ].join('|') +
    '))',
);

/** Shell startup files, ssh keys/config, program configs that name helpers, PATH folders and credential stores under home. */
export function isStartupFile(text: string): boolean {
  return STARTUP_RE.test(homeRelative(normPath(text)));
}

/** System locations that ordinary work never writes: /etc, /usr, /boot, /bin, /lib, /var (not /var/tmp), ... */
export function isSystemPath(text: string): boolean {
  const p = normPath(text);
  if (/^\/(?:etc|usr|boot|bin|sbin|lib|lib32|lib64|libx32|sys|proc|root|System|Library|private\/etc|snap)(?:\/|$)/.test(p)) return true;
  if (/^\/var(?:\/|$)/.test(p) && !/^\/var\/tmp(?:\/|$)/.test(p)) return true;
  if (/^\/opt$/.test(p)) return true;
  return false;
}

// Credential and key material, three ways: under the home directory, by file name anywhere
// (including the workspace), and system locations. Public keys (`*.pub`) are not secrets.
const HOME_SECRET_RE = new RegExp(
  '^~/(?:' +
    [
      '\\.ssh(?:$|/(?!.*\\.pub$))',
      '\\.aws(?:/|$)',
      '\\.gnupg(?:/|$)',
      '\\.config/gcloud(?:/|$)',
      '\\.kube(?:/|$)',
      '\\.azure(?:/|$)',
      '\\.docker/config\\.json$',
      '\\.config/gh(?:/|$)',
      '\\.config/hub$',
      '\\.vault-token$',
      '\\.terraform\\.d/credentials\\.tfrc\\.json$',
      '\\.config/rclone(?:/|$)',
      '\\.s3cfg$',
      '\\.boto$',
      '\\.password-store(?:/|$)',
      '\\.local/share/keyrings(?:/|$)',
      '\\.my\\.cnf$',
      '\\.gem/credentials$',
      '\\.cargo/credentials(?:\\.toml)?$',
      '\\.config/doctl(?:/|$)',
      '\\.oci(?:/|$)',
      '\\.mozilla(?:/|$)',
      '\\.config/(?:google-chrome|chromium|BraveSoftware)(?:/|$)',
      'Library/Keychains(?:/|$)',
      '\\.m2/settings\\.xml$',
      '\\.(?:bash_|zsh_|sh_|mysql_|psql_|python_|node_repl_)?history$',
    ].join('|') +
    ')',
);
const NAME_SECRET_RE =
  /^(?:\.env(?:\.(?!example$|sample$|template$|dist$|defaults?$)[\w.-]+)?|id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?|.+\.(?:pem|key|p12|pfx|jks|keystore|ppk|kdbx)|\.netrc|\.git-credentials|\.pgpass|\.npmrc|\.pypirc|\.htpasswd|credentials(?:\.json)?|service[-_]?account[\w.-]*\.json|kubeconfig|\.vault-token|terraform\.tfstate(?:\.backup)?|authorized_keys|known_hosts)$/i;
const SYSTEM_SECRET_RE = new RegExp(
  '^(?:' +
    [
      '/etc/(?:shadow|gshadow|shadow-|gshadow-|master\\.passwd|security/opasswd|krb5\\.keytab)$',
      '/etc/sudoers(?:\\.d)?(?:/|$)',
      '/etc/ssh/ssh_host_\\w+_key$',
      '/etc/ssl/private(?:/|$)',
      '/etc/kubernetes/(?:pki/|\\w+\\.conf$)',
      '/etc/rancher/k3s/k3s\\.yaml$',
      '/etc/letsencrypt/(?:live|archive)(?:/|$)',
      '/etc/wireguard(?:/|$)',
      '/etc/NetworkManager/system-connections(?:/|$)',
      '/proc/[^/]+/(?:environ|mem|maps|auxv)$',
      '/(?:var/)?run/secrets(?:/|$)',
      '/dev/k?mem$',
    ].join('|') +
    ')',
);

/** The path names credential or key material (or a folder of it). Globs count when their fixed part does. */
export function isSecretPath(text: string): boolean {
  const p = homeRelative(normPath(text.replace(/^@/, '')));
  if (HOME_SECRET_RE.test(p) || SYSTEM_SECRET_RE.test(p)) return true;
  const last = p.split('/').pop() ?? '';
  return NAME_SECRET_RE.test(last) && !/^[*?]/.test(last);
}

// Folders that hold credential material somewhere below them: a recursive copy, archive or
// upload of one of these carries secrets.
const SECRET_ANCESTOR_RE =
  /^(?:\/|\/etc|\/etc\/ssh|\/etc\/ssl|\/etc\/kubernetes|\/home|\/home\/[^/]+|\/Users|\/Users\/[^/]+|\/root|~|~\/\.config|~\/\.local|~\/\.local\/share|~\/Library|\/run|\/var|\/var\/run|\/var\/lib|\/proc)$/;

/** The path is credential material or a folder that contains some (for recursive copies and archives). */
export function containsSecrets(text: string): boolean {
  if (isSecretPath(text)) return true;
  let p = homeRelative(normPath(text.replace(/^@/, '')));
  const glob = p.search(/[*?[]/);
  if (glob >= 0) {
    const slash = p.lastIndexOf('/', glob);
    if (slash < 0) return false; // a glob in the current folder
    p = p.slice(0, slash) || '/';
  }
  return SECRET_ANCESTOR_RE.test(p) || (glob >= 0 && isSecretPath(p));
}

// Devices and descriptors that reveal nothing when read.
const HARMLESS_READ_RE = /^\/dev\/(?:null|zero|full|u?random|stdin|tty|fd\/\d+)$|^\/proc\/self\/fd\/\d+$/;

/**
 * The folder commands run in: '' is the workspace (the shell's starting folder), `a/b` a folder
 * inside it, an absolute or `~` path a known folder outside it, and '?' somewhere outside it that
 * is not known (a `..` above the workspace, a computed `cd`).
 */
export type Cwd = string;

/** The folder is outside the workspace. */
export function cwdOutside(cwd: Cwd): boolean {
  return cwd === '?' || cwd.startsWith('/') || cwd.startsWith('~');
}

/**
 * Where a path lies relative to the workspace, read from folder `cwd`. Returns the normalised path
 * when it is outside, else undefined. Paths that start with an unresolved variable (other than
 * $HOME/$PWD) are unknown and not reported.
 */
export function outsidePath(text: string, cwd: Cwd = ''): string | undefined {
  let t = text.trim();
  if (t === '' || t === '-') return undefined;
  t = t.replace(/^(?:\$PWD|\$\{PWD\})(?=\/|$)/, '.');
  const p = normPath(t);
  if (p.startsWith('/')) return HARMLESS_READ_RE.test(p) ? undefined : p;
  if (p.startsWith('~')) return p;
  if (p.startsWith('$')) return undefined;
  if (cwdOutside(cwd)) return cwd === '?' ? p : normPath(`${cwd}/${p}`);
  let depth = cwd ? cwd.split('/').length : 0;
  for (const seg of p.split('/')) {
    if (seg === '..') depth--;
    else if (seg !== '.' && seg !== '') depth++;
    if (depth < 0) return p;
  }
  return undefined;
}

/** The folder after `cd target` from `cwd`. */
export function changeDir(cwd: Cwd, target: string): Cwd {
  const p = normPath(target.trim().replace(/^(?:\$PWD|\$\{PWD\})(?=\/|$)/, '.'));
  if (p.startsWith('/') || p.startsWith('~')) return p;
  if (p.startsWith('$') || cwd === '?') return '?';
  if (cwdOutside(cwd)) return normPath(`${cwd}/${p}`);
  const segs = cwd ? cwd.split('/') : [];
  for (const seg of p.split('/')) {
    if (seg === '..') {
      if (!segs.length) return '?';
      segs.pop();
    } else if (seg !== '.' && seg !== '') segs.push(seg);
  }
  return segs.join('/');
}

/** A path as seen from `cwd`, as one key: the same file gets the same key whichever folder named it. */
export function pathFrom(cwd: Cwd, path: string): string {
  const p = normPath(path);
  if (p.startsWith('/') || p.startsWith('~') || p.startsWith('$')) return p;
  const joined = changeDir(cwd, p);
  return joined === '?' ? `?/${p}` : joined;
}

export interface Finding {
  tier: Tier;
  reason: string;
}

/**
 * The finding for writing to `text`. `verb` reads like "redirect overwrites" / "tee writes to".
 * Returns null for harmless sinks (/dev/null, /dev/stderr, ...).
 */
export function writeFinding(text: string, verb: string, dynamic = false): Finding | null {
  const p = normPath(text);
  if (isBenignDev(p)) return null;
  if (isBlockDevice(p)) return { tier: 'blocked', reason: `${verb} block device ${p} (destroys the disk)` };
  if (isKernelMemory(p)) {
    return p === '/proc/sysrq-trigger'
      ? { tier: 'blocked', reason: `${verb} /proc/sysrq-trigger (can crash or reboot the machine)` }
      : { tier: 'blocked', reason: `${verb} ${p} (kernel memory)` };
  }
  if (isHistoryFile(text)) return { tier: 'dangerous', reason: `${verb} shell history ${p} (wipes history)` };
  if (isStartupFile(p)) return { tier: 'dangerous', reason: `${verb} ${p} (login, ssh or credential file)` };
  if (isSystemPath(p)) return { tier: 'dangerous', reason: `${verb} system path ${p}` };
  if (/^\/dev\/(?:tcp|udp)\//.test(p)) return { tier: 'caution', reason: `opens a network connection (${p})` };
  if (p.startsWith('/dev/')) return { tier: 'caution', reason: `${verb} device ${p}` };
  if (dynamic) return { tier: 'caution', reason: `${verb} a computed path (${text})` };
  return { tier: 'caution', reason: `${verb} ${p}` };
}
