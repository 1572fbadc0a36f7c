// Data flow across a command line: where credential material comes from (commands that print
// secrets; secret files are in ./command-paths.ts), where data leaves for the network (sinks and
// the local files each one sends), and which files a download lands in. The classifier carries
// these facts through pipes, substitutions, variables, redirects to files and `&&`/`;` chains.
import type { Arg } from './command-args.js';
import { type OptionTable, scanOperands, scanOptions } from './command-options.js';
import { isSecretPath } from './command-paths.js';

const words = (args: Arg[]): string[] => args.map((a) => a.text);
const nonOptions = (args: Arg[]): string[] => words(args).filter((w) => !w.startsWith('-'));

// ---------------------------------------------------------------------------------------------
// Sources: commands whose output is credential material

/** What secret `name args` prints, or undefined. (`env`/`printenv` without names: the environment.) */
export function secretOutput(name: string, args: Arg[]): string | undefined {
  const w = words(args);
  const pos = nonOptions(args);
  const has = (...xs: string[]): boolean => xs.every((x) => w.includes(x));
  switch (name) {
    case 'env':
    case 'printenv':
      return pos.length === 0 || pos.some((p) => /KEY|TOKEN|SECRET|PASS|CRED|AUTH|SESSION/i.test(p)) ? `the environment (${name})` : undefined;
    case 'set':
    case 'export':
    case 'declare':
    case 'typeset':
      return pos.length === 0 && (name === 'set' ? w.length === 0 : w.some((x) => /^-[a-zA-Z]*[px]/.test(x)) || w.length === 0)
        ? `shell variables (${name})`
        : undefined;
    case 'history':
      return 'shell history (history)';
    case 'ps':
      return w.some((x) => /^[a-zA-Z]*e[a-zA-Z]*$/.test(x) && !x.startsWith('-')) ? 'process environments (ps e)' : undefined;
    case 'gpg':
    case 'gpg2':
      return w.some((x) => /^--export-secret-(?:keys|subkeys)$/.test(x)) ? 'private keys (gpg --export-secret-keys)' : undefined;
    case 'aws':
      if (pos[0] === 'configure' && (pos[1] === 'export-credentials' || (pos[1] === 'get' && /secret|key|token/i.test(pos[2] ?? ''))))
        return `AWS credentials (aws configure ${pos[1]})`;
      if (pos[0] === 'sts' && /^(?:get-session-token|assume-role[\w-]*|get-federation-token)$/.test(pos[1] ?? ''))
        return `AWS session credentials (aws sts ${pos[1]})`;
      if (pos[0] === 'secretsmanager' && pos[1] === 'get-secret-value') return 'a secret (aws secretsmanager get-secret-value)';
      if (pos[0] === 'ssm' && /^get-parameters?(?:-by-path)?$/.test(pos[1] ?? '') && w.includes('--with-decryption')) return 'a decrypted parameter (aws ssm)';
      if (/^(?:ecr|ecr-public)$/.test(pos[0] ?? '') && pos[1] === 'get-login-password') return 'a registry password (aws ecr get-login-password)';
      if (pos[0] === 'iam' && pos[1] === 'create-access-key') return 'a new access key (aws iam create-access-key)';
      return undefined;
    case 'gcloud':
      if (w.includes('print-access-token') || w.includes('print-identity-token')) return 'a Google access token (gcloud auth print-*-token)';
      if (pos[0] === 'secrets' && pos[1] === 'versions' && pos[2] === 'access') return 'a secret (gcloud secrets versions access)';
      if (pos[0] === 'config' && pos[1] === 'config-helper') return 'gcloud credentials (config-helper)';
      return undefined;
    case 'az':
      if (pos[0] === 'account' && pos[1] === 'get-access-token') return 'an Azure access token';
      if (pos[0] === 'keyvault' && pos[1] === 'secret' && /^(?:show|download)$/.test(pos[2] ?? '')) return 'a Key Vault secret';
      if (pos[0] === 'storage' && pos[1] === 'account' && pos[2] === 'keys') return 'storage account keys';
      if (pos[0] === 'ad' && pos[1] === 'sp' && /^(?:create-for-rbac|credential)$/.test(pos[2] ?? '')) return 'service principal credentials';
      return undefined;
    case 'gh':
      return (pos[0] === 'auth' && pos[1] === 'token') || (pos[0] === 'auth' && pos[1] === 'status' && (w.includes('-t') || w.includes('--show-token')))
        ? 'a GitHub token (gh auth)'
        : undefined;
    case 'kubectl':
    case 'oc':
      if (pos[0] === 'config' && pos[1] === 'view' && (w.includes('--raw') || w.includes('--flatten')))
        return 'cluster credentials (kubectl config view --raw)';
      if (pos[0] === 'get' && /^(?:secrets?|secret\/.+)$/.test(pos[1] ?? '')) return 'Kubernetes secrets (kubectl get secret)';
      if (pos[0] === 'create' && pos[1] === 'token') return 'a service account token';
      return undefined;
    case 'vault':
      return /^(?:read|kv|token|login|print)$/.test(pos[0] ?? '') ? `a Vault secret (vault ${pos[0]})` : undefined;
    case 'op':
      return /^(?:read|item|document)$/.test(pos[0] ?? '') ? `a 1Password secret (op ${pos[0]})` : undefined;
    case 'pass':
    case 'gopass':
      return pos[0] !== 'ls' && pos[0] !== 'list' && pos[0] !== 'find' && pos[0] !== 'grep' ? `a password (${name})` : undefined;
    case 'secret-tool':
      return pos[0] === 'lookup' ? 'a keyring secret (secret-tool lookup)' : undefined;
    case 'security':
      return /^(?:find-generic-password|find-internet-password|dump-keychain|export)$/.test(pos[0] ?? '')
        ? `a keychain secret (security ${pos[0]})`
        : undefined;
    case 'git':
      return pos[0] === 'credential' && /^(?:fill|get)$/.test(pos[1] ?? '') ? 'git credentials (git credential fill)' : undefined;
    case 'heroku':
      return pos[0] === 'auth:token' ? 'a Heroku token' : undefined;
    case 'doctl':
    case 'fly':
    case 'flyctl':
      return pos[0] === 'auth' && pos[1] === 'token' ? `a ${name} token` : undefined;
    default:
      if (/^docker-credential-/.test(name)) return `registry credentials (${name})`;
      return undefined;
  }
}

