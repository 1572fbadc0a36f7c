// Options of common tools that name a program to run, a file to write, a file to read, a config
// or script to load, or a library to preload: one table per tool, taken from the tools' manuals
// (GNU tar, rsync, sort, zip, less, man-db, sdiff/diff3, curl, wget, OpenSSH ssh/scp/sftp, GNU
// make, vim, emacs, nano, gdb, tcpdump, script, apt, strace/ltrace, bat, fzf, rg, pandoc, cpio,
// mysql, psql, gpg, node). find -exec, awk programs, sed scripts and git are read by their own
// rules (./command-rules.ts, ./command-git.ts); environment variables live in ./command-env.ts.
//
// The kinds:
//   command  the value is a shell command line        → caution, and the line is classified
//   program  the value names a program (maybe + args) → caution, and it is classified as a command
//   remote   a program run on the remote host         → caution, classified as a command
//   write    a file the tool writes                   → the write rules (system paths, startup files, ...)
//   read     a file the tool reads                    → outside-workspace and credential checks
//   config   a config/script file the tool obeys      → caution (it can name programs), plus read checks
//   library  a shared library/plugin/module loaded    → caution
//   socket   a local socket the tool talks to         → caution
//   chdir    the folder the tool works in             → outside-workspace check
//   archive  tar/cpio -f: written when creating, read otherwise
//   ssh-option / apt-option / editor-command / gdb-command / less-command / env: parsed further below
//   forward / forward-remote: ssh port forwards (remote ones are dangerous)
import type { CommandView, RuleContext } from './command-args.js';
import { envFinding } from './command-env.js';
import { type OptionTable, scanOptions } from './command-options.js';
import { writeFinding } from './command-paths.js';

export type HelperKind =
  | 'command'
  | 'program'
  | 'remote'
  | 'write'
  | 'read'
  | 'config'
  | 'library'
  | 'socket'
  | 'chdir'
  | 'archive'
  | 'ssh-option'
  | 'apt-option'
  | 'editor-command'
  | 'gdb-command'
  | 'less-command'
  | 'env'
  | 'forward'
  | 'forward-remote'
  | 'bind-action'
  | 'flag';

type Table = OptionTable<HelperKind>;

const tar: Table = {
  argShort: 'bCfFgHIKLNTVX',
  argLong: [
    'blocking-factor',
    'directory',
    'exclude',
    'format',
    'group',
    'owner',
    'mode',
    'mtime',
    'newer',
    'after-date',
    'newer-mtime',
    'label',
    'tape-length',
    'record-size',
    'starting-file',
    'strip-components',
    'suffix',
    'transform',
    'xform',
    'sort',
    'warning',
    'occurrence',
    'level',
    'quoting-style',
    'pax-option',
    'hole-detection',
    'backup',
  ],
  abbrev: true,
  oldStyle: true,
  options: [
    { long: ['checkpoint-action'], kind: 'command', what: 'checkpoint command', prefix: 'exec=' },
    { long: ['to-command'], kind: 'command', what: 'command each member is piped to' },
    { short: 'I', long: ['use-compress-program'], kind: 'program', what: 'compress program' },
    { long: ['rsh-command'], kind: 'program', what: 'remote shell' },
    { long: ['rmt-command'], kind: 'program', what: 'remote tape program' },
    { short: 'F', long: ['info-script', 'new-volume-script'], kind: 'program', what: 'volume script' },
    { long: ['index-file'], kind: 'write', what: 'index file' },
    { long: ['volno-file'], kind: 'write', what: 'volume number file' },
    { short: 'g', long: ['listed-incremental'], kind: 'write', what: 'snapshot file' },
    { short: 'T', long: ['files-from'], kind: 'read', what: 'file list' },
    { short: 'X', long: ['exclude-from'], kind: 'read', what: 'exclude list' },
    { short: 'f', long: ['file'], kind: 'archive', what: 'archive' },
    { short: 'C', long: ['directory'], kind: 'chdir', what: 'directory' },
  ],
};

const rsync: Table = {
  argShort: 'BfM@',
  argLong: [
    'exclude',
    'include',
    'filter',
    'max-size',
    'min-size',
    'bwlimit',
    'timeout',
    'contimeout',
    'modify-window',
    'compress-choice',
    'zc',
    'compress-level',
    'zl',
    'checksum-choice',
    'cc',
    'block-size',
    'iconv',
    'suffix',
    'max-delete',
    'max-alloc',
    'protocol',
    'checksum-seed',
    'chmod',
    'chown',
    'usermap',
    'groupmap',
    'info',
    'debug',
    'out-format',
    'log-file-format',
    'port',
    'address',
    'sockopts',
    'outbuf',
    'stop-after',
    'stop-at',
    'backup-dir',
    'partial-dir',
    'compare-dest',
    'copy-dest',
    'link-dest',
  ],
  options: [
    { short: 'e', long: ['rsh'], kind: 'command', what: 'remote shell' },
    { long: ['rsync-path'], kind: 'remote', what: 'remote rsync program' },
    { short: 'M', long: ['remote-option'], kind: 'remote', what: 'option for the remote rsync' },
    { long: ['log-file', 'write-batch', 'only-write-batch'], kind: 'write', what: 'log/batch file' },
    { short: 'T', long: ['temp-dir'], kind: 'write', what: 'temporary folder' },
    { long: ['read-batch', 'files-from', 'exclude-from', 'include-from', 'password-file', 'early-input'], kind: 'read', what: 'list/batch/password file' },
    { long: ['config'], kind: 'config', what: 'daemon config' },
  ],
};

