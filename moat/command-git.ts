// git's ways of naming a program to run or a file to write, from git-config(1), git(1) and the
// subcommands' manuals: configuration keys (given with -c, --config-env, `git config`, `clone -c`
// or GIT_CONFIG_* variables), global options, and subcommand options such as --upload-pack.
import type { Arg, RuleContext } from './command-args.js';
import { type OptionTable, scanOptions } from './command-options.js';
import { writeFinding } from './command-paths.js';

type GitKind = 'command' | 'alias' | 'program' | 'config' | 'write' | 'protocol' | 'url' | 'proxy' | 'read' | 'chdir';

// Keys as `section.key` or `section.*.key` (the subsection is any text), lower-cased.
const GIT_CONFIG_KEYS: [RegExp, GitKind, string][] = [
  [/^core\.(?:pager|editor|sshcommand|askpass|gitproxy|alternaterefscommand)$/, 'command', 'helper command'],
  [/^core\.fsmonitor$/, 'command', 'file-system monitor hook'],
  [/^core\.hookspath$/, 'config', 'hooks folder'],
  [/^core\.(?:worktree|attributesfile|excludesfile)$/, 'read', 'file'],
  [/^diff\.external$/, 'command', 'external diff'],
  [/^diff\..+\.(?:command|textconv)$/, 'command', 'diff driver'],
  [/^merge\..+\.driver$/, 'command', 'merge driver'],
  [/^filter\..+\.(?:clean|smudge|process)$/, 'command', 'filter'],
  [/^credential(?:\..+)?\.helper$/, 'command', 'credential helper'],
  [/^sequence\.editor$/, 'command', 'sequence editor'],
  [/^pager\..+$/, 'command', 'pager'],
  [/^alias\..+$/, 'alias', 'alias'],
  [/^gpg(?:\.\w+)?\.program$|^gpg\.ssh\.defaultkeycommand$/, 'command', 'signing program'],
  [/^uploadpack\.packobjectshook$/, 'command', 'pack-objects hook'],
  [/^remote\..+\.(?:uploadpack|receivepack)$/, 'command', 'remote helper program'],
  [/^remote\..+\.proxy$|^https?(?:\..+)?\.proxy$/, 'proxy', 'proxy'],
  [/^(?:merge|diff)tool\..+\.(?:cmd|path)$/, 'command', 'merge/diff tool'],
  [/^browser\..+\.(?:cmd|path)$|^web\.browser$|^instaweb\.(?:httpd|browser)$/, 'command', 'browser'],
  [/^man\..+\.(?:cmd|path)$|^man\.viewer$/, 'command', 'man viewer'],
  [/^sendemail\.(?:smtpserver|tocmd|cccmd|sendmailcmd|headercmd)$/, 'command', 'mail command'],
  [/^submodule\..+\.update$/, 'alias', 'submodule update command'],
  [/^imap\.tunnel$/, 'command', 'imap tunnel'],
  [/^include(?:if\..+)?\.path$/, 'config', 'included config'],
  [/^init\.templatedir$/, 'config', 'template folder (hooks)'],
  [/^protocol(?:\..+)?\.allow$/, 'protocol', 'transport protocols'],
  [/^url\..+\.(?:insteadof|pushinsteadof)$/, 'url', 'URL rewrite'],
  [/^trace2\.(?:normaltarget|perftarget|eventtarget)$/, 'write', 'trace file'],
];

function keyOf(raw: string): string {
  // section and key names are case-insensitive, the subsection is not; compare lower-cased
  return raw.toLowerCase();
}

/** Reports a git configuration `key` set to `value` (from -c, --config-env, `git config`, ...). */
export function gitConfigFinding(key: string, value: string | undefined, how: string, ctx: RuleContext): void {
  const k = keyOf(key);
  const hit = GIT_CONFIG_KEYS.find(([re]) => re.test(k));
  if (!hit) return;
  const [, kind, what] = hit;
  const v = value ?? '';
  switch (kind) {
    case 'command':
      if (k === 'core.fsmonitor' && /^(?:true|false|yes|no|on|off|0|1|)$/i.test(v)) return;
      if (k.startsWith('pager.') && /^(?:true|false|yes|no|on|off|0|1|)$/i.test(v)) return;
      ctx.add('caution', `${how} sets ${key}, a ${what} git runs`);
      if (value === undefined) return;
      if (k.startsWith('credential') && !v.startsWith('!') && !/[/\s]/.test(v)) return; // git-credential-<name>
      if (v) ctx.classifyCode(v.replace(/^!/, ''), `git ${key}`);
      return;
    case 'alias':
      if (v.startsWith('!')) {
        ctx.add('caution', `${how} sets ${key}, a ${what} that runs a shell command`);
        ctx.classifyCode(v.slice(1), `git ${key}`);
      }
      return;
    case 'config':
      ctx.add('caution', `${how} sets ${key}, a ${what} git obeys (it can run programs)`);
      return;
    case 'protocol':
      if (/always|user/i.test(v) || /\.ext\./.test(k) || k === 'protocol.allow')
        ctx.add('caution', `${how} allows git transports (${key}=${v}); ext:: runs commands`);
      return;
    case 'url':
      ctx.add('caution', `${how} rewrites git remote URLs (${key}=${v})`);
      if (/^ext::/.test(v)) ctx.add('dangerous', `${how} rewrites remotes to an ext:: command (${v})`);
      return;
    case 'proxy':
      ctx.add('caution', `${how} routes git traffic through a proxy (${key}=${v})`);
      return;
    case 'write': {
      const f = /^[/~.]/.test(v) ? writeFinding(v, `git ${key} writes to`) : null;
      if (f) ctx.add(f.tier, f.reason);
      return;
    }
    case 'read':
      if (v) ctx.reads(v, `git ${key}`);
      return;
    default:
      return;
  }
}