// Name patterns that pick out key and credential files, and grep patterns that find key material.
const SECRET_NAME_PATTERN_RE =
  /id_(?:rsa|dsa|ecdsa|ed25519)|\.pem\b|\.key\b|\.p12\b|\.pfx\b|\.kdbx\b|\.env\b|credentials|authorized_keys|known_hosts|\.netrc|\.pgpass|shadow|kubeconfig|\.ppk\b|\.jks\b|secret/i;
const KEY_MATERIAL_RE = /PRIVATE KEY|BEGIN OPENSSH|aws_secret_access_key|BEGIN PGP PRIVATE|xox[bp]-|ghp_|AKIA/i;

/**
 * Names of credential files that `name args` prints (find -name id_rsa, grep -l 'PRIVATE KEY',
 * ls ~/.ssh/id_*): whoever reads those files next (xargs cat, $(...)) reads credentials.
 */
export function secretNames(name: string, args: Arg[]): string | undefined {
  const w = words(args);
  switch (name) {
    case 'find':
    case 'gfind': {
      const k = w.findIndex((x) => /^-(?:i?name|i?path|i?wholename|i?regex)$/.test(x));
      const pats = w.flatMap((x, i) => (/^-(?:i?name|i?path|i?wholename|i?regex)$/.test(x) && w[i + 1] ? [w[i + 1]!] : []));
      const starts = w.slice(0, k < 0 ? undefined : k).filter((x) => !x.startsWith('-'));
      if (pats.some((p) => SECRET_NAME_PATTERN_RE.test(p)) || starts.some((p) => isSecretPath(p))) return `credential files found by ${name}`;
      return undefined;
    }
    case 'locate':
    case 'plocate':
    case 'mlocate':
    case 'fd':
    case 'fdfind':
      return nonOptions(args).some((p) => SECRET_NAME_PATTERN_RE.test(p) || isSecretPath(p)) ? `credential files found by ${name}` : undefined;
    case 'grep':
    case 'egrep':
    case 'fgrep':
    case 'rg':
      return w.some((x) => /^-[a-zA-Z]*[lL]|^--files-with(?:out)?-match/.test(x)) && w.some((x) => KEY_MATERIAL_RE.test(x))
        ? `files holding key material (${name} -l)`
        : undefined;
    case 'ls':
      return nonOptions(args).some((p) => isSecretPath(p)) ? 'credential files listed by ls' : undefined;
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Sinks: commands that send data to the network, and the local files each one sends

export interface SinkSends {
  /** Local files (or folders, when recursive) the command uploads. */
  files: { path: string; recursive: boolean }[];
}

const remote = (w: string): boolean => /^[^/\s]*[^/\s\\]:/.test(w) && !/^[A-Za-z]:[\\/]/.test(w);
const cloudUrl = (w: string): boolean => /^(?:s3|gs|az|wasbs?|abfss?|r2|oss|cos|b2|https?):\/\//.test(w);

const CURL_UPLOADS: OptionTable = {
  argShort: 'AbcCDeEKmoPQrtuUwxXYyz',
  options: [
    { short: 'T', long: ['upload-file'], kind: 'file', what: 'upload' },
    { short: 'd', long: ['data', 'data-ascii', 'data-binary', 'data-urlencode', 'json'], kind: 'at-file', what: 'body' },
    { short: 'F', long: ['form'], kind: 'form', what: 'form' },
    { short: 'H', long: ['header', 'proxy-header', 'variable'], kind: 'at-file', what: 'header' },
  ],
};

/** curl's own {a,b} globbing in -T names. */
function curlGlob(f: string): string[] {
  const m = /^(.*)\{([^{}]*)\}(.*)$/.exec(f);
  return m ? m[2]!.split(',').map((alt) => `${m[1]}${alt}${m[3]}`) : [f];
}

/** `@file`, `name@file`, `name=@file`, `name=<file` (with `;type=...` options) → the file. */
function atFile(value: string, kind: string): string | undefined {
  if (kind === 'file') return value;
  if (kind === 'form') {
    const m = /^[^=]*=[@<]([^;]*)/.exec(value);
    return m?.[1];
  }
  const m = /^(?:[^@=]*=)?@(.*)$|^[^@=]+@(.*)$/.exec(value);
  return m ? (m[1] ?? m[2]) : undefined;
}

function copySources(args: Arg[], argShort: string, isRemote: (w: string) => boolean): { path: string; recursive: boolean }[] {
  const ops = scanOperands({ argShort, options: [] }, args).map((a) => a.text);
  if (ops.length < 2 || !isRemote(ops[ops.length - 1]!)) return [];
  return ops
    .slice(0, -1)
    .filter((s) => !isRemote(s))
    .map((path) => ({ path, recursive: true }));
}

function cloudCopy(args: Arg[], verbs: RegExp, dest: (w: string) => boolean): { path: string; recursive: boolean }[] {
  const pos = nonOptions(args);
  const at = pos.findIndex((p) => verbs.test(p));
  if (at < 0) return [];
  const ops = pos.slice(at + 1);
  if (ops.length < 2 || !dest(ops[ops.length - 1]!)) return [];
  return ops
    .slice(0, -1)
    .filter((s) => !dest(s) && s !== '-')
    .map((path) => ({ path, recursive: true }));
}

function optionFiles(args: Arg[], short: string, long: string[]): { path: string; recursive: boolean }[] {
  return scanOptions({ options: [{ short, long, kind: 'file', what: 'file' }] }, args).map((h) => ({ path: h.value, recursive: true }));
}

/** Tools that talk to the network: what each uploads. A pipe or substitution into any of them is a send. */
export const NETWORK_SINKS: Record<string, (args: Arg[]) => SinkSends> = {
  curl: (args) => ({
    files: scanOptions(CURL_UPLOADS, args).flatMap((h) => {
      const f = atFile(h.value, h.spec.kind);
      return f && f !== '-' ? curlGlob(f).map((path) => ({ path, recursive: false })) : [];
    }),
  }),
  wget: (args) => ({ files: optionFiles(args, '', ['post-file', 'body-file']) }),
  scp: (args) => ({ files: copySources(args, 'cDFiJlmoPSX', remote) }),
  rsync: (args) => ({ files: copySources(args, 'eBfMT', remote) }),
  sftp: () => ({ files: [] }),
  ftp: () => ({ files: [] }),
  lftp: () => ({ files: [] }),
  tftp: (args) => {
    const w = words(args);
    const k = w.indexOf('put');
    return { files: k >= 0 && w[k + 1] ? [{ path: w[k + 1]!, recursive: false }] : [] };
  },
  smbclient: () => ({ files: [] }),
  nc: () => ({ files: [] }),
  ncat: () => ({ files: [] }),
  netcat: () => ({ files: [] }),
  'nc.traditional': () => ({ files: [] }),
  'nc.openbsd': () => ({ files: [] }),
  'netcat.openbsd': () => ({ files: [] }),
  'netcat.traditional': () => ({ files: [] }),
  socat: (args) => ({
    files: words(args)
      .filter((w) => !w.startsWith('-'))
      .flatMap((w) => {
        const m = /^(?:(?:OPEN|GOPEN|FILE|READ):)?(\/[^,]*|~[^,]*|\$\{?HOME\}?\/[^,]*)/i.exec(w);
        return m && !/^(?:EXEC|SYSTEM):/i.test(w) ? [{ path: m[1]!, recursive: false }] : [];
      }),
  }),
  telnet: () => ({ files: [] }),
  openssl: () => ({ files: [] }),
  ssh: () => ({ files: [] }),
  autossh: () => ({ files: [] }),
  mosh: () => ({ files: [] }),
  mail: (args) => ({ files: optionFiles(args, 'aA', ['attach']) }),
  mailx: (args) => ({ files: optionFiles(args, 'aA', ['attach']) }),
  's-nail': (args) => ({ files: optionFiles(args, 'a', ['attach']) }),
  mutt: (args) => {
    const w = words(args);
    const k = w.indexOf('-a');
    const end = w.indexOf('--', k);
    return { files: k < 0 ? [] : w.slice(k + 1, end < 0 ? undefined : end).map((path) => ({ path, recursive: false })) };
  },
  sendmail: () => ({ files: [] }),
  msmtp: () => ({ files: [] }),
  aws: (args) => {
    const pos = nonOptions(args);
    if (pos[0] === 's3') return { files: cloudCopy(args, /^(?:cp|mv|sync)$/, cloudUrl) };
    return {
      files: optionFiles(args, '', ['body', 'zip-file', 'cli-input-json']).map((f) => ({ path: f.path.replace(/^fileb?:\/\//, ''), recursive: false })),
    };
  },
  gsutil: (args) => ({ files: cloudCopy(args, /^(?:cp|mv|rsync)$/, cloudUrl) }),
  gcloud: (args) => {
    const pos = nonOptions(args);
    if (pos[0] === 'storage') return { files: cloudCopy(args, /^(?:cp|mv|rsync)$/, cloudUrl) };
    if (pos[0] === 'compute' && pos[1] === 'scp') return { files: cloudCopy(args, /^scp$/, remote) };
    return { files: [] };
  },
  az: (args) => ({ files: optionFiles(args, 'fs', ['file', 'source']) }),
  rclone: (args) => ({ files: cloudCopy(args, /^(?:copy|copyto|sync|move|moveto|bisync)$/, remote) }),
  s3cmd: (args) => ({ files: cloudCopy(args, /^(?:put|sync|cp|mv)$/, cloudUrl) }),
  azcopy: (args) => ({ files: cloudCopy(args, /^(?:copy|cp|sync)$/, cloudUrl) }),
  mc: (args) => {
    const pos = nonOptions(args);
    const at = pos.findIndex((p) => /^(?:cp|mirror|mv|put)$/.test(p));
    return { files: at < 0 ? [] : pos.slice(at + 1, -1).map((path) => ({ path, recursive: true })) };
  },
  http: (args) => ({ files: httpieFiles(args) }),
  https: (args) => ({ files: httpieFiles(args) }),
  xh: (args) => ({ files: httpieFiles(args) }),
  xhs: (args) => ({ files: httpieFiles(args) }),
  gh: (args) => {
    const pos = nonOptions(args);
    if (pos[0] === 'gist' && pos[1] === 'create') return { files: pos.slice(2).map((path) => ({ path, recursive: false })) };
    if (pos[0] === 'release' && pos[1] === 'upload') return { files: pos.slice(3).map((path) => ({ path: path.replace(/#.*$/, ''), recursive: false })) };
    if (pos[0] === 'api')
      return {
        files: [
          ...optionFiles(args, '', ['input']),
          ...scanOptions({ options: [{ short: 'Ff', long: ['field', 'raw-field'], kind: 'at', what: '' }] }, args).flatMap((h) => {
            const f = atFile(h.value, 'at-file');
            return f ? [{ path: f, recursive: false }] : [];
          }),
        ],
      };
    return { files: [] };
  },
  whois: () => ({ files: [] }),
  dig: () => ({ files: [] }),
  nslookup: () => ({ files: [] }),
  host: () => ({ files: [] }),
  drill: () => ({ files: [] }),
  ping: () => ({ files: [] }),
  aria2c: () => ({ files: [] }),
};

function httpieFiles(args: Arg[]): { path: string; recursive: boolean }[] {
  return words(args).flatMap((w) => {
    const m = /^[^=:@\s]+(?:@|=@|:=@)(.+)$/.exec(w) ?? /^@(.+)$/.exec(w);
    return m ? [{ path: m[1]!, recursive: false }] : [];
  });
}

/** True when `name` with `args` talks to the network (for openssl: s_client only). */
export function isNetworkSink(name: string, args: Arg[]): boolean {
  if (!Object.prototype.hasOwnProperty.call(NETWORK_SINKS, name)) return false;
  if (name === 'openssl') return /^s_client$/.test(args[0]?.text ?? '');
  if (name === 'rsync') return args.some((a) => remote(a.text) || /^rsync:\/\//.test(a.text));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Downloads: where fetched data lands

const urlBase = (u: string): string => {
  const path = u.replace(/[?#].*$/, '').replace(/^[a-z]+:\/\/[^/]*/i, '');
  const last = path.split('/').pop() ?? '';
  return last || 'index.html';
};
const isUrl = (w: string): boolean => /^(?:https?|ftps?|tftp|scp|sftp|file):\/\//i.test(w);
const join = (dir: string, f: string): string => (dir ? `${dir.replace(/\/+$/, '')}/${f}` : f);

/** Files a downloader writes beyond its explicit output options; 'tree' for a checkout. */
export function downloadTargets(name: string, args: Arg[]): string[] | 'tree' {
  const w = words(args);
  const urls = w.filter(isUrl);
  switch (name) {
    case 'curl': {
      const dir = scanOptions({ options: [{ long: ['output-dir'], kind: 'd', what: '' }] }, args)[0]?.value ?? '';
      const all = w.includes('--remote-name-all') || w.some((x) => /^-[a-zA-Z]*O[a-zA-Z]*$/.test(x) || x === '--remote-name');
      return all ? urls.map((u) => join(dir, urlBase(u))) : [];
    }
    case 'wget': {
      const hasOut = w.some((x) => /^-[a-zA-Z]*O/.test(x) || x.startsWith('--output-document'));
      const dir =
        scanOptions({ options: [{ short: 'P', long: ['directory-prefix'], kind: 'd', what: '' }], argShort: 'aABDeiIlOoQRtTUwX' }, args)[0]?.value ?? '';
      return hasOut ? [] : urls.map((u) => join(dir, urlBase(u)));
    }
    case 'aria2c': {
      const o = scanOptions(
        {
          options: [
            { short: 'o', long: ['out'], kind: 'o', what: '' },
            { short: 'd', long: ['dir'], kind: 'd', what: '' },
          ],
        },
        args,
      );
      const dir = o.find((h) => h.spec.kind === 'd')?.value ?? '';
      const out = o.find((h) => h.spec.kind === 'o')?.value;
      return out ? [join(dir, out)] : urls.map((u) => join(dir, urlBase(u)));
    }
    case 'http':
    case 'https':
    case 'xh':
      return w.includes('--download') || w.includes('-d') ? urls.map(urlBase) : [];
    case 'scp':
    case 'rsync':
    case 'sftp': {
      const ops = scanOperands({ argShort: name === 'scp' ? 'cDFiJlmoPSX' : 'eBfMT', options: [] }, args).map((a) => a.text);
      if (ops.length < 2 || !remote(ops[0]!) || remote(ops[ops.length - 1]!)) return [];
      const dest = ops[ops.length - 1]!;
      return [dest, ...ops.slice(0, -1).map((s) => join(dest, s.split('/').pop() || s))];
    }
    case 'git':
      return nonOptions(args).includes('clone') ? 'tree' : [];
    case 'aws':
    case 'gsutil':
    case 'rclone':
    case 's3cmd':
    case 'azcopy': {
      const pos = nonOptions(args);
      const last = pos[pos.length - 1] ?? '';
      return pos.length >= 2 && (cloudUrl(pos[pos.length - 2]!) || remote(pos[pos.length - 2]!)) && !cloudUrl(last) && !remote(last) ? [last] : [];
    }
    default:
      return [];
  }
}

/** The command unpacks an archive (so a fetched archive fills the workspace with fetched files). */
export function extracts(name: string, args: Arg[]): boolean {
  const w = words(args);
  if (name === 'tar' || name === 'gtar' || name === 'bsdtar')
    return w.some((x) => (/^[A-Za-z]+$/.test(x) && x.includes('x') && x === w[0]) || /^-[a-zA-Z]*x/.test(x) || x === '--extract' || x === '--get');
  if (name === 'unzip' || name === 'bunzip2' || name === 'gunzip' || name === 'unxz' || name === 'unzstd' || name === 'cpio') return true;
  if (name === '7z' || name === '7za') return w[0] === 'x' || w[0] === 'e';
  return false;
}

/** Where an extraction lands when not in the current folder (tar -C, unzip -d). */
export function extractDir(name: string, args: Arg[]): string | undefined {
  if (/^(?:g?tar|bsdtar)$/.test(name))
    return scanOptions({ argShort: 'bfFgHIKLNTVX', oldStyle: true, options: [{ short: 'C', long: ['directory'], kind: 'C', what: '' }] }, args)[0]?.value;
  if (name === 'unzip') return scanOptions({ argShort: 'xP', options: [{ short: 'd', kind: 'd', what: '' }] }, args)[0]?.value;
  return undefined;
}

/** Output files a command fills from its inputs: the destination of cp/mv/install, zip's archive, tee's files. */
export function copyTargets(name: string, args: Arg[]): string[] {
  switch (name) {
    case 'cp':
    case 'mv':
    case 'install':
    case 'ln': {
      const t = scanOptions({ options: [{ short: 't', long: ['target-directory'], kind: 't', what: '' }] }, args)[0]?.value;
      const ops = scanOperands({ argShort: 'tSgmo', argLong: ['suffix', 'mode', 'owner', 'group'], options: [] }, args).map((a) => a.text);
      if (t) return [t, ...ops.map((s) => join(t, s.split('/').pop() || s))];
      if (ops.length < 2) return [];
      const dest = ops[ops.length - 1]!;
      return [dest, ...ops.slice(0, -1).map((s) => join(dest, s.split('/').pop() || s))];
    }
    case 'zip':
      return scanOperands({ argShort: 'bnPtZsixO', options: [] }, args)
        .slice(0, 1)
        .map((a) => a.text);
    case 'tee':
      return scanOperands({ argLong: [], options: [] }, args).map((a) => a.text);
    default:
      return [];
  }
}