const sort: Table = {
  argShort: 'kotTS',
  argLong: ['key', 'field-separator', 'buffer-size', 'parallel', 'batch-size', 'sort'],
  abbrev: true,
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'output file' },
    { long: ['compress-program'], kind: 'program', what: 'compress program' },
    { short: 'T', long: ['temporary-directory'], kind: 'write', what: 'temporary folder' },
    { long: ['files0-from', 'random-source'], kind: 'read', what: 'input list' },
  ],
};

const zip: Table = {
  argShort: 'bnPtZsix',
  options: [
    { words: ['-TT'], long: ['unzip-command'], kind: 'command', what: 'archive test command' },
    { short: 'O', long: ['output-file'], kind: 'write', what: 'output archive' },
    { words: ['-lf'], long: ['logfile-path'], kind: 'write', what: 'log file' },
    { short: 'b', long: ['temp-path'], kind: 'write', what: 'temporary folder' },
  ],
};

const less: Table = {
  argShort: 'bhjkoOpPtTxyz#D',
  argLong: [
    'prompt',
    'pattern',
    'tag',
    'tag-file',
    'shift',
    'window',
    'max-back-scroll',
    'tabs',
    'jump-target',
    'buffers',
    'max-forw-scroll',
    'header',
    'rscroll',
    'color',
    'line-num-width',
    'status-col-width',
    'wordwrap',
  ],
  abbrev: true,
  plus: { kind: 'less-command', what: 'initial less command' },
  options: [
    { short: 'k', long: ['lesskey-file', 'lesskey-src'], kind: 'config', what: 'key bindings' },
    { long: ['lesskey-content'], kind: 'less-command', what: 'key bindings' },
    { short: 'o', long: ['log-file'], kind: 'write', what: 'log file' },
    { short: 'O', long: ['LOG-FILE'], kind: 'write', what: 'log file' },
  ],
};

const man: Table = {
  argShort: 'pTXMRLmSserE',
  argLong: ['preprocessor', 'troff-device', 'manpath', 'recode', 'locale', 'systems', 'sections', 'extension', 'prompt', 'encoding'],
  abbrev: true,
  options: [
    { short: 'P', long: ['pager'], kind: 'command', what: 'pager' },
    { short: 'H', long: ['html'], kind: 'program', what: 'browser', optional: true },
    { short: 'C', long: ['config-file'], kind: 'config', what: 'config file' },
  ],
};

const sdiff: Table = {
  argShort: 'wI',
  options: [
    { long: ['diff-program'], kind: 'program', what: 'diff program' },
    { short: 'o', long: ['output'], kind: 'write', what: 'merged output' },
  ],
};

const diff3: Table = { argShort: 'L', options: [{ long: ['diff-program'], kind: 'program', what: 'diff program' }] };

const curl: Table = {
  argShort: 'AbcCdDeEFHKmoPQrtTuUwxXYyz',
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'output file' },
    { long: ['output-dir'], kind: 'write', what: 'output folder' },
    { short: 'D', long: ['dump-header'], kind: 'write', what: 'header dump' },
    { short: 'c', long: ['cookie-jar'], kind: 'write', what: 'cookie jar' },
    { long: ['trace', 'trace-ascii', 'stderr', 'libcurl', 'etag-save'], kind: 'write', what: 'trace/log file' },
    { long: ['hsts', 'alt-svc'], kind: 'write', what: 'cache file' },
    { short: 'K', long: ['config'], kind: 'config', what: 'config file' },
    { long: ['netrc-file', 'etag-compare'], kind: 'read', what: 'credentials/etag file' },
    { long: ['unix-socket', 'abstract-unix-socket'], kind: 'socket', what: 'local socket' },
    { long: ['engine'], kind: 'library', what: 'crypto engine' },
  ],
};