/** `key=value` as given to -c / clone --config (a bare key means true). */
export function splitConfig(text: string): [string, string | undefined] {
  const eq = text.indexOf('=');
  return eq < 0 ? [text, undefined] : [text.slice(0, eq), text.slice(eq + 1)];
}

type SubKind = 'command' | 'write' | 'config-pair' | 'config' | 'chdir' | 'network';

// Subcommand options that name programs or files (git-clone(1), git-fetch(1), git-push(1), ...).
const SUB_OPTIONS: Record<string, OptionTable<SubKind>> = {
  clone: {
    argShort: 'bjo',
    argLong: [
      'branch',
      'origin',
      'depth',
      'shallow-since',
      'shallow-exclude',
      'reference',
      'reference-if-able',
      'filter',
      'jobs',
      'bundle-uri',
      'server-option',
    ],
    abbrev: true,
    options: [
      { short: 'u', long: ['upload-pack'], kind: 'command', what: 'upload-pack program' },
      { short: 'c', long: ['config'], kind: 'config-pair', what: 'config' },
      { long: ['template'], kind: 'config', what: 'template folder (hooks)' },
      { long: ['separate-git-dir'], kind: 'write', what: 'git folder' },
    ],
  },
  fetch: { abbrev: true, options: [{ long: ['upload-pack'], kind: 'command', what: 'upload-pack program' }] },
  pull: { abbrev: true, options: [{ long: ['upload-pack'], kind: 'command', what: 'upload-pack program' }] },
  'ls-remote': { abbrev: true, options: [{ long: ['upload-pack'], kind: 'command', what: 'upload-pack program' }] },
  'fetch-pack': { abbrev: true, options: [{ long: ['upload-pack', 'exec'], kind: 'command', what: 'upload-pack program' }] },
  push: { abbrev: true, options: [{ long: ['receive-pack', 'exec'], kind: 'command', what: 'receive-pack program' }] },
  'send-pack': { abbrev: true, options: [{ long: ['receive-pack', 'exec'], kind: 'command', what: 'receive-pack program' }] },
  archive: {
    abbrev: true,
    options: [
      { long: ['exec'], kind: 'command', what: 'remote archiver' },
      { short: 'o', long: ['output'], kind: 'write', what: 'archive' },
      { long: ['remote'], kind: 'network', what: 'remote repository' },
    ],
  },
  rebase: { argShort: 's', abbrev: true, options: [{ short: 'x', long: ['exec'], kind: 'command', what: 'command after each commit' }] },
  difftool: { argShort: 't', abbrev: true, options: [{ short: 'x', long: ['extcmd'], kind: 'command', what: 'diff command' }] },
  grep: { argShort: 'efABCm', options: [{ short: 'O', long: ['open-files-in-pager'], kind: 'command', what: 'pager', optional: true }] },
  'format-patch': { abbrev: true, options: [{ short: 'o', long: ['output-directory'], kind: 'write', what: 'patch folder' }] },
  'send-email': { abbrev: true, options: [{ long: ['smtp-server', 'to-cmd', 'cc-cmd', 'sendmail-cmd', 'header-cmd'], kind: 'command', what: 'mail command' }] },
  instaweb: {
    abbrev: true,
    options: [
      { short: 'd', long: ['httpd'], kind: 'command', what: 'web server' },
      { short: 'b', long: ['browser'], kind: 'command', what: 'browser' },
    ],
  },
  bundle: { options: [] },
};

// Options that write a file whatever the subcommand (log, diff, show, range-diff, ...).
const ANY_OUTPUT: OptionTable<SubKind> = { options: [{ long: ['output'], kind: 'write', what: 'output file' }] };

