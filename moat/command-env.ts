// Environment variables that change what runs: a command or program other tools start (pagers,
// editors, ssh and diff helpers, LESSOPEN, PROMPT_COMMAND), libraries the loader preloads, search
// paths that decide which file a name runs, option variables that load code, scripts a shell or
// interpreter runs at start, configs that name helpers, files programs write, proxies, and the
// shell history switches. From bash(1), ld.so(8), git(1), less(1), man(1), ssh(1), rsync(1),
// tar(1), python(1), node(1), perl(1), ruby(1), vim(1), wget(1), curl(1), kubectl, aws, npm, pip.
import type { RuleContext } from './command-args.js';
import { normPath, writeFinding } from './command-paths.js';

export type EnvKind = 'command' | 'library' | 'search-path' | 'options' | 'script' | 'config' | 'write' | 'proxy' | 'prompt' | 'git-config';

const kinds: [EnvKind, string[]][] = [
  [
    'command',
    [
      'PAGER',
      'MANPAGER',
      'GIT_PAGER',
      'SYSTEMD_PAGER',
      'BAT_PAGER',
      'PSQL_PAGER',
      'MYSQL_PAGER',
      'DELTA_PAGER',
      'EDITOR',
      'VISUAL',
      'GIT_EDITOR',
      'GIT_SEQUENCE_EDITOR',
      'SUDO_EDITOR',
      'SYSTEMD_EDITOR',
      'FCEDIT',
      'LESSEDIT',
      'BROWSER',
      'TERMINAL',
      'SHELL',
      'LESSOPEN',
      'LESSCLOSE',
      'PROMPT_COMMAND',
      'GIT_SSH',
      'GIT_SSH_COMMAND',
      'GIT_EXTERNAL_DIFF',
      'GIT_PROXY_COMMAND',
      'GIT_ASKPASS',
      'SSH_ASKPASS',
      'SUDO_ASKPASS',
      'RSYNC_RSH',
      'RSYNC_CONNECT_PROG',
      'CVS_RSH',
      'FZF_DEFAULT_COMMAND',
      'DIFFPROG',
      'MERGE',
      'KUBE_EDITOR',
      'HGEDITOR',
      'SVN_EDITOR',
      'SVN_SSH',
      'RSH',
      'TAR_RSH',
      'XDG_OPEN',
    ],
  ],
  [
    'library',
    [
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'LD_AUDIT',
      'LD_PROFILE',
      'DYLD_INSERT_LIBRARIES',
      'DYLD_LIBRARY_PATH',
      'DYLD_FRAMEWORK_PATH',
      'GCONV_PATH',
      'LD_ORIGIN_PATH',
    ],
  ],
  [
    'search-path',
    [
      'PATH',
      'PYTHONPATH',
      'PYTHONHOME',
      'PYTHONUSERBASE',
      'PERL5LIB',
      'PERLLIB',
      'RUBYLIB',
      'NODE_PATH',
      'GEM_PATH',
      'GEM_HOME',
      'FPATH',
      'GIT_EXEC_PATH',
      'LUA_PATH',
      'LUA_CPATH',
      'CLASSPATH',
      'AWKPATH',
      'AWKLIBPATH',
      'MAKEFILES',
      'BASH_LOADABLES_PATH',
    ],
  ],
  [
    'options',
    [
      'NODE_OPTIONS',
      'PERL5OPT',
      'RUBYOPT',
      'JAVA_TOOL_OPTIONS',
      '_JAVA_OPTIONS',
      'JDK_JAVA_OPTIONS',
      'TAR_OPTIONS',
      'MANOPT',
      'LESS',
      'MAKEFLAGS',
      'GNUMAKEFLAGS',
      'ZIPOPT',
      'UNZIP',
      'GREP_OPTIONS',
      'RSYNC_OPTIONS',
      'SHELLOPTS',
      'BASHOPTS',
      'PYTHONWARNINGS',
    ],
  ],
  ['script', ['BASH_ENV', 'ENV', 'PYTHONSTARTUP', 'ZDOTDIR', 'VIMINIT', 'EXINIT', 'GVIMINIT', 'MYVIMRC', 'GIT_TEMPLATE_DIR', 'PERL5DB', 'INPUTRC']],
  [
    'config',
    [
      'GIT_CONFIG',
      'GIT_CONFIG_GLOBAL',
      'GIT_CONFIG_SYSTEM',
      'GIT_DIR',
      'KUBECONFIG',
      'AWS_CONFIG_FILE',
      'AWS_SHARED_CREDENTIALS_FILE',
      'DOCKER_CONFIG',
      'WGETRC',
      'CURL_HOME',
      'NPM_CONFIG_USERCONFIG',
      'NPM_CONFIG_GLOBALCONFIG',
      'PIP_CONFIG_FILE',
      'LESSKEY',
      'LESSKEYIN',
      'LESSKEY_SYSTEM',
      'GNUPGHOME',
      'XDG_CONFIG_HOME',
      'HOME',
      'SSH_AUTH_SOCK',
      'DOCKER_HOST',
      'PYTHONPYCACHEPREFIX',
    ],
  ],
  [
    'write',
    [
      'SSLKEYLOGFILE',
      'GIT_TRACE',
      'GIT_TRACE2',
      'GIT_TRACE2_EVENT',
      'GIT_TRACE2_PERF',
      'GIT_TRACE_PACKET',
      'GIT_TRACE_CURL',
      'LESSHISTFILE',
      'NODE_REPL_HISTORY',
      'PYTHON_HISTORY',
    ],
  ],
  [
    'proxy',
    ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'all_proxy', 'ftp_proxy', 'FTP_PROXY', 'RSYNC_PROXY', 'GIT_PROXY_SSL_CERT'],
  ],
  ['prompt', ['PS0', 'PS1', 'PS2', 'PS3', 'PS4', 'PROMPT', 'RPROMPT']],
  ['git-config', ['GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT']],
];