const wget: Table = {
  argShort: 'aABDeiIlOoPQRtTUwX',
  abbrev: true,
  options: [
    { short: 'O', long: ['output-document'], kind: 'write', what: 'output file' },
    { short: 'o', long: ['output-file'], kind: 'write', what: 'log file' },
    { short: 'a', long: ['append-output'], kind: 'write', what: 'log file' },
    { short: 'P', long: ['directory-prefix'], kind: 'write', what: 'output folder' },
    { long: ['save-cookies', 'warc-file', 'hsts-file', 'rejected-log'], kind: 'write', what: 'cookie/archive/log file' },
    { short: 'i', long: ['input-file', 'load-cookies', 'input-metalink'], kind: 'read', what: 'input file' },
    { long: ['config'], kind: 'config', what: 'wgetrc file' },
    { short: 'e', long: ['execute'], kind: 'config', what: 'wgetrc command' },
    { long: ['use-askpass'], kind: 'program', what: 'password prompt program' },
  ],
};

const ssh: Table = {
  argShort: 'bBcDeEFiIJlLmOopQRSWw',
  stopAtOperand: true,
  options: [
    { short: 'o', kind: 'ssh-option', what: 'ssh option' },
    { short: 'F', kind: 'config', what: 'ssh config' },
    { short: 'E', kind: 'write', what: 'log file' },
    { short: 'I', kind: 'library', what: 'PKCS#11 provider' },
    { short: 'S', kind: 'socket', what: 'control socket' },
    { short: 'R', kind: 'forward-remote', what: 'remote port forward' },
    { short: 'L', kind: 'forward', what: 'local port forward' },
    { short: 'D', kind: 'forward', what: 'dynamic (SOCKS) forward' },
    { short: 'w', kind: 'forward', what: 'tunnel device' },
    { short: 'A', kind: 'flag', what: 'agent forwarding (the remote side can use your keys)', flag: true },
  ],
};

const scp: Table = {
  argShort: 'cDFiJlmoPSX',
  options: [
    { short: 'S', kind: 'program', what: 'ssh program' },
    { short: 'D', kind: 'program', what: 'local sftp server' },
    { short: 'o', kind: 'ssh-option', what: 'ssh option' },
    { short: 'F', kind: 'config', what: 'ssh config' },
  ],
};

const sftp: Table = {
  argShort: 'BbcDFiJloPRSsX',
  options: [
    { short: 'S', kind: 'program', what: 'ssh program' },
    { short: 'D', kind: 'command', what: 'local sftp server' },
    { short: 's', kind: 'remote', what: 'remote sftp subsystem' },
    { short: 'b', kind: 'config', what: 'batch file (can run ! commands)' },
    { short: 'o', kind: 'ssh-option', what: 'ssh option' },
    { short: 'F', kind: 'config', what: 'ssh config' },
  ],
};

const make: Table = {
  argShort: 'jlOoW',
  argLong: ['jobs', 'load-average', 'output-sync', 'old-file', 'assume-old', 'what-if', 'new-file', 'assume-new', 'debug', 'jobserver-auth', 'shuffle'],
  abbrev: true,
  options: [
    { short: 'f', long: ['file', 'makefile'], kind: 'config', what: 'makefile' },
    { short: 'E', long: ['eval'], kind: 'config', what: 'makefile text' },
    { short: 'C', long: ['directory'], kind: 'chdir', what: 'directory' },
    { short: 'I', long: ['include-dir'], kind: 'read', what: 'include folder' },
  ],
};

const vim: Table = {
  argShort: 'TtqriVdo',
  argLong: ['servername', 'remote-wait', 'remote-tab', 'remote', 'listen', 'server'],
  plus: { kind: 'editor-command', what: 'editor command' },
  options: [
    { short: 'c', long: ['cmd'], kind: 'editor-command', what: 'editor command' },
    { long: ['remote-send', 'remote-expr'], kind: 'editor-command', what: 'command for another editor' },
    { short: 'S', kind: 'config', what: 'editor script' },
    { short: 'u', kind: 'config', what: 'vimrc' },
    { short: 'U', kind: 'config', what: 'gvimrc' },
    // -s alone reads keystrokes from a file; in -es (Ex mode) it means silent, so only the word counts
    { words: ['-s'], kind: 'config', what: 'keystroke script' },
    { short: 'l', kind: 'config', what: 'lua script' },
    { short: 'w', kind: 'write', what: 'keystroke log', optional: true },
    { short: 'W', kind: 'write', what: 'keystroke log' },
    { long: ['startuptime'], kind: 'write', what: 'timing log' },
  ],
};

const emacs: Table = {
  singleDashLong: true,
  argLong: ['chdir', 'display', 'name', 'title', 'geometry', 'font', 'd', 'fn', 'T', 'g', 'L', 'directory', 'u', 'user', 'bg', 'fg'],
  options: [
    { long: ['eval', 'execute'], kind: 'config', what: 'lisp expression' },
    { long: ['load', 'l', 'script', 'x'], kind: 'config', what: 'lisp file' },
    { long: ['funcall', 'f'], kind: 'config', what: 'lisp function' },
  ],
};

const nano: Table = {
  argShort: 'CoQrTXYJ',
  options: [
    { short: 's', long: ['speller'], kind: 'program', what: 'spell checker' },
    { short: 'f', long: ['rcfile'], kind: 'config', what: 'nanorc' },
    { short: 'o', long: ['operatingdir'], kind: 'chdir', what: 'operating folder' },
  ],
};