/** Global options: -c, --config-env, --exec-path, -C, --git-dir, --work-tree. Returns the subcommand index. */
export function gitGlobals(a: Arg[], ctx: RuleContext): number {
  let i = 0;
  while (i < a.length) {
    const t = a[i]!.text;
    if (t === '-c' || t === '-C') {
      const v = a[i + 1]?.text;
      if (v !== undefined) {
        if (t === '-c') {
          const [k, val] = splitConfig(v);
          ctx.add('caution', `overrides git config (${v})`);
          gitConfigFinding(k, val, 'git -c', ctx);
        } else ctx.reads(v, 'git -C');
      }
      i += 2;
      continue;
    }
    const m = /^--(config-env|exec-path|git-dir|work-tree|namespace|super-prefix|list-cmds|attr-source)(?:=(.*))?$/s.exec(t);
    if (m) {
      const takesNext = m[2] === undefined && m[1] !== 'exec-path';
      const v = m[2] ?? (takesNext ? a[i + 1]?.text : undefined);
      if (m[1] === 'config-env' && v) {
        const [k] = splitConfig(v);
        ctx.add('caution', `overrides git config from the environment (${v})`);
        gitConfigFinding(k, undefined, 'git --config-env', ctx);
      }
      if (m[1] === 'exec-path' && v !== undefined) ctx.add('caution', `git --exec-path changes where git finds its programs (${v})`);
      if ((m[1] === 'git-dir' || m[1] === 'work-tree') && v) ctx.reads(v, `git --${m[1]}`);
      i += takesNext ? 2 : 1;
      continue;
    }
    if (t.startsWith('-')) {
      i++;
      continue;
    }
    break;
  }
  return i;
}

/** Subcommand options, `git config KEY VALUE`, ext:: URLs, `bisect run` and `submodule foreach`. */
export function gitSubcommandHelpers(sub: string, rest: Arg[], ctx: RuleContext): void {
  for (const table of [SUB_OPTIONS[sub], ANY_OUTPUT]) {
    if (!table) continue;
    for (const h of scanOptions(table, rest)) {
      const label = `git ${sub} ${h.spelling}`;
      if (h.spec.kind === 'command') {
        if (!h.value) continue;
        ctx.add('caution', `${label} runs a ${h.spec.what} (${h.value})`);
        ctx.classifyCode(h.value, label);
      } else if (h.spec.kind === 'write') {
        const f = writeFinding(h.value, `${label} writes to`);
        if (f) ctx.add(f.tier, f.reason);
        ctx.writes(h.value);
      } else if (h.spec.kind === 'config-pair') {
        const [k, v] = splitConfig(h.value);
        ctx.add('caution', `${label} sets config (${h.value})`);
        gitConfigFinding(k, v, label, ctx);
      } else if (h.spec.kind === 'config') {
        ctx.add('caution', `${label} uses a ${h.spec.what} ${h.value} (it can run programs)`);
      }
    }
  }
  for (const x of rest) {
    if (/^ext::/.test(x.text)) {
      ctx.add('caution', `git ${sub} uses an ext:: remote, which runs a command`);
      ctx.classifyCode(
        x.text
          .slice(5)
          .replace(/%[sSGV]/g, 'git-upload-pack')
          .replace(/%%/g, '%'),
        'git ext:: remote',
      );
    }
  }
  const words = rest.map((x) => x.text);
  if (sub === 'bisect' && words[0] === 'run' && rest.length > 1) {
    ctx.add('caution', 'git bisect run runs a command on each step');
    ctx.runArgv(rest.slice(1), 'git bisect run');
  }
  if (sub === 'submodule' && words.includes('foreach')) {
    const cmd = rest.slice(words.indexOf('foreach') + 1).filter((x) => !x.text.startsWith('--'));
    if (cmd.length) {
      ctx.add('caution', 'git submodule foreach runs a command in every submodule');
      ctx.classifyCode(cmd.map((x) => x.text).join(' '), 'git submodule foreach');
    }
  }
  if (sub === 'config') {
    const pos = rest.filter((x) => !x.text.startsWith('-'));
    const setWords = pos[0]?.text === 'set' ? pos.slice(1) : pos;
    const readOnly = rest.some(
      (x) => /^--(?:get|get-all|get-regexp|get-urlmatch|list|unset|unset-all|remove-section|rename-section)$/.test(x.text) || x.text === '-l',
    );
    if (!readOnly && setWords.length >= 2 && !['get', 'list', 'unset', 'edit'].includes(pos[0]?.text ?? '')) {
      gitConfigFinding(setWords[0]!.text, setWords[setWords.length - 1]!.text, 'git config', ctx);
    }
  }
}