/** Variable name → what setting it does. */
export const ENV_VARS: Record<string, EnvKind> = Object.fromEntries(kinds.flatMap(([k, names]) => names.map((n) => [n, k])));

/** The kind of a variable, including the numbered and prefixed families. */
export function envKind(name: string): EnvKind | undefined {
  if (Object.prototype.hasOwnProperty.call(ENV_VARS, name)) return ENV_VARS[name];
  if (/^GIT_CONFIG_(?:KEY|VALUE)_\d+$/.test(name)) return 'git-config';
  if (/^GIT_TRACE\w*$/.test(name)) return 'write';
  if (/^(?:npm_config_|NPM_CONFIG_)(?:script[-_]shell|node[-_]options|shell|git|editor|browser|viewer)$/i.test(name)) return 'command';
  if (/^(?:DYLD_|LD_)\w*(?:PRELOAD|LIBRARY|AUDIT|INSERT)\w*$/.test(name)) return 'library';
  if (/^BASH_FUNC_.+(?:%%|\(\))$/.test(name)) return 'script';
  return undefined;
}

/** The command line held by a helper variable (LESSOPEN's `|cmd %s` form, `!cmd` forms). */
function commandText(name: string, value: string): string {
  if (name === 'LESSOPEN' || name === 'LESSCLOSE') return value.replace(/^\|{1,2}-?|^-/, '').replace(/%s/g, './file');
  return value.replace(/^!/, '');
}

/**
 * Reports setting `name` to `value` (an assignment, export, `env NAME=...`, `sudo NAME=...`).
 * `dynamic`: the value is not statically known.
 */
export function envFinding(name: string, value: string, dynamic: boolean, ctx: RuleContext): void {
  if (name === 'HISTFILE') {
    if (value === '' || normPath(value) === '/dev/null') ctx.add('dangerous', `disables shell history (HISTFILE=${value || '""'})`);
    else ctx.add('caution', `redirects shell history (HISTFILE=${value})`);
    return;
  }
  if ((name === 'HISTSIZE' || name === 'HISTFILESIZE' || name === 'SAVEHIST') && /^0*$/.test(value) && !dynamic) {
    ctx.add('dangerous', `disables shell history (${name}=${value || '""'})`);
    return;
  }
  if (name === 'HISTIGNORE' && /^[*:&\s]*\*[*:&\s]*$/.test(value)) {
    ctx.add('dangerous', `disables shell history (HISTIGNORE=${value})`);
    return;
  }
  const kind = envKind(name);
  if (!kind) return;
  switch (kind) {
    case 'command':
      if (!value) return;
      ctx.add('caution', `sets ${name}, a command other programs will run`);
      ctx.classifyCode(commandText(name, value), name);
      return;
    case 'library':
      ctx.add('caution', `injects shared libraries (${name}=${value})`);
      for (const lib of value.split(/[:\s]+/).filter(Boolean)) {
        const f = ctx.fetched(lib);
        if (f) ctx.add('dangerous', `preloads a library this command line ${f === 'download' ? 'downloaded' : 'decoded'} (${name}=${lib})`);
      }
      return;
    case 'search-path':
      ctx.add('caution', `changes ${name}`);
      return;
    case 'options':
      ctx.add('caution', `sets ${name} (options that can load code or name programs)`);
      if (name === 'TAR_OPTIONS' || name === 'MANOPT' || name === 'LESS')
        ctx.classifyCode(`${name === 'TAR_OPTIONS' ? 'tar' : name === 'MANOPT' ? 'man' : 'less'} ${value}`, name);
      return;
    case 'script':
      ctx.add('caution', `sets ${name}, a script shells or interpreters run at start`);
      if (/^(?:VIMINIT|EXINIT|GVIMINIT)$/.test(name)) ctx.classifyCode(`vim -c ${JSON.stringify(value)}`, name);
      else if (!dynamic && ctx.fetched(value)) ctx.add('dangerous', `${name} points at a file this command line fetched (${value})`);
      return;
    case 'config':
      ctx.add('caution', `points ${name} at another config (it can name programs to run)`);
      return;
    case 'write': {
      ctx.add('caution', `sets ${name}, a file programs will write`);
      const f = /^[/~.]/.test(value) ? writeFinding(value, `${name} makes programs write to`) : null;
      if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
      return;
    }
    case 'proxy':
      ctx.add('caution', `routes network traffic through a proxy (${name}=${value})`);
      return;
    case 'prompt':
      if (/\$\(|`/.test(value)) {
        ctx.add('caution', `sets ${name} with a command substitution (runs whenever the prompt is shown)`);
        for (const m of value.matchAll(/\$\(([^()]*)\)|`([^`]*)`/g)) ctx.classifyCode(m[1] ?? m[2] ?? '', name);
      }
      return;
    case 'git-config':
      ctx.add('caution', `sets git configuration through the environment (${name})`);
      if (/^GIT_CONFIG_VALUE_\d+$/.test(name) && value) ctx.classifyCode(commandText(name, value), name);
      if (name === 'GIT_CONFIG_PARAMETERS') {
        for (const m of value.matchAll(/'[^']*'\s*=\s*'([^']*)'/g)) if (m[1]) ctx.classifyCode(commandText(name, m[1]), name);
      }
      return;
  }
}