const gdb: Table = {
  singleDashLong: true,
  argLong: ['cd', 'd', 'directory', 's', 'symbols', 'e', 'exec', 'se', 'c', 'core', 'tty', 'data-directory', 'D', 'b', 'l'],
  options: [
    { long: ['ex', 'iex', 'eval-command', 'init-eval-command'], kind: 'gdb-command', what: 'debugger command' },
    { short: 'x', long: ['x', 'ix', 'command', 'init-command'], kind: 'config', what: 'debugger script' },
    { short: 'p', long: ['p', 'pid'], kind: 'socket', what: 'process to attach to' },
  ],
};

const tcpdump: Table = {
  argShort: 'BcCEFGiMrsTVwWyZjQ',
  options: [
    { short: 'z', kind: 'program', what: 'post-rotate command' },
    { short: 'w', kind: 'write', what: 'capture file' },
    { short: 'r', kind: 'read', what: 'capture file' },
    { short: 'F', kind: 'read', what: 'filter file' },
    { short: 'V', kind: 'read', what: 'capture file list' },
  ],
};

const script: Table = {
  argShort: 'EoIOBT',
  options: [
    { short: 'c', long: ['command'], kind: 'command', what: 'command' },
    { short: 'IOBT', long: ['log-in', 'log-out', 'log-io', 'log-timing'], kind: 'write', what: 'log file' },
    { short: 't', long: ['timing'], kind: 'write', what: 'timing file', optional: true },
  ],
};

const apt: Table = {
  argShort: 'qstaoc',
  options: [
    { short: 'o', long: ['option'], kind: 'apt-option', what: 'apt option' },
    { short: 'c', long: ['config-file'], kind: 'config', what: 'apt config' },
  ],
};

const strace: Table = {
  argShort: 'abeIOPsSUX',
  stopAtOperand: true,
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'trace file' },
    { short: 'p', long: ['attach'], kind: 'socket', what: 'process to attach to' },
    { short: 'E', long: ['env'], kind: 'env', what: 'environment of the traced program' },
    { short: 'u', long: ['user'], kind: 'flag', what: 'user to run as' },
  ],
};

const ltrace: Table = {
  argShort: 'aAeLlnsuwxDX',
  stopAtOperand: true,
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'trace file' },
    { short: 'p', kind: 'socket', what: 'process to attach to' },
    { short: 'F', long: ['config'], kind: 'config', what: 'prototype file' },
  ],
};

const bat: Table = {
  argShort: 'lHrmLp',
  argLong: [
    'theme',
    'style',
    'tabs',
    'wrap',
    'terminal-width',
    'decorations',
    'color',
    'italic-text',
    'file-name',
    'diff-context',
    'line-range',
    'highlight-line',
    'map-syntax',
    'language',
  ],
  options: [{ long: ['pager'], kind: 'command', what: 'pager' }],
};

const fzf: Table = {
  argShort: 'dnq',
  argLong: [
    'delimiter',
    'nth',
    'with-nth',
    'query',
    'filter',
    'height',
    'layout',
    'border',
    'prompt',
    'pointer',
    'marker',
    'header',
    'header-lines',
    'color',
    'tiebreak',
    'history',
    'expect',
    'preview-window',
    'margin',
    'padding',
    'info',
    'tabstop',
  ],
  options: [
    { long: ['preview'], kind: 'command', what: 'preview command' },
    { long: ['bind'], kind: 'bind-action', what: 'key binding action' },
  ],
};

const rg: Table = {
  argShort: 'ABCeEfgjmMrtTd',
  options: [
    { long: ['pre'], kind: 'program', what: 'preprocessor' },
    { long: ['hostname-bin'], kind: 'program', what: 'hostname program' },
    { long: ['ignore-file'], kind: 'read', what: 'ignore file' },
  ],
};

const pandoc: Table = {
  argShort: 'fFrtwoLMVdA',
  options: [
    { short: 'F', long: ['filter'], kind: 'program', what: 'filter program' },
    { short: 'L', long: ['lua-filter'], kind: 'config', what: 'lua filter' },
    { short: 'o', long: ['output'], kind: 'write', what: 'output file' },
  ],
};

const cpio: Table = {
  argShort: 'CEFHIMORs',
  abbrev: true,
  options: [
    { long: ['rsh-command'], kind: 'program', what: 'remote shell' },
    { short: 'F', long: ['file'], kind: 'archive', what: 'archive' },
    { short: 'O', kind: 'write', what: 'archive' },
    { short: 'I', kind: 'read', what: 'archive' },
    { short: 'E', long: ['pattern-file'], kind: 'read', what: 'pattern file' },
  ],
};

const mysql: Table = {
  argShort: 'hPuSDe',
  options: [
    { long: ['pager'], kind: 'command', what: 'pager', optional: true },
    { long: ['tee'], kind: 'write', what: 'output log' },
    { long: ['defaults-file', 'defaults-extra-file'], kind: 'config', what: 'option file' },
    { long: ['plugin-dir', 'default-auth'], kind: 'library', what: 'client plugin' },
  ],
};

const psql: Table = {
  argShort: 'cdhpUvPFRT',
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'query output' },
    { short: 'L', long: ['log-file'], kind: 'write', what: 'session log' },
    { short: 'f', long: ['file'], kind: 'read', what: 'SQL script' },
  ],
};

const gpg: Table = {
  argShort: 'ruk',
  argLong: ['recipient', 'local-user', 'default-key', 'keyserver', 'trust-model', 'cipher-algo', 'digest-algo', 'compress-algo'],
  options: [
    { short: 'o', long: ['output'], kind: 'write', what: 'output file' },
    { long: ['photo-viewer'], kind: 'command', what: 'photo viewer' },
    { long: ['agent-program', 'dirmngr-program', 'keyboxd-program'], kind: 'program', what: 'helper program' },
    { long: ['options'], kind: 'config', what: 'options file' },
    { long: ['homedir'], kind: 'config', what: 'home folder' },
  ],
};

const node: Table = {
  argShort: 'ep',
  stopAtOperand: true,
  options: [{ short: 'r', long: ['require', 'import', 'loader', 'experimental-loader'], kind: 'library', what: 'preloaded module' }],
};

const openssl: Table = {
  singleDashLong: true,
  argLong: [
    'passin',
    'passout',
    'subj',
    'days',
    'newkey',
    'keyform',
    'inform',
    'outform',
    'name',
    'connect',
    'servername',
    'md',
    'cipher',
    'CApath',
    'certform',
  ],
  options: [
    { long: ['out', 'keyout'], kind: 'write', what: 'output file' },
    { long: ['in', 'inkey', 'key', 'cert', 'CAfile', 'infiles', 'kfile', 'signkey', 'rand'], kind: 'read', what: 'input file' },
    { long: ['engine'], kind: 'library', what: 'crypto engine' },
  ],
};

const xargs: Table = {
  argShort: 'dEILnPs',
  stopAtOperand: true,
  options: [{ short: 'a', long: ['arg-file'], kind: 'read', what: 'argument file' }],
};

const env: Table = {
  argShort: 'uS',
  stopAtOperand: true,
  options: [{ short: 'C', long: ['chdir'], kind: 'chdir', what: 'directory' }],
};

const sudo: Table = {
  argShort: 'ugpChrtTUR',
  stopAtOperand: true,
  options: [
    { short: 'D', long: ['chdir'], kind: 'chdir', what: 'directory' },
    { short: 'R', long: ['chroot'], kind: 'chdir', what: 'root folder' },
  ],
};

const su: Table = {
  argShort: 'cgGw',
  options: [{ short: 's', long: ['shell'], kind: 'program', what: 'login shell' }],
};

const npx: Table = {
  argShort: 'p',
  stopAtOperand: true,
  options: [{ short: 'c', long: ['call'], kind: 'command', what: 'command' }],
};

const npm: Table = {
  argShort: 'w',
  options: [{ long: ['script-shell'], kind: 'program', what: 'script shell' }],
};

const at: Table = { argShort: 'qtmM', options: [{ short: 'f', kind: 'config', what: 'job script' }] };

const valgrind: Table = {
  stopAtOperand: true,
  options: [{ long: ['log-file', 'xml-file'], kind: 'write', what: 'log file' }],
};

/** Option tables by command name. */
export const TOOL_OPTIONS: Record<string, Table> = {
  tar,
  gtar: tar,
  bsdtar: tar,
  rsync,
  sort,
  gsort: sort,
  zip,
  less,
  man,
  sdiff,
  diff3,
  curl,
  wget,
  ssh,
  autossh: { ...ssh, argShort: `${ssh.argShort}M` },
  scp,
  sftp,
  make,
  gmake: make,
  vim,
  vi: vim,
  nvim: vim,
  view: vim,
  vimdiff: vim,
  gvim: vim,
  rvim: vim,
  ex: vim,
  emacs,
  nano,
  gdb,
  tcpdump,
  script,
  apt,
  'apt-get': apt,
  'apt-cache': apt,
  strace,
  ltrace,
  bat,
  batcat: bat,
  fzf,
  rg,
  pandoc,
  cpio,
  mysql,
  mariadb: mysql,
  psql,
  gpg,
  gpg2: gpg,
  node,
  nodejs: node,
  openssl,
  xargs,
  env,
  sudo,
  su,
  runuser: su,
  npx,
  npm,
  at,
  batch: at,
  valgrind,
};

// ssh_config(5) keywords that name programs, libraries, forwards or files (matched case-insensitively).
export const SSH_OPTIONS: Record<string, { kind: HelperKind | 'weakens'; what: string }> = {
  proxycommand: { kind: 'command', what: 'proxy command' },
  localcommand: { kind: 'command', what: 'local command' },
  knownhostscommand: { kind: 'command', what: 'known-hosts command' },
  remotecommand: { kind: 'remote', what: 'remote command' },
  pkcs11provider: { kind: 'library', what: 'PKCS#11 provider' },
  securitykeyprovider: { kind: 'library', what: 'security key provider' },
  remoteforward: { kind: 'forward-remote', what: 'remote port forward' },
  localforward: { kind: 'forward', what: 'local port forward' },
  dynamicforward: { kind: 'forward', what: 'dynamic (SOCKS) forward' },
  tunnel: { kind: 'forward', what: 'tunnel device' },
  tunneldevice: { kind: 'forward', what: 'tunnel device' },
  gatewayports: { kind: 'forward', what: 'forwards open to other hosts' },
  forwardagent: { kind: 'weakens', what: 'agent forwarding (the remote side can use your keys)' },
  forwardx11: { kind: 'weakens', what: 'X11 forwarding' },
  forwardx11trusted: { kind: 'weakens', what: 'trusted X11 forwarding' },
  permitlocalcommand: { kind: 'weakens', what: 'local commands allowed' },
  stricthostkeychecking: { kind: 'weakens', what: 'host key checking' },
  include: { kind: 'config', what: 'included config' },
  identityagent: { kind: 'socket', what: 'agent socket' },
  controlpath: { kind: 'socket', what: 'control socket' },
  userknownhostsfile: { kind: 'write', what: 'known-hosts file' },
  setenv: { kind: 'env', what: 'remote environment' },
};

/** apt.conf(5) keys whose value is a command run by apt/dpkg, or a program apt runs. */
export function aptOptionKind(key: string): HelperKind | undefined {
  if (/(?:^|::)(?:Pre|Post)-Invoke(?:-Success)?$|::Pre-Install-Pkgs$|::Post-Install-Pkgs$/i.test(key)) return 'command';
  if (/^Dir::Bin::|^DPkg::Path$|^Dir::Etc/i.test(key)) return 'program';
  if (/^Dpkg::Options$/i.test(key)) return 'config';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Applying the tables

/** Single-quotes `s` for a shell command line. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** tar/cpio is writing an archive (create, append, update, concatenate) rather than reading one. */
function createsArchive(v: CommandView): boolean {
  const a = v.args;
  const first = a[0]?.text ?? '';
  if (/^[A-Za-z]+$/.test(first) && /[cruA]/.test(first)) return true;
  if (a.some((x) => /^--(?:create|append|update|catenate|concatenate)$/.test(x.text))) return true;
  if (v.name === 'cpio') return a.some((x) => /^-[a-zA-Z]*o/.test(x.text) || x.text === '--create');
  return a.some((x) => /^-[A-Za-z]+$/.test(x.text) && /^-[^CFIXTgfbHKLNV]*[cruA]/.test(x.text));
}

/** A less command (`+cmd`, lesskey content): `!cmd` and `|mcmd` run shell commands, `s file` saves. */
function lessCommand(text: string, label: string, ctx: RuleContext): void {
  ctx.add('caution', `${label} runs a less command at start (${text})`);
  const bang = /!(.*)$/s.exec(text);
  if (bang?.[1]) ctx.classifyCode(bang[1], label);
  const pipe = /\|.(.*)$/s.exec(text);
  if (pipe?.[1]) ctx.classifyCode(pipe[1], label);
  const save = /(?:^|[\s;])s\s*(\S+)/.exec(text);
  if (save) {
    const f = writeFinding(save[1]!, `${label} saves to`);
    if (f) ctx.add(f.tier, f.reason);
  }
}

const EX_SHELL_RE = /(?:^|\|)[\s:]*(?:sil(?:e(?:n(?:t)?)?)?!?\s*)?(?:[%.$,'<>\d]*\s*)(?:(?:r(?:e(?:a(?:d)?)?)?|w(?:r(?:i(?:t(?:e)?)?)?)?)\s*)?!(.*)$/s;
const EX_TERMINAL_RE = /(?:^|\|)[\s:]*ter(?:m(?:i(?:n(?:a(?:l)?)?)?)?)?!?\b\s*(.*)$/s;
const EX_SYSTEM_RE = /\b(?:system(?:list)?|job_?start|termopen|libcall)\s*\(\s*(['"])((?:\\.|(?!\1).)*)\1/g;
const EX_LANG_RE = /(?:^|\|)[\s:]*(py(?:thon)?3?|pyx|lua|perl|ruby|rub)\b\s*(.*)$/s;
const EX_WRITE_RE = /(?:^|\|)[\s:]*(?:w|wr|wri|writ|write|sav|save|savea|saveas|wq|x|xit|up|update)!?\s+([^|!\s][^|]*)/;
const EX_READ_RE = /(?:^|\|)[\s:]*(?:r|re|rea|read|so|sou|sour|sourc|source|e|ed|edi|edit|sp|split|tabe|tabedit)!?\s+([^|!\s][^|]*)/;

/** A vim/ex command (-c, +cmd, --cmd): shell escapes, :terminal, system(), :py/:lua/..., :w file. */
export function editorCommand(text: string, label: string, ctx: RuleContext): void {
  ctx.add('caution', `${label} runs an editor command (${text})`);
  const sh = EX_SHELL_RE.exec(text);
  if (sh?.[1]?.trim()) ctx.classifyCode(sh[1], `${label} !`);
  const term = EX_TERMINAL_RE.exec(text);
  if (term?.[1]?.trim()) ctx.classifyCode(term[1], `${label} :terminal`);
  else if (term) ctx.add('caution', `${label} opens a terminal`);
  for (const m of text.matchAll(EX_SYSTEM_RE)) {
    ctx.add('caution', `${label} runs a shell command through system()`);
    ctx.classifyCode(m[2]!.replace(/\\(.)/g, '$1'), `${label} system()`);
  }
  const lang = EX_LANG_RE.exec(text);
  if (lang?.[2]?.trim()) {
    const exe = lang[1]!.startsWith('py') ? 'python3' : lang[1]!.startsWith('rub') ? 'ruby' : lang[1]!;
    ctx.classifyCode(`${exe} ${exe === 'python3' ? '-c' : '-e'} ${shQuote(lang[2])}`, `${label} :${lang[1]}`);
  }
  const w = EX_WRITE_RE.exec(text);
  if (w) {
    const f = writeFinding(w[1]!.trim(), `${label} writes to`);
    if (f) ctx.add(f.tier, f.reason);
  }
  const r = EX_READ_RE.exec(text);
  if (r) ctx.reads(r[1]!.trim(), label);
}

/** A gdb command (-ex): `shell`/`!`, `pipe`, `python`, `call system()`. */
function gdbCommand(text: string, label: string, ctx: RuleContext): void {
  ctx.add('caution', `${label} runs a debugger command (${text})`);
  const sh = /^\s*(?:shell\b|!)\s*(.*)$/s.exec(text);
  if (sh?.[1]?.trim()) ctx.classifyCode(sh[1], `${label} shell`);
  const pipe = /^\s*(?:pipe\b|\|)(?:[^|]*)\|(.*)$/s.exec(text);
  if (pipe?.[1]?.trim()) ctx.classifyCode(pipe[1], `${label} pipe`);
  const py = /^\s*(?:python3?|py|pi)\b\s*(.*)$/s.exec(text);
  if (py?.[1]?.trim()) ctx.classifyCode(`python3 -c ${shQuote(py[1])}`, `${label} python`);
  for (const m of text.matchAll(/\bsystem\s*\(\s*"((?:\\.|[^"\\])*)"/g)) ctx.classifyCode(m[1]!.replace(/\\(.)/g, '$1'), `${label} system()`);
}

/** An ssh_config option given with -o (`Key=Value` or `Key Value`). */
export function sshOption(text: string, label: string, ctx: RuleContext): void {
  const m = /^\s*([A-Za-z0-9]+)\s*(?:=\s*|\s+)(.*)$/s.exec(text);
  if (!m) return;
  const key = m[1]!;
  const value = m[2]!.trim();
  const spec = SSH_OPTIONS[key.toLowerCase()];
  if (!spec) return;
  const what = `${label} ${key}`;
  switch (spec.kind) {
    case 'command':
    case 'remote':
      ctx.add('caution', `${what} runs a ${spec.what} (${value})`);
      if (value && value.toLowerCase() !== 'none') ctx.classifyCode(value.replace(/%[a-zA-Z%]/g, 'x'), what);
      return;
    case 'library':
      ctx.add('caution', `${what} loads a ${spec.what} (${value})`);
      return;
    case 'forward-remote':
      ctx.add('dangerous', `${what} opens a ${spec.what} (${value}): the remote side can reach into this machine`);
      return;
    case 'forward':
      if (!/^(?:no|false)$/i.test(value)) ctx.add('caution', `${what} opens a ${spec.what} (${value})`);
      return;
    case 'weakens':
      if (!/^(?:no|false)$/i.test(value) || key.toLowerCase() === 'stricthostkeychecking') {
        if (key.toLowerCase() !== 'stricthostkeychecking' || /^(?:no|off|accept-new|false)$/i.test(value)) ctx.add('caution', `${what}=${value}: ${spec.what}`);
      }
      return;
    case 'write': {
      const f = writeFinding(value, `${what} writes to`);
      if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
      return;
    }
    default:
      ctx.add('caution', `${what} uses a ${spec.what} (${value})`);
  }
}

/** An apt -o option (`Key=Value`). */
function aptOption(text: string, label: string, ctx: RuleContext): void {
  const eq = text.indexOf('=');
  if (eq < 0) return;
  const key = text.slice(0, eq).replace(/::$/, '');
  const value = text.slice(eq + 1);
  const kind = aptOptionKind(key);
  if (kind === 'command' || kind === 'program') {
    ctx.add('caution', `${label} ${key} makes apt run a command (${value})`);
    if (value) ctx.classifyCode(value, `${label} ${key}`);
  } else if (kind === 'config') ctx.add('caution', `${label} passes options to dpkg (${value})`);
}

const FZF_ACTION_RE =
  /\b(?:execute(?:-silent|-multi)?|become|reload(?:-sync)?|preview|change-preview|transform[\w-]*)(?:\(([^)]*)\)|\[([^\]]*)\]|\{([^}]*)\}|<([^>]*)>|:(.*)$)/g;

/** Reports every option of `v` that its tool's table names. */
export function applyToolOptions(v: CommandView, ctx: RuleContext): void {
  const table = TOOL_OPTIONS[v.name];
  if (!table) return;
  for (const h of scanOptions(table, v.args)) {
    const label = `${v.name} ${h.spelling}`;
    const val = h.value;
    const what = h.spec.what;
    switch (h.spec.kind) {
      case 'command':
      case 'program':
        if (!val) {
          if (h.spec.optional) ctx.add('caution', `${label} runs a ${what}`);
          break;
        }
        ctx.add('caution', `${label} runs a ${what} (${val})`);
        ctx.classifyCode(val.replace(/\{[^}]*\}/g, './item'), label);
        break;
      case 'remote':
        ctx.add('caution', `${label} runs a ${what} on the remote host (${val})`);
        break;
      case 'write': {
        if (!val) break;
        const f = writeFinding(val, `${label} writes to`);
        if (f) ctx.add(f.tier, f.reason);
        ctx.writes(val);
        break;
      }
      case 'read':
        if (val) ctx.reads(val, label);
        break;
      case 'config': {
        ctx.add('caution', `${label} loads a ${what} (${val}) that can name programs to run`);
        if (val && !/[\s=]/.test(val)) ctx.reads(val, label);
        const f = val ? ctx.fetched(val) : undefined;
        if (f) ctx.add('dangerous', `${label} loads a ${what} this command line ${f === 'download' ? 'downloaded' : 'decoded'} (${val})`);
        // wgetrc commands that name files (wget -e output_document=...)
        const rc = /^\s*(output_document|logfile|append_output|dir_prefix|save_cookies|warc_file)\s*=\s*(.+)$/i.exec(val);
        if (rc) {
          const w = writeFinding(rc[2]!.trim(), `${label} ${rc[1]} writes to`);
          if (w) ctx.add(w.tier, w.reason);
          ctx.writes(rc[2]!.trim());
        }
        break;
      }
      case 'library': {
        ctx.add('caution', `${label} loads a ${what} (${val})`);
        const f = ctx.fetched(val);
        if (f) ctx.add('dangerous', `${label} loads a ${what} this command line ${f === 'download' ? 'downloaded' : 'decoded'} (${val})`);
        break;
      }
      case 'socket':
        ctx.add('caution', `${label} connects to a ${what} (${val})`);
        if (/docker\.sock|containerd\.sock|podman\.sock/.test(val))
          ctx.add('dangerous', `${label} talks to the container runtime socket (${val}), which is root on the host`);
        break;
      case 'chdir':
        if (val) ctx.reads(val, label);
        break;
      case 'archive':
        if (!val || val === '-') break;
        if (/^[^/:]+:/.test(val) && !/^[A-Za-z]:[\\/]/.test(val)) ctx.add('caution', `${label} uses a remote archive over rsh (${val})`);
        if (createsArchive(v)) {
          const f = writeFinding(val, `${label} writes to`);
          if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
          ctx.writes(val);
        } else ctx.reads(val, label);
        break;
      case 'ssh-option':
        sshOption(val, label, ctx);
        break;
      case 'apt-option':
        aptOption(val, label, ctx);
        break;
      case 'editor-command':
        editorCommand(val, label, ctx);
        break;
      case 'gdb-command':
        gdbCommand(val, label, ctx);
        break;
      case 'less-command':
        lessCommand(val, label, ctx);
        break;
      case 'env': {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(val);
        if (m) envFinding(m[1]!, m[2]!, false, ctx);
        break;
      }
      case 'forward':
        ctx.add('caution', `${label} opens a ${what} (${val})`);
        break;
      case 'forward-remote':
        ctx.add('dangerous', `${label} opens a ${what} (${val}): the remote side can reach into this machine`);
        break;
      case 'bind-action':
        for (const m of val.matchAll(FZF_ACTION_RE)) {
          const cmd = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? '';
          ctx.add('caution', `${label} binds a key to a command (${cmd})`);
          if (cmd.trim()) ctx.classifyCode(cmd.replace(/\{[^}]*\}/g, './item'), label);
        }
        break;
      case 'flag':
        ctx.add('caution', `${label}: ${what}`);
        break;
    }
  }
}
