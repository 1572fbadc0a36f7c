// Per-command rules for the command classifier (moat/command-classifier.ts).
//
// The classifier parses the shell, expands words as far as it statically can, strips wrappers
// (sudo, env, xargs, ...) and then hands each simple command to the rule registered for its name
// here. Rules only see already-evaluated arguments (`Arg`, ./command-args.ts) and report findings
// through a `RuleContext`; they never parse shell themselves (nested code goes back through
// `ctx.classifyCode`). Beside them: path predicates (./command-paths.ts), option tables of helper
// programs (./command-helpers.ts), variables (./command-env.ts), git (./command-git.ts), builtins
// (./command-builtins.ts), detaching (./command-background.ts), persistence, accounts, sysctl,
// logs and kills (./command-system.ts).

import {
  type Arg,
  type CommandView,
  hasLong,
  hasShort,
  litArg,
  optValues,
  type Produced,
  positionals,
  type Rule,
  type RuleContext,
  subcommand,
} from './command-args.js';
import { daemonize, disown, dtach, screen, startStopDaemon, systemdRun, tmux } from './command-background.js';
import { BUILTIN_RULES } from './command-builtins.js';
import { gitGlobals, gitSubcommandHelpers } from './command-git.js';
import { isBlockDevice, isCriticalPath, isHistoryFile, isSecretPath, isStartupFile, isSystemPath, normPath, writeFinding } from './command-paths.js';
import { auditctl, CRITICAL_SERVICES, crontab, dmesg, gpasswd, journalctl, kill, pkill, service, sysctl, useradd } from './command-system.js';
import type { Tier } from './command-tier.js';

function addWrite(ctx: RuleContext, a: Arg, verb: string): void {
  const f = writeFinding(a.text, verb, a.dynamic);
  if (f) ctx.add(f.tier, f.reason);
}

// ---------------------------------------------------------------------------------------------
// Text producers and decoders

function echoEscapes(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|0[0-7]{0,3}|[0-7]{1,3}|u[0-9a-fA-F]{1,4}|.)/g, (_m, e: string) => {
    switch (e[0]) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'a':
      case 'b':
      case 'f':
      case 'v':
      case 'e':
      case 'c':
        return '';
      case '\\':
        return '\\';
      case 'x':
        return String.fromCharCode(parseInt(e.slice(1), 16));
      case 'u':
        return String.fromCharCode(parseInt(e.slice(1), 16));
      default:
        if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e.replace(/^0/, '') || '0', 8));
        return `\\${e}`;
    }
  });
}

function echoText(args: Arg[]): string {
  let i = 0;
  let escapes = false;
  while (i < args.length && /^-[neE]+$/.test(args[i]!.text)) {
    if (args[i]!.text.includes('e')) escapes = true;
    i++;
  }
  const s = args
    .slice(i)
    .map((a) => a.text)
    .join(' ');
  return escapes ? echoEscapes(s) : s;
}

function printfText(args: Arg[]): string | undefined {
  let rest = args;
  if (rest[0]?.text === '-v') return undefined; // assigns a variable, prints nothing
  if (rest[0]?.text === '--') rest = rest.slice(1);
  const fmt = rest[0];
  if (!fmt) return '';
  const vals = rest.slice(1).map((a) => a.text);
  let k = 0;
  const once = (): string =>
    echoEscapes(fmt.text).replace(/%(?:%|[-+ #0]*\d*(?:\.\d+)?[sbdiouxXcqfeEgG])/g, (m) => {
      if (m === '%%') return '%';
      const v = vals[k++] ?? '';
      return m.endsWith('b') ? echoEscapes(v) : v;
    });
  let out = once();
  while (k > 0 && k < vals.length) out += once();
  return out;
}

function tryBase64(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) return undefined;
  const out = Buffer.from(compact, 'base64').toString('utf8');
  return /^[\x09\x0a\x0d\x20-\x7e\u00a0-\uffff]*$/.test(out) && !out.includes('\ufffd') ? out : undefined;
}

function tryHex(text: string): string | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(compact)) return undefined;
  return Buffer.from(compact, 'hex').toString('utf8');
}

// ---------------------------------------------------------------------------------------------
// Inline code of interpreters (python -c, perl -e, node -e, ...)

const SHELL_CALL_RE =
  /\.(?:system|popen[234]?|spawn[lv]p?e?|execSync|execFileSync|spawnSync|check_output|check_call|Popen|getoutput|getstatusoutput)\s*\(|\b(?:os\.(?:system|popen[234]?|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?)|subprocess\.(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)|pty\.spawn|commands\.getoutput|child_process|exec(?:File)?Sync|spawnSync|execSync|shell_exec|passthru|proc_open|popen|IO\.popen|Open3\.\w+|Kernel\.(?:system|exec|spawn)|os\.execute|io\.popen|Deno\.(?:run|Command)|Bun\.spawn(?:Sync)?|do shell script|Runtime\.getRuntime\(\)\.exec)\b|(?:^|[^.\w$])(?:system|exec|spawn|execFile|fork)\s*[(\s'"`]/;

const DELETE_CALL_RE =
  /\.(?:rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync|rmtree|removeSync|emptyDirSync|remove_tree)\s*\(|\b(?:shutil\.rmtree|os\.(?:remove|unlink|rmdir|removedirs)|rmtree|remove_tree|FileUtils\.(?:rm|rm_r|rm_rf|rm_f|remove\w*)|File\.(?:delete|unlink)|Dir\.(?:delete|unlink|rmdir)|fs\.promises\.(?:rm|rmdir|unlink)|rimraf|Deno\.remove(?:Sync)?)\b|\b(?:unlink|rmdir)\s*[(\s'"]/;

const RECURSIVE_DELETE_RE =
  /(?:shutil\.rmtree|rmtree|remove_tree|rm_rf|rm_r|rimraf|Deno\.remove(?:Sync)?|\.(?:rmSync|rm|removeSync|emptyDirSync)|FileUtils\.remove_dir)\s*\(?\s*(?:\[\s*)?(?:r|b|u|f)?(['"`])(.*?)\1/g;

const STRING_ARG_RE =
  /(?:os\.system|os\.popen|subprocess\.\w+|execSync|exec|system|spawnSync|spawn|shell_exec|passthru|popen|IO\.popen|os\.execute|io\.popen|check_output|check_call|call|run|getoutput|do shell script)\s*\(?\s*(\[)?\s*(?:r|b|u|f)?(['"`])((?:\\.|(?!\2).)*)\2/g;

function pyListTail(code: string, from: number): string[] {
  // Collects the remaining string literals of a list literal starting at `from` (best effort).
  const end = code.indexOf(']', from);
  const body = code.slice(from, end < 0 ? undefined : end);
  const out: string[] = [];
  for (const m of body.matchAll(/(['"])((?:\\.|(?!\1).)*)\1/g)) out.push(m[2]!);
  return out;
}

const NET_CODE_RE =
  /\bsocket\b|TCPSocket|fsockopen|\bnet\.(?:connect|createConnection|Socket)|new\s+Socket|IO::Socket|create_connection|urlopen|urllib|requests\.(?:post|put|get|request)|http\.(?:request|get|post)|\bfetch\s*\(|LWP::|HTTP::Tiny|Net::HTTP|curl_exec|https?:\/\//;
const SOCKET_CODE_RE = /\bsocket\b|TCPSocket|fsockopen|\bnet\.(?:connect|createConnection|Socket)|new\s+Socket|IO::Socket|create_connection/;
const WHOLE_ENV_RE =
  /dict\(\s*os\.environ\s*\)|os\.environ\.copy\(\)|(?:dumps|str|repr)\(\s*(?:dict\(\s*)?os\.environ\b|JSON\.stringify\(\s*process\.env\s*\)|\bENV\.to_h\b|%ENV\b|environ\.items\(\)/;

/** Looks for shell-outs and deletions in interpreter code and reports them. */
export function scanInlineCode(lang: string, code: string, ctx: RuleContext): void {
  ctx.add('caution', `runs inline ${lang} code`);
  if (/\bfork\b/.test(code) && /\b(?:while|loop|for\s*\(\s*;\s*;|until)\b/.test(code)) {
    ctx.add('blocked', `fork bomb in inline ${lang} code (fork in a loop)`);
  }
  let shellOut = false;
  if (SHELL_CALL_RE.test(code) || (/`[^`]+`|\bqx\s*[{(/]|%x[({]/.test(code) && /^(?:perl|ruby|php)/.test(lang))) {
    shellOut = true;
    ctx.add('dangerous', `inline ${lang} code runs shell commands or dynamic code`);
  }
  if (DELETE_CALL_RE.test(code)) ctx.add('dangerous', `inline ${lang} code deletes files`);
  const net = NET_CODE_RE.test(code);
  if (SOCKET_CODE_RE.test(code) && /dup2|pty\.spawn|\/bin\/(?:ba|z|da|k)?sh\b|cmd\.exe|\bexec\s*[(\s'"]|\bspawn\s*\(|popen|subprocess|system\s*\(/.test(code)) {
    ctx.add('dangerous', `inline ${lang} code connects a shell to a socket (reverse shell)`);
  }
  const secrets = [...code.matchAll(/(['"])([~/.$][^'"\n]*)\1/g)].map((m) => m[2]!).filter((p) => isSecretPath(p));
  if (WHOLE_ENV_RE.test(code)) secrets.push('the environment');
  if (secrets.length) {
    ctx.add('caution', `inline ${lang} code reads credential material (${secrets.join(' ')})`);
    if (net) ctx.add('dangerous', `inline ${lang} code sends credential material over the network (${secrets.join(' ')})`);
  }
  for (const m of code.matchAll(RECURSIVE_DELETE_RE)) {
    if (isCriticalPath(m[2]!)) ctx.add('blocked', `inline ${lang} code recursively deletes ${normPath(m[2]!)}`);
  }
  if (
    /\b(?:exec|eval)\s*\(/.test(code) &&
    /b64decode|base64|decode\(|fromhex|unhexlify|urlopen|requests\.get|fetch\(|http\.get|atob\(|Buffer\.from\(/.test(code)
  ) {
    ctx.add('dangerous', `inline ${lang} code executes decoded or downloaded code`);
  }
  if (
    /open\s*\(\s*(?:r|b|u|f)?['"](?:\/etc\/|\/usr\/|\/boot\/|\/bin\/|\/sbin\/|\/dev\/[shv]d|~?\/?\.ssh\/|\/root\/\.ssh\/)[^'"]*['"]\s*,\s*['"][wa]/.test(
      code,
    ) ||
    /(?:writeFileSync|appendFileSync|writeFile|appendFile)\s*\(\s*['"](?:\/etc\/|\/usr\/|\/boot\/|\/bin\/)/.test(code)
  ) {
    ctx.add('dangerous', `inline ${lang} code writes to a system path`);
  }
  if (shellOut) {
    for (const m of code.matchAll(STRING_ARG_RE)) {
      const isList = m[1] === '[';
      let cmd = m[3]!.replace(/\\(["'`\\])/g, '$1').replace(/\\n/g, '\n');
      if (isList) cmd = [cmd, ...pyListTail(code, (m.index ?? 0) + m[0].length)].join(' ');
      if (cmd.trim()) ctx.classifyCode(cmd, `${lang} shell-out`);
    }
    for (const m of code.matchAll(/`([^`]+)`|\bqx\s*[{(/]([^})/]+)[})/]/g)) {
      if (/^(?:perl|ruby|php)/.test(lang)) ctx.classifyCode(m[1] ?? m[2] ?? '', `${lang} backticks`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SQL and database clients

const SQL_DROP_RE = /\bDROP\s+(TABLE|DATABASE|SCHEMA|USER|ROLE|VIEW|INDEX|COLLECTION|KEYSPACE|FUNCTION|PROCEDURE|TRIGGER|OWNED|EXTENSION)\b/i;

/** Reports destructive SQL (DROP, TRUNCATE, DELETE/UPDATE without WHERE) and client shell escapes. */
export function scanSql(sql: string, client: string, ctx: RuleContext): void {
  for (const m of sql.matchAll(/^\s*(?:\\!|!|\.shell|\.system|system)\s+(.+)$/gm)) {
    ctx.add('dangerous', `${client} runs a shell command from SQL input`);
    ctx.classifyCode(m[1]!, `${client} shell escape`);
  }
  // Output piped to a command: sqlite .once/.output |cmd, psql \o |cmd and \g |cmd; server-side COPY ... PROGRAM.
  for (const m of sql.matchAll(/^\s*(?:\.(?:once|output)(?:\s+-\w+)*|\\(?:o|out|g|gx))\s+['"]?\|\s*(.+?)['"]?\s*$/gm)) {
    ctx.add('caution', `${client} pipes query output to a command`);
    ctx.classifyCode(m[1]!, `${client} output pipe`);
  }
  for (const m of sql.matchAll(/^\s*\.(?:once|output)(?:\s+-\w+)*\s+['"]?([^|'"\s][^'"\s]*)/gm)) {
    const f = writeFinding(m[1]!, `${client} .output writes to`);
    if (f) ctx.add(f.tier, f.reason);
  }
  for (const m of sql.matchAll(/\b(?:TO|FROM)\s+PROGRAM\s+'((?:[^']|'')*)'/gi)) {
    ctx.add('dangerous', `${client} COPY ... PROGRAM runs a shell command on the database server`);
    ctx.classifyCode(m[1]!.replace(/''/g, "'"), `${client} COPY PROGRAM`);
  }
  const cleaned = sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/\$\$[\s\S]*?\$\$/g, "''");
  for (const raw of cleaned.split(';')) {
    const stmt = raw.trim();
    if (!stmt) continue;
    const drop = SQL_DROP_RE.exec(stmt);
    if (drop) ctx.add('dangerous', `${client} runs DROP ${drop[1]!.toUpperCase()}`);
    if (/\bTRUNCATE\b/i.test(stmt)) ctx.add('dangerous', `${client} runs TRUNCATE`);
    const tautology = /\bWHERE\s+(?:1\s*=\s*1|true|'1'\s*=\s*'1'|''\s*=\s*''|1)\s*$/i.test(stmt);
    if (/\bDELETE\s+FROM\b/i.test(stmt) || /^\s*DELETE\s+\w/i.test(stmt)) {
      if (tautology) ctx.add('dangerous', `${client} runs DELETE with an always-true WHERE`);
      else if (/\bWHERE\b/i.test(stmt)) ctx.add('caution', `${client} deletes rows (DELETE ... WHERE)`);
      else ctx.add('dangerous', `${client} runs DELETE without WHERE (deletes every row)`);
    }
    if (/^\s*(?:WITH\b[\s\S]*?\)\s*)?UPDATE\b[\s\S]*?\bSET\b/i.test(stmt)) {
      if (tautology) ctx.add('dangerous', `${client} runs UPDATE with an always-true WHERE`);
      else if (/\bWHERE\b/i.test(stmt)) ctx.add('caution', `${client} updates rows (UPDATE ... WHERE)`);
      else ctx.add('dangerous', `${client} runs UPDATE without WHERE (rewrites every row)`);
    }
    if (/^\s*ALTER\s+TABLE\b[\s\S]*\bDROP\b/i.test(stmt)) ctx.add('dangerous', `${client} drops a column or constraint (ALTER TABLE ... DROP)`);
    if (/^\s*(?:INSERT|CREATE|ALTER|GRANT|REVOKE|REPLACE|MERGE|COPY|VACUUM|REINDEX|CLUSTER|RENAME|LOAD|CALL|DO)\b/i.test(stmt)) {
      ctx.add('caution', `${client} changes the database (${stmt.split(/\s+/)[0]!.toUpperCase()})`);
    }
  }
  // MongoDB shell (JavaScript)
  if (/\.dropDatabase\s*\(|\.drop\s*\(\s*\)|\.dropCollection\s*\(|\.dropAllUsers\s*\(|\.dropIndexes\s*\(/.test(sql)) {
    ctx.add('dangerous', `${client} drops a MongoDB database or collection`);
  }
  if (/\.(?:deleteMany|remove)\s*\(\s*\{\s*\}\s*\)|\.updateMany\s*\(\s*\{\s*\}/.test(sql)) {
    ctx.add('dangerous', `${client} deletes or rewrites every document`);
  }
  const redis = /^\s*(FLUSHALL|FLUSHDB|SHUTDOWN|DEBUG\s+SEGFAULT|SWAPDB)\b/im.exec(sql);
  if (redis) ctx.add('dangerous', `${client} runs ${redis[1]!.toUpperCase()}`);
}

function dbClient(kind: 'psql' | 'mysql' | 'sqlite' | 'mongo' | 'redis' | 'generic'): Rule {
  return (v, ctx) => {
    ctx.add('caution', `runs a database client (${v.name})`);
    const sqls: string[] = [];
    const a = v.args;
    if (kind === 'psql') sqls.push(...optValues(a, 'c', 'command'));
    if (kind === 'mysql') sqls.push(...optValues(a, 'e', 'execute'));
    if (kind === 'sqlite') {
      const pos: string[] = [];
      for (let i = 0; i < a.length; i++) {
        const t = a[i]!.text;
        if (/^--?(?:cmd|init|separator|nullvalue|newline|vfs|maxsize|mmap|pagecache|lookaside|heap|c)$/.test(t)) {
          if (/^--?(?:cmd|c)$/.test(t) && a[i + 1]) sqls.push(a[i + 1]!.text);
          i++;
        } else if (!t.startsWith('-')) pos.push(t);
      }
      sqls.push(...pos.slice(1));
    }
    if (kind === 'mongo') sqls.push(...optValues(a, null, 'eval'));
    if (kind === 'redis') {
      const pos = positionals(a, 'hpsanrdiuD', [
        'user',
        'pass',
        'sni',
        'cacert',
        'cacertdir',
        'cert',
        'key',
        'tls-ciphers',
        'tls-ciphersuites',
        'pattern',
        'count',
        'quoted-pattern',
        'eval',
        'functions-rdb',
        'rdb',
        'replica',
        'hotkeys',
        'bigkeys',
        'memkeys',
        'intrinsic-latency',
        'lru-test',
      ]);
      if (pos.length) sqls.push(pos.map((p) => p.text).join(' '));
      sqls.push(...optValues(a, null, 'eval'));
    }
    if (kind === 'generic') {
      sqls.push(...optValues(a, 'q', 'query'), ...optValues(a, 'e', 'execute'), ...optValues(a, 'Q', null), ...optValues(a, 'c', 'command'));
    }
    if (v.stdin?.text !== undefined) sqls.push(v.stdin.text);
    for (const s of sqls) scanSql(s, v.name, ctx);
  };
}

// ---------------------------------------------------------------------------------------------
// Rules

const add =
  (tier: Tier, reason: string): Rule =>
  (_v, ctx) => {
    ctx.add(tier, reason);
  };
const SAFE: Rule = () => undefined;

function caution(reason: string): Rule {
  return add('caution', reason);
}

const rm: Rule = (v, ctx) => {
  const a = v.args;
  const recursive = hasShort(a, 'rR') || hasLong(a, 'recursive');
  const noPreserve = hasLong(a, 'no-preserve-root');
  const targets = positionals(a);
  const flags = recursive ? (hasShort(a, 'f') || hasLong(a, 'force') ? 'rm -rf' : 'rm -r') : 'rm';
  let reported = false;
  for (const t of targets) {
    if ((recursive || noPreserve) && isCriticalPath(t.text)) {
      ctx.add('blocked', `${flags} on ${normPath(t.text)} (wipes the system or home directory)`);
      reported = true;
    } else if (!recursive && isCriticalPath(t.text) && t.glob) {
      ctx.add('dangerous', `${flags} with glob on ${t.text}`);
      reported = true;
    }
    if (isHistoryFile(t.text)) {
      ctx.add('dangerous', `deletes shell history ${t.text}`);
      reported = true;
    }
  }
  if (noPreserve) ctx.add('dangerous', 'rm --no-preserve-root');
  if (recursive && !reported) {
    const where = targets.map((t) => t.text).join(' ') || '(no path)';
    ctx.add('dangerous', `recursive delete (${flags} ${where})`);
    reported = true;
  }
  const globbed = targets.filter((t) => t.glob);
  if (globbed.length) ctx.add('dangerous', `rm with glob (${globbed.map((t) => t.text).join(' ')})`);
  if (v.viaXargs) ctx.add('dangerous', 'xargs rm deletes files listed on stdin');
  if (targets.some((t) => t.dynamic))
    ctx.add(
      'caution',
      `rm of a computed path (${targets
        .filter((t) => t.dynamic)
        .map((t) => t.text)
        .join(' ')})`,
    );
  for (const t of targets) if (isSystemPath(t.text) && !isCriticalPath(t.text)) ctx.add('dangerous', `deletes system path ${normPath(t.text)}`);
  for (const t of targets) if (isStartupFile(t.text)) ctx.add('dangerous', `deletes ${normPath(t.text)} (login, ssh or credential file)`);
  ctx.add('caution', `deletes files (${targets.map((t) => t.text).join(' ') || 'rm'})`);
};

const rmdir: Rule = (v, ctx) => {
  ctx.add(
    'caution',
    `removes directories (${positionals(v.args)
      .map((t) => t.text)
      .join(' ')})`,
  );
};

const unlink: Rule = (v, ctx) => {
  for (const t of positionals(v.args)) {
    if (isHistoryFile(t.text)) ctx.add('dangerous', `deletes shell history ${t.text}`);
    else if (isSystemPath(t.text) || isStartupFile(t.text)) ctx.add('dangerous', `deletes ${normPath(t.text)}`);
  }
  ctx.add('caution', 'deletes a file (unlink)');
};

const shred: Rule = (v, ctx) => {
  for (const t of positionals(v.args, 'nsx', ['iterations', 'size', 'random-source', 'remove'])) {
    if (isBlockDevice(t.text)) ctx.add('blocked', `${v.name} on block device ${normPath(t.text)} (destroys the disk)`);
    else if (isHistoryFile(t.text)) ctx.add('dangerous', `${v.name} wipes shell history ${t.text}`);
    else if (isCriticalPath(t.text)) ctx.add('blocked', `${v.name} on ${normPath(t.text)}`);
  }
  ctx.add('dangerous', `${v.name} irreversibly overwrites files`);
};

const truncate: Rule = (v, ctx) => {
  for (const t of positionals(v.args, 'sor', ['size', 'reference'])) addWrite(ctx, t, 'truncates');
};

function chmodLike(kind: 'chmod' | 'chown' | 'chgrp'): Rule {
  return (v, ctx) => {
    const a = v.args;
    const flagLike = (t: string): boolean => /^-[cfvRHLPh]+$/.test(t) || t.startsWith('--');
    const recursive = a.some((x) => /^-[cfvHLPh]*R[cfvRHLPh]*$/.test(x.text)) || hasLong(a, 'recursive');
    const ref = hasLong(a, 'reference');
    const pos: Arg[] = [];
    let dd = false;
    for (const x of a) {
      if (!dd && x.text === '--') {
        dd = true;
        continue;
      }
      if (!dd && flagLike(x.text)) continue;
      pos.push(x);
    }
    const mode = ref ? '' : (pos[0]?.text ?? '');
    const targets = ref ? pos : pos.slice(1);
    const label = `${kind}${recursive ? ' -R' : ''}`;
    let severe = false;
    for (const t of targets) {
      if (recursive && isCriticalPath(t.text, false)) {
        ctx.add('blocked', `${label} on ${normPath(t.text)} (breaks the whole system)`);
        severe = true;
      } else if (recursive && (isCriticalPath(t.text) || isSystemPath(t.text))) {
        ctx.add('dangerous', `${label} on ${normPath(t.text)}`);
        severe = true;
      } else if (isSystemPath(t.text) || isCriticalPath(t.text)) {
        ctx.add('dangerous', `${kind} on system path ${normPath(t.text)}`);
        severe = true;
      } else if (isStartupFile(t.text) && (kind !== 'chmod' || isWorldWritable(mode))) {
        ctx.add('dangerous', `${kind} ${mode} on ${normPath(t.text)} (login, ssh or credential file)`);
        severe = true;
      }
    }
    if (kind === 'chmod') {
      if (recursive && isWorldWritable(mode)) ctx.add('dangerous', `${label} ${mode} makes a whole tree world-writable`);
      if (recursive && /^0*$/.test(mode)) ctx.add('dangerous', `${label} ${mode} locks everyone out of a whole tree`);
      if (isSetId(mode)) ctx.add('dangerous', `sets the setuid/setgid bit (chmod ${mode})`);
    }
    if (recursive && !severe) ctx.add('caution', `${label} changes ownership/permissions recursively`);
    ctx.add('caution', `changes file ${kind === 'chmod' ? 'permissions' : 'ownership'} (${kind})`);
  };
}

function isWorldWritable(mode: string): boolean {
  if (/^[0-7]{3,4}$/.test(mode)) return (parseInt(mode[mode.length - 1]!, 8) & 2) !== 0;
  return mode.split(',').some((c) => {
    const m = /^([ugoa]*)[+=]([rwxXst]*)$/.exec(c);
    return !!m && m[2]!.includes('w') && (m[1] === '' || /[oa]/.test(m[1]!));
  });
}

function isSetId(mode: string): boolean {
  if (/^[0-7]{4,5}$/.test(mode)) return (parseInt(mode[mode.length - 4]!, 8) & 6) !== 0;
  return mode.split(',').some((c) => /^[ugoa]*[+=][rwxXt]*s/.test(c));
}

const mv: Rule = (v, ctx) => {
  const targetDir = optValues(v.args, 't', 'target-directory');
  const pos = positionals(v.args, 'tS', ['target-directory', 'suffix']);
  const dest = targetDir[0] ?? pos[pos.length - 1]?.text;
  const sources = targetDir.length ? pos : pos.slice(0, -1);
  for (const s of sources) {
    if (isCriticalPath(s.text)) ctx.add('blocked', `moves ${normPath(s.text)} away (breaks the system or home)`);
    else if (isSystemPath(s.text) || isStartupFile(s.text)) ctx.add('dangerous', `moves system file ${normPath(s.text)}`);
    if (isHistoryFile(s.text)) ctx.add('dangerous', `moves shell history ${s.text}`);
  }
  if (dest !== undefined) {
    if (normPath(dest) === '/dev/null') ctx.add('dangerous', `moves ${sources.map((s) => s.text).join(' ')} into /dev/null (destroys it)`);
    else {
      const f = writeFinding(dest, 'moves files onto');
      if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
    }
  }
  if (sources.some((s) => s.glob)) ctx.add('caution', 'moves files matched by a glob');
  ctx.add('caution', `moves/renames files (mv ${pos.map((p) => p.text).join(' ')})`);
};

const cp: Rule = (v, ctx) => {
  const targetDir = optValues(v.args, 't', 'target-directory');
  const pos = positionals(v.args, 'tS', ['target-directory', 'suffix']);
  const dest = targetDir[0] ?? (pos.length > 1 ? pos[pos.length - 1]!.text : undefined);
  if (dest !== undefined) {
    const f = writeFinding(dest, `${v.name} writes to`);
    if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
  }
  if (v.name === 'rsync') {
    const del = v.args.some((a) => /^--(?:delete|del|remove-source-files)/.test(a.text));
    if (del && dest && isCriticalPath(dest)) ctx.add('blocked', `rsync --delete onto ${normPath(dest)} (wipes it)`);
    else if (del) ctx.add('dangerous', 'rsync --delete removes files at the destination');
    if (pos.some((p) => /^[^/]*:/.test(p.text))) ctx.add('caution', 'copies over the network (rsync)');
  }
  ctx.add('caution', `copies files (${v.name})`);
};

const ln: Rule = (v, ctx) => {
  const pos = positionals(v.args, 'tS', ['target-directory', 'suffix']);
  const linkName = pos.length > 1 ? pos[pos.length - 1]!.text : undefined;
  if (linkName !== undefined) {
    if (isHistoryFile(linkName)) ctx.add('dangerous', `replaces shell history ${linkName} with a link (disables history)`);
    else {
      const f = writeFinding(linkName, 'creates a link at');
      if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
    }
  }
  ctx.add('caution', 'creates links (ln)');
};

const tee: Rule = (v, ctx) => {
  const targets = positionals(v.args, '', ['output-error']);
  for (const t of targets) addWrite(ctx, t, hasShort(v.args, 'a') || hasLong(v.args, 'append') ? 'tee appends to' : 'tee writes to');
  return { text: v.stdin?.text, download: v.stdin?.download, decoded: v.stdin?.decoded };
};

const dd: Rule = (v, ctx) => {
  let wrote = false;
  for (const a of v.args) {
    const m = /^of=(.*)$/.exec(a.text);
    if (m) {
      wrote = true;
      const f = writeFinding(m[1]!, 'dd writes to', a.dynamic);
      if (f) ctx.add(f.tier, f.reason);
    }
  }
  ctx.add('caution', wrote ? 'raw copy with dd' : 'raw read with dd');
};

const mkfs: Rule = (v, ctx) => {
  const dev = positionals(v.args, 'tLbcCEgGiIjJlmMNoOrTUFn', ['type']).map((p) => p.text);
  ctx.add('blocked', `formats a filesystem (${v.name}${dev.length ? ` ${dev.join(' ')}` : ''}) — destroys its data`);
};

const mkswap: Rule = (v, ctx) => {
  const dev = positionals(v.args, 'LpU', ['label', 'pagesize', 'uuid']);
  if (dev.some((d) => isBlockDevice(d.text))) ctx.add('blocked', `mkswap on ${dev.map((d) => d.text).join(' ')} (destroys the partition)`);
  else ctx.add('caution', 'creates swap space');
};

const wipefs: Rule = (v, ctx) => {
  const erase = hasShort(v.args, 'ao', 't') || hasLong(v.args, 'all', 'offset');
  if (erase && !hasShort(v.args, 'n') && !hasLong(v.args, 'no-act')) ctx.add('blocked', 'wipefs erases filesystem signatures');
  else ctx.add('caution', 'inspects filesystem signatures (wipefs)');
};

const fdiskLike: Rule = (v, ctx) => {
  const a = v.args;
  const devs = a.filter((d) => d.text.startsWith('/dev/') || isBlockDevice(d.text));
  const readOnly =
    v.name === 'sfdisk'
      ? hasShort(a, 'ldsJVFgT', 'NOXYbcCHSuLtw') ||
        hasLong(a, 'list', 'dump', 'json', 'show-size', 'verify', 'list-free', 'list-types', 'show-geometry', 'show-pt-geometry')
      : hasShort(a, 'l', 'bcCHSuLtwWx') || hasLong(a, 'list');
  if (readOnly) {
    ctx.add('caution', `lists partitions (${v.name})`);
    return;
  }
  if (devs.length) ctx.add('blocked', `rewrites the partition table (${v.name} ${devs.map((d) => d.text).join(' ')})`);
  else ctx.add('dangerous', `partition editor (${v.name})`);
};

const parted: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text.toLowerCase());
  if (words.some((w) => /^(?:mklabel|mktable|mkpart|mkpartfs|rm|resizepart|resize|rescue|mkfs|move|cp)$/.test(w))) {
    ctx.add('blocked', `rewrites the partition table (parted ${words.join(' ')})`);
  } else if (words.some((w) => w === 'print' || w === '-l' || w === '--list' || w === 'unit')) {
    ctx.add('caution', 'lists partitions (parted)');
  } else {
    ctx.add('dangerous', 'interactive partition editor (parted)');
  }
};

const sgdisk: Rule = (v, ctx) => {
  const readOnly = v.args.every((a) => /^(?:-p|--print|-i.*|--info.*|-v|--verify|-L|--list-types|-O|--print-mbr|\/dev\/.*)$/.test(a.text));
  if (readOnly) ctx.add('caution', `lists partitions (${v.name})`);
  else ctx.add('blocked', `rewrites the partition table (${v.name})`);
};

const blkdiscard: Rule = (v, ctx) => {
  ctx.add(
    'blocked',
    `discards every block on ${
      positionals(v.args, 'olp', ['offset', 'length', 'step'])
        .map((d) => d.text)
        .join(' ') || 'a device'
    } (destroys the disk)`,
  );
};

const power =
  (what: string): Rule =>
  (v, ctx) => {
    if (v.name === 'shutdown' && (hasShort(v.args, 'ck') || hasLong(v.args, 'show'))) {
      ctx.add('caution', 'manages a scheduled shutdown');
      return;
    }
    if (hasLong(v.args, 'help', 'version')) return;
    ctx.add('blocked', `${what} the machine (${[v.name, ...v.args.map((a) => a.text)].join(' ')})`);
  };

const initRule: Rule = (v, ctx) => {
  const level = positionals(v.args)[0]?.text ?? '';
  if (/^[0156sS]$/.test(level))
    ctx.add('blocked', `${v.name} ${level} changes runlevel (${level === '0' ? 'halts' : level === '6' ? 'reboots' : 'drops to single-user'})`);
  else ctx.add('caution', `${v.name} ${level}`.trim());
};

const systemctl: Rule = (v, ctx) => {
  const { sub, rest } = subcommand(v.args, 'HMtpsno', [
    'host',
    'machine',
    'type',
    'property',
    'signal',
    'lines',
    'output',
    'root',
    'state',
    'kill-whom',
    'job-mode',
    'when',
    'what',
    'message',
    'boot-loader-entry',
    'boot-loader-menu',
    'reboot-argument',
    'timestamp',
    'image',
    'drop-in',
  ]);
  const units = positionals(rest).map((u) => u.text);
  if (/^(?:poweroff|reboot|halt|kexec|emergency|rescue|soft-reboot|default)$/.test(sub)) {
    ctx.add('blocked', `systemctl ${sub} (takes the machine down)`);
    return;
  }
  if (
    /^(?:isolate|start|restart)$/.test(sub) &&
    units.some((u) => /^(?:rescue|emergency|poweroff|reboot|halt|kexec|runlevel[016])(?:\.target)?$/.test(u) && (sub === 'isolate' || u.endsWith('.target')))
  ) {
    ctx.add('blocked', `systemctl ${sub} ${units.join(' ')} (takes the machine down)`);
    return;
  }
  if (/^(?:suspend|hibernate|hybrid-sleep|suspend-then-hibernate)$/.test(sub)) {
    ctx.add('dangerous', `systemctl ${sub} (suspends the machine)`);
    return;
  }
  if (sub === '' || /^(?:status|show|cat|list-\w+|is-\w+|help|get-default|show-environment|--version|version)$/.test(sub)) return;
  if (/^(?:stop|disable|mask|kill|restart|try-restart|reload-or-restart|isolate)$/.test(sub) && units.some((u) => CRITICAL_SERVICES.test(u))) {
    ctx.add('dangerous', `systemctl ${sub} ${units.join(' ')} (can cut off access to the machine or stop logging)`);
  }
  ctx.add('caution', `changes services (systemctl ${sub}${units.length ? ` ${units.join(' ')}` : ''})`);
};

const history: Rule = (v, ctx) => {
  if (hasShort(v.args, 'cd')) ctx.add('dangerous', `clears shell history (history ${v.args.map((a) => a.text).join(' ')})`);
  else if (hasShort(v.args, 'wanrsp')) ctx.add('caution', 'rewrites the history file');
};

const iptables: Rule = (v, ctx) => {
  const a = v.args;
  if (hasShort(a, 'FXZ', 'tjgiopsdmAIDRNPEL') || hasLong(a, 'flush', 'delete-chain', 'zero'))
    ctx.add('dangerous', `flushes firewall rules (${v.name} ${a.map((x) => x.text).join(' ')})`);
  else if (hasShort(a, 'P', 't')) ctx.add('dangerous', `changes default firewall policy (${v.name})`);
  else if (hasShort(a, 'LS', 't') || hasLong(a, 'list', 'list-rules')) ctx.add('caution', 'lists firewall rules');
  else ctx.add('caution', `changes firewall rules (${v.name})`);
};

const nft: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text.toLowerCase());
  if (words.includes('flush') || (words.includes('delete') && words.includes('table'))) ctx.add('dangerous', `flushes firewall rules (nft ${words.join(' ')})`);
  else if (words[0] === 'list' || words.includes('list')) ctx.add('caution', 'lists firewall rules');
  else ctx.add('caution', 'changes firewall rules (nft)');
};

const ufw: Rule = (v, ctx) => {
  const sub = positionals(v.args)[0]?.text.toLowerCase() ?? '';
  if (sub === 'disable' || sub === 'reset') ctx.add('dangerous', `ufw ${sub} turns off the firewall`);
  else if (sub === 'status' || sub === 'version' || sub === 'app') ctx.add('caution', 'reads firewall status');
  else ctx.add('caution', `changes firewall rules (ufw ${sub})`);
};

const setenforce: Rule = (v, ctx) => {
  const m = positionals(v.args)[0]?.text.toLowerCase();
  if (m === '0' || m === 'permissive') ctx.add('dangerous', 'setenforce 0 disables SELinux enforcement');
  else ctx.add('caution', 'changes SELinux mode');
};

const accountsDangerous =
  (what: string): Rule =>
  (v, ctx) => {
    if (v.name === 'passwd' && hasShort(v.args, 'S') && !hasShort(v.args, 'dlued')) {
      ctx.add('caution', 'reads password status');
      return;
    }
    ctx.add('dangerous', `${what} (${[v.name, ...v.args.map((a) => a.text)].join(' ')})`);
  };

const git: Rule = (v, ctx) => {
  const a = v.args;
  const i = gitGlobals(a, ctx);
  const sub = a[i]?.text ?? '';
  const rest = a.slice(i + 1);
  const words = rest.map((x) => x.text);
  const pos = positionals(rest);
  const g = `git ${sub}`;
  gitSubcommandHelpers(sub, rest, ctx);
  switch (sub) {
    case '':
    case 'status':
    case 'log':
    case 'diff':
    case 'show':
    case 'blame':
    case 'annotate':
    case 'shortlog':
    case 'describe':
    case 'rev-parse':
    case 'rev-list':
    case 'ls-files':
    case 'ls-tree':
    case 'cat-file':
    case 'grep':
    case 'whatchanged':
    case 'name-rev':
    case 'merge-base':
    case 'count-objects':
    case 'check-ignore':
    case 'check-attr':
    case 'var':
    case 'help':
    case 'version':
    case 'for-each-ref':
    case 'show-ref':
    case 'show-branch':
    case 'cherry':
    case 'diff-tree':
    case 'diff-files':
    case 'diff-index':
    case 'verify-commit':
    case 'verify-tag':
    case 'range-diff':
    case 'fsck':
    case '--version':
    case '--help':
      return;
    case 'branch': {
      if (hasShort(rest, 'D') || (hasShort(rest, 'd') && (hasShort(rest, 'f') || hasLong(rest, 'force'))))
        ctx.add('dangerous', `${g} -D force-deletes a branch`);
      else if (hasShort(rest, 'dmMcCfu') || hasLong(rest, 'delete', 'move', 'copy', 'force', 'set-upstream-to', 'unset-upstream', 'edit-description'))
        ctx.add('caution', `${g} changes branches`);
      else if (
        positionals(rest, '', ['sort', 'format', 'contains', 'no-contains', 'merged', 'no-merged', 'points-at', 'color', 'column']).length &&
        !hasShort(rest, 'alr') &&
        !hasLong(rest, 'list')
      )
        ctx.add('caution', `${g} creates a branch`);
      return;
    }
    case 'remote': {
      const s = pos[0]?.text ?? '';
      if (s === '' || s === 'show' || s === 'get-url') return;
      ctx.add('caution', `${g} ${s} changes remotes`);
      return;
    }
    case 'tag': {
      if (hasShort(rest, 'd') || hasLong(rest, 'delete')) ctx.add('caution', `${g} -d deletes tags`);
      else if (pos.length && !hasShort(rest, 'l') && !hasLong(rest, 'list')) ctx.add('caution', `${g} creates a tag`);
      return;
    }
    case 'config': {
      if (hasLong(rest, 'get', 'get-all', 'get-regexp', 'get-urlmatch', 'list', 'show-origin', 'show-scope') || hasShort(rest, 'l')) return;
      if (pos.length <= 1 && !hasLong(rest, 'unset', 'unset-all', 'add', 'replace-all', 'edit', 'rename-section', 'remove-section') && !hasShort(rest, 'e'))
        return;
      ctx.add('caution', `${g} changes git configuration`);
      return;
    }
    case 'stash': {
      const s = pos[0]?.text ?? 'push';
      if (s === 'list' || s === 'show') return;
      if (s === 'clear') ctx.add('dangerous', 'git stash clear deletes all stashes');
      else ctx.add('caution', `git stash ${s}`);
      return;
    }
    case 'reflog': {
      const s = pos[0]?.text ?? 'show';
      if (s === 'expire' || s === 'delete') ctx.add('dangerous', `git reflog ${s} destroys recovery points`);
      return;
    }
    case 'worktree':
    case 'submodule': {
      const s = pos[0]?.text ?? '';
      if (s === 'list' || s === 'status' || (sub === 'submodule' && s === '')) return;
      ctx.add('caution', `${g} ${s}`);
      return;
    }
    case 'push': {
      const force =
        hasShort(rest, 'f', 'o') ||
        hasLong(rest, 'force', 'force-with-lease', 'force-if-includes', 'mirror') ||
        pos.slice(1).some((p) => p.text.startsWith('+'));
      const del = hasShort(rest, 'd', 'o') || hasLong(rest, 'delete', 'prune') || pos.slice(1).some((p) => p.text.startsWith(':'));
      if (force) ctx.add('dangerous', 'git push --force rewrites remote history');
      if (del) ctx.add('dangerous', 'git push deletes remote branches');
      ctx.add('caution', 'pushes to a remote (git push)');
      return;
    }
    case 'reset': {
      if (hasLong(rest, 'hard')) ctx.add('dangerous', 'git reset --hard discards uncommitted changes');
      else ctx.add('caution', `${g} moves HEAD`);
      return;
    }
    case 'clean': {
      const dry = hasShort(rest, 'n') || hasLong(rest, 'dry-run');
      if (!dry && (hasShort(rest, 'f', 'e') || hasLong(rest, 'force'))) {
        ctx.add('dangerous', `git clean ${words.join(' ')} deletes untracked${hasShort(rest, 'x', 'e') ? ' and ignored' : ''} files`);
      } else ctx.add('caution', 'git clean (dry run / interactive)');
      return;
    }
    case 'checkout':
    case 'restore':
    case 'switch': {
      const discardAll = words.some((w) => w === '.' || w === ':/' || w === '*') || hasShort(rest, 'f', 'b') || hasLong(rest, 'force', 'discard-changes');
      if (discardAll && sub !== 'switch') ctx.add('dangerous', `${g} ${words.join(' ')} discards local changes`);
      else if (hasLong(rest, 'force', 'discard-changes') || hasShort(rest, 'f', 'b')) ctx.add('dangerous', `${g} --force discards local changes`);
      ctx.add('caution', `${g} changes the working tree`);
      return;
    }
    case 'filter-branch':
    case 'filter-repo':
      ctx.add('dangerous', `${g} rewrites repository history`);
      return;
    case 'update-ref':
      if (hasShort(rest, 'd')) ctx.add('dangerous', 'git update-ref -d deletes a ref');
      ctx.add('caution', g);
      return;
    case 'gc':
    case 'prune':
      ctx.add(
        rest.some((x) => /^--prune=(?:now|all)$/.test(x.text)) || sub === 'prune' ? 'dangerous' : 'caution',
        `${g} ${words.join(' ')} removes unreachable objects`.trim(),
      );
      return;
    case 'rm':
      if (hasShort(rest, 'r') && !hasLong(rest, 'cached') && !hasShort(rest, 'n')) ctx.add('dangerous', 'git rm -r deletes files recursively');
      ctx.add('caution', 'git rm deletes files');
      return;
    default:
      ctx.add('caution', `${g} changes the repository or contacts a remote`);
  }
};

const DOCKER_RO = new Set([
  'ps',
  'images',
  'logs',
  'inspect',
  'version',
  'info',
  'top',
  'port',
  'history',
  'diff',
  'search',
  'stats',
  'events',
  'ls',
  'help',
  '--version',
]);

const docker: Rule = (v, ctx) => {
  const { sub, rest } = subcommand(v.args, 'Hcl', ['host', 'context', 'config', 'log-level', 'tlscacert', 'tlscert', 'tlskey']);
  let s = sub;
  let r = rest;
  if (/^(?:container|image|volume|network|system|builder|buildx|compose|plugin|node|service|stack|secret|config)$/.test(s)) {
    const inner = subcommand(rest, 'fp', ['file', 'project-name', 'profile', 'env-file', 'project-directory']);
    s = `${s} ${inner.sub}`.trim();
    r = inner.rest;
  }
  const base = s.split(' ').pop() ?? '';
  const force = hasShort(r, 'f') || hasLong(r, 'force');
  if (DOCKER_RO.has(s) || (DOCKER_RO.has(base) && /^(?:container|image|volume|network|compose) /.test(s)) || s === 'system df' || s === 'system info') return;
  if (/(?:^| )prune$/.test(s)) {
    if (s === 'system prune' || s === 'volume prune' || s === 'container prune' || hasShort(r, 'a') || hasLong(r, 'all', 'volumes'))
      ctx.add('dangerous', `${v.name} ${s} deletes containers/images/volumes`);
    else ctx.add('caution', `${v.name} ${s}`);
    return;
  }
  if (/^(?:rm|rmi|container rm|image rm|volume rm|network rm|kill|container kill)$/.test(s)) {
    if (s.startsWith('volume')) ctx.add('dangerous', `${v.name} volume rm deletes data volumes`);
    else if (force) ctx.add('dangerous', `${v.name} ${s} -f force-removes`);
    ctx.add('caution', `${v.name} ${s}`);
    return;
  }
  if (/^compose down$/.test(s) || (v.name === 'docker-compose' && sub === 'down')) {
    if (hasShort(r, 'v') || hasLong(r, 'volumes') || hasLong(r, 'rmi')) ctx.add('dangerous', `${v.name} compose down -v deletes volumes`);
    ctx.add('caution', `${v.name} ${s}`);
    return;
  }
  if (/^(?:run|create|container run|container create)$/.test(s)) {
    const words = r.map((x) => x.text);
    if (hasLong(r, 'privileged') || words.some((w) => /^--(?:pid|ipc|userns|uts)=?host$/.test(w)) || optValues(r, null, 'pid').includes('host')) {
      ctx.add('dangerous', `${v.name} run with host privileges (--privileged / host namespaces)`);
    }
    const vols = [...optValues(r, 'v', 'volume'), ...optValues(r, null, 'mount')];
    if (vols.some((m) => /^\/(?::|$)|(?:src|source)=\/(?:,|$)|^\/var\/run\/docker\.sock|^\/(?:etc|root|boot|usr|var)(?::|$)/.test(m))) {
      ctx.add('dangerous', `${v.name} run mounts the host filesystem or docker socket (${vols.join(' ')})`);
    }
    if (optValues(r, null, 'cap-add').some((c) => /SYS_ADMIN|ALL/i.test(c))) ctx.add('dangerous', `${v.name} run adds powerful capabilities`);
    ctx.add('caution', `runs a container (${v.name} ${s})`);
    return;
  }
  if (s === 'exec' || s === 'container exec') {
    const pos = positionals(r, 'euwd', ['env', 'user', 'workdir', 'env-file', 'detach-keys']);
    if (pos.length > 1) ctx.runArgv(pos.slice(1), `${v.name} exec`, { privileged: hasLong(r, 'privileged') });
    ctx.add('caution', `runs a command in a container (${v.name} exec)`);
    return;
  }
  ctx.add('caution', `${v.name} ${s}`.trim());
};

const kubectl: Rule = (v, ctx) => {
  const { sub, rest } = subcommand(v.args, 'ns', [
    'namespace',
    'context',
    'cluster',
    'kubeconfig',
    'server',
    'user',
    'token',
    'as',
    'as-group',
    'request-timeout',
  ]);
  if (/^(?:get|describe|logs|explain|version|api-resources|api-versions|cluster-info|top|auth|diff|events|config)$/.test(sub)) {
    if (sub === 'config' && !/^(?:view|get-contexts|current-context|get-clusters|get-users)$/.test(positionals(rest)[0]?.text ?? 'view'))
      ctx.add('caution', `${v.name} config changes kubeconfig`);
    return;
  }
  if (sub === 'delete') {
    ctx.add(
      'dangerous',
      `${v.name} delete ${positionals(rest, 'flnL', ['filename', 'selector', 'namespace', 'output', 'grace-period', 'timeout'])
        .map((p) => p.text)
        .join(' ')}`.trim(),
    );
    return;
  }
  if (sub === 'drain' || (sub === 'replace' && hasLong(rest, 'force')) || (sub === 'apply' && hasLong(rest, 'prune'))) {
    ctx.add('dangerous', `${v.name} ${sub} ${rest.map((x) => x.text).join(' ')}`.trim());
    return;
  }
  if (sub === 'scale' && rest.some((x) => /^--replicas=0$/.test(x.text))) ctx.add('dangerous', `${v.name} scale --replicas=0 stops a workload`);
  if (sub === 'exec') {
    const dd = rest.findIndex((x) => x.text === '--');
    if (dd >= 0 && dd + 1 < rest.length) ctx.runArgv(rest.slice(dd + 1), `${v.name} exec`);
  }
  ctx.add('caution', `${v.name} ${sub}`.trim());
};

const helm: Rule = (v, ctx) => {
  const sub = positionals(v.args, 'n', ['namespace', 'kube-context', 'kubeconfig'])[0]?.text ?? '';
  if (/^(?:uninstall|delete|del|un)$/.test(sub)) ctx.add('dangerous', `helm ${sub} removes a release`);
  else ctx.add('caution', `helm ${sub}`.trim());
};

const iac: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text);
  const sub = positionals(v.args, 'C', ['chdir', 'cwd', 'stack', 'profile', 'app'])[0]?.text ?? '';
  if (
    sub === 'destroy' ||
    (sub === 'apply' && words.some((w) => w === '-destroy' || w === '--destroy')) ||
    (sub === 'remove' && /^(?:serverless|sls)$/.test(v.name))
  ) {
    ctx.add('dangerous', `${v.name} ${sub} tears down infrastructure`);
  } else if ((sub === 'state' && words.includes('rm')) || (sub === 'workspace' && words.includes('delete')) || (sub === 'stack' && words.includes('rm'))) {
    ctx.add('dangerous', `${v.name} ${words.join(' ')} deletes state`);
  } else ctx.add('caution', `${v.name} ${sub}`.trim());
};

const cloud: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text);
  const destructive = words.find((w) =>
    /^(?:delete|destroy|terminate|remove|rb|purge|deregister|wipe|reset|apps:destroy|pg:reset)(?:-[\w-]+)?$|^(?:delete|terminate|remove|purge)-/.test(w),
  );
  if (destructive) ctx.add('dangerous', `${v.name} ${words.join(' ')} deletes cloud resources`);
  else if (v.name === 'aws' && words[0] === 's3' && words[1] === 'rm')
    ctx.add(hasLong(v.args, 'recursive') ? 'dangerous' : 'caution', `aws s3 rm ${hasLong(v.args, 'recursive') ? '--recursive ' : ''}deletes objects`);
  else if (v.name === 'gh' && words[0] === 'repo' && words[1] === 'delete') ctx.add('dangerous', 'gh repo delete');
  ctx.add('caution', `runs a cloud CLI (${v.name} ${words.slice(0, 2).join(' ')})`.trim());
};

const ESSENTIAL_PKGS =
  /^(?:libc6|libc-bin|systemd|systemd-sysv|sudo|bash|coreutils|dpkg|apt|rpm|yum|dnf|glibc|openssh-server|linux-image[\w.-]*|kernel[\w.-]*|grub[\w.-]*|python3|init|login|passwd|util-linux|base-files)$/;

const pkgManager: Rule = (v, ctx) => {
  const words = positionals(v.args, '', []).map((a) => a.text);
  const sub = words[0] ?? '';
  // A package file fetched earlier in the line: installing it runs its maintainer/setup scripts.
  for (const w of words) {
    if (!/\/|\.(?:deb|rpm|whl|tar\.gz|tgz|zip|apk|pkg|gem|snap|flatpak|nupkg|egg|xpi|vsix|crate)$/.test(w)) continue;
    const f = ctx.fetched(w);
    if (f) ctx.add('dangerous', `installs a ${f === 'download' ? 'downloaded' : 'decoded'} package (${v.name} ${w}); its install scripts run`);
  }
  const ro: Record<string, RegExp> = {
    apt: /^(?:list|show|search|policy|depends|rdepends|changelog|showsrc|madison)$/,
    'apt-get': /^(?:check|changelog|source-never)$/,
    'apt-cache': /.*/,
    dpkg: /^$/,
    brew: /^(?:list|ls|info|search|outdated|deps|uses|leaves|config|doctor|--version|desc|home|shellenv)$/,
    npm: /^(?:ls|list|ll|la|view|v|info|show|outdated|search|help|root|prefix|bin|whoami|ping|explain|why|fund|doctor|docs)$/,
    pnpm: /^(?:ls|list|why|outdated|root|bin)$/,
    yarn: /^(?:list|info|why|outdated|versions)$/,
    pip: /^(?:list|show|freeze|check|search|help|index|inspect)$/,
    pip3: /^(?:list|show|freeze|check|search|help|index|inspect)$/,
    gem: /^(?:list|search|info|query|specification|environment|contents|which)$/,
    cargo: /^(?:tree|search|metadata|--version|version|verify-project|locate-project|pkgid|read-manifest)$/,
    rpm: /^$/,
    snap: /^(?:list|info|find|version|services|changes)$/,
    flatpak: /^(?:list|info|search|remotes|history)$/,
    conda: /^(?:list|info|search|env)$/,
  };
  if (v.name === 'dpkg' && hasShort(v.args, 'lLsSp') && !hasShort(v.args, 'iPrRa')) return;
  if (v.name === 'rpm' && hasShort(v.args, 'qV') && !hasShort(v.args, 'iUFe')) return;
  if (v.name === 'dpkg-query' || v.name === 'apt-cache') return;
  if (hasLong(v.args, 'version') || (words.length === 0 && hasShort(v.args, 'v', ''))) return;
  const re = ro[v.name];
  if (re && re.test(sub) && sub !== '') return;
  if (/^(?:run|run-script|test|t|start|exec|x|dlx|create|init|build|check|bench|clippy|fmt|doc|serve|dev)$/.test(sub)) {
    ctx.add('caution', `runs project code (${v.name} ${sub})`);
    return;
  }
  if (
    /^(?:remove|purge|autoremove|erase|uninstall|rm|un|-R|-Rns)$/.test(sub) ||
    (hasShort(v.args, 'R') && v.name === 'pacman') ||
    (hasShort(v.args, 'rP') && v.name === 'dpkg')
  ) {
    const pkgs = words.slice(1);
    if (pkgs.some((p) => ESSENTIAL_PKGS.test(p)) || v.args.some((a) => ESSENTIAL_PKGS.test(a.text)))
      ctx.add('dangerous', `${v.name} removes an essential system package (${pkgs.join(' ')})`);
    ctx.add('caution', `removes packages (${v.name} ${words.join(' ')})`);
    return;
  }
  ctx.add('caution', `installs or changes packages (${v.name}${sub ? ` ${sub}` : ''})`);
};

// -- shells, eval, source, interpreters ---------------------------------------------------------

/** Code arriving on stdin. Unknown code from a pipe or file is marked `runsInput` (the reverse-shell check). */
function stdinFeedsCode(v: CommandView, ctx: RuleContext, what: string, scan: (text: string) => void): Produced {
  const s = v.stdin;
  if (!s) {
    ctx.add('caution', `starts an interactive ${what}`);
    return {};
  }
  if (s.download) ctx.add('dangerous', `pipes a download into ${what === 'shell' ? 'a shell' : what}`);
  if (s.decoded) ctx.add('dangerous', `pipes decoded/obfuscated data into ${what === 'shell' ? 'a shell' : what}`);
  if (s.text !== undefined) {
    ctx.add('caution', `runs code fed on stdin to ${what === 'shell' ? 'a shell' : what}`);
    scan(s.text);
    return {};
  }
  if (s.source === 'file') {
    ctx.add('caution', `runs script ${s.path ?? ''} via stdin`.trim());
  } else if (!s.download && !s.decoded) {
    ctx.add('caution', `pipes data into ${what === 'shell' ? 'a shell' : what}`);
  }
  return { runsInput: true };
}

function scriptFromArg(a: Arg, v: CommandView, ctx: RuleContext, what: string, scan?: (text: string) => void): void {
  const fetched = ctx.fetched(a.text);
  if (fetched) ctx.add('dangerous', `runs a ${fetched === 'download' ? 'downloaded' : 'decoded'} script (${v.name} ${a.text})`);
  const written = a.dynamic ? undefined : ctx.fileContent(a.text);
  if (written !== undefined) {
    ctx.add('caution', `runs ${what} script ${a.text} written by this command`);
    if (scan) scan(written);
    else ctx.classifyCode(written, `${v.name} ${a.text}`);
    return;
  }
  if (a.substDownload) ctx.add('dangerous', `runs a downloaded script (${v.name} ${a.text})`);
  else if (a.substDecoded) ctx.add('dangerous', `runs a decoded script (${v.name} ${a.text})`);
  else if (a.subst) ctx.add('caution', `runs a script produced by a substitution (${v.name} ${a.text})`);
  else ctx.add('caution', `runs ${what} script ${a.text}`);
}

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'yash', 'posh', 'rbash', 'oksh', 'loksh', 'pdksh']);

const shell: Rule = (v, ctx) => {
  const a = v.args;
  let code: Arg | undefined;
  let script: Arg | undefined;
  let interactive = false;
  let readsStdin = false;
  let i = 0;
  let wantCode = false;
  for (; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--' || t === '-') {
      if (t === '-') readsStdin = true;
      i++;
      break;
    }
    if (/^--(?:rcfile|init-file)$/.test(t) || /^[-+]O$/.test(t) || /^[-+]o$/.test(t)) {
      i++;
      continue;
    }
    if (t === '--version' || t === '--help') return;
    if (t.startsWith('--')) {
      if (t === '--command') wantCode = true;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(t)) {
      if (t.startsWith('-') && t.includes('c')) wantCode = true;
      if (t.startsWith('-') && t.includes('i')) interactive = true;
      if (t.startsWith('-') && t.includes('s')) readsStdin = true;
      if (t.startsWith('-') && t.includes('n') && !t.includes('c')) return; // syntax check only
      continue;
    }
    break;
  }
  const rest = a.slice(i);
  if (wantCode) code = rest[0];
  else if (!readsStdin) script = rest[0];
  const tcp = v.redirects.some((r) => r.net || /^\/dev\/(?:tcp|udp)\//.test(r.target));
  if (tcp) ctx.add('dangerous', `${v.name} wired to /dev/tcp (reverse shell)`);
  if (code) {
    ctx.add('caution', `runs code in a nested shell (${v.name} -c)`);
    if (code.substDownload) ctx.add('dangerous', `${v.name} -c runs downloaded code`);
    if (code.substDecoded) ctx.add('dangerous', `${v.name} -c runs decoded code`);
    if (code.substOnly) ctx.add('dangerous', `${v.name} -c runs the output of a command substitution as code`);
    else if (code.subst) ctx.add('caution', `${v.name} -c code includes command output`);
    if (code.dynamic && !code.subst) ctx.add('caution', `${v.name} -c runs code from a variable (${code.text})`);
    ctx.classifyCode(code.text, `${v.name} -c`);
    return;
  }
  if (script && !readsStdin && !['/dev/stdin', '/proc/self/fd/0', '/dev/fd/0'].includes(script.text)) {
    scriptFromArg(script, v, ctx, 'shell');
    return tcp ? { runsInput: true } : {};
  }
  if (interactive && !v.stdin) {
    ctx.add('caution', `starts an interactive shell (${v.name})`);
    return { runsInput: true };
  }
  return stdinFeedsCode(v, ctx, 'shell', (text) => ctx.classifyCode(text, `${v.name} stdin`));
};

const evalRule: Rule = (v, ctx) => {
  if (!v.args.length) return;
  if (v.args.some((x) => x.substDownload)) ctx.add('dangerous', 'eval runs downloaded code');
  if (v.args.some((x) => x.substDecoded)) ctx.add('dangerous', 'eval runs decoded code');
  if (v.args.some((x) => x.subst)) ctx.add('dangerous', 'eval of a command substitution (runs command output as code)');
  else if (v.args.some((x) => x.dynamic)) ctx.add('caution', 'eval of a variable (runs dynamic code)');
  if (v.args.some((x) => x.dynamic) && (v.stdin?.download || v.redirects.some((r) => r.net))) ctx.add('dangerous', 'eval runs lines read from the network');
  ctx.add('caution', 'eval runs a string as code');
  ctx.classifyCode(v.args.map((x) => x.text).join(' '), 'eval');
};

const source: Rule = (v, ctx) => {
  const f = v.args[0];
  if (!f) return;
  if (['/dev/stdin', '-', '/proc/self/fd/0', '/dev/fd/0'].includes(f.text)) {
    return stdinFeedsCode(v, ctx, 'shell', (text) => ctx.classifyCode(text, `${v.name} /dev/stdin`));
  }
  scriptFromArg(f, v, ctx, 'shell');
};

interface InterpSpec {
  lang: string;
  /** Flag letters that introduce inline code. */
  codeFlags: string;
  /** Long options that introduce inline code. */
  codeLong: string[];
  /** Flag letters that take an argument (attached or next). */
  argFlags: string;
  /** Letter that means in-place edit (perl/ruby -i). */
  inplace?: string;
}

const INTERP: Record<string, InterpSpec> = {
  python: { lang: 'python', codeFlags: 'c', codeLong: [], argFlags: 'mWXQ' },
  perl: { lang: 'perl', codeFlags: 'eE', codeLong: [], argFlags: 'MmIdDxlC0Fi', inplace: 'i' },
  ruby: { lang: 'ruby', codeFlags: 'e', codeLong: [], argFlags: 'rICEKFT0i', inplace: 'i' },
  node: { lang: 'node', codeFlags: 'ep', codeLong: ['eval', 'print'], argFlags: 'r', inplace: undefined },
  php: { lang: 'php', codeFlags: 'rRBE', codeLong: ['run'], argFlags: 'fcdzt' },
  lua: { lang: 'lua', codeFlags: 'e', codeLong: [], argFlags: 'l' },
  rscript: { lang: 'R', codeFlags: 'e', codeLong: [], argFlags: '' },
  osascript: { lang: 'AppleScript', codeFlags: 'e', codeLong: [], argFlags: 'ls' },
  deno: { lang: 'deno', codeFlags: '', codeLong: [], argFlags: '' },
  bun: { lang: 'bun', codeFlags: 'ep', codeLong: ['eval', 'print'], argFlags: 'r' },
  tclsh: { lang: 'tcl', codeFlags: '', codeLong: [], argFlags: '' },
};

export function interpreterKind(name: string): string | undefined {
  if (/^(?:python[\d.]*|pypy[\d.]*|ipython[\d.]*)$/.test(name)) return 'python';
  if (/^perl[\d.]*$/.test(name)) return 'perl';
  if (/^(?:ruby[\d.]*|jruby|irb)$/.test(name)) return 'ruby';
  if (name === 'node' || name === 'nodejs') return 'node';
  if (/^php[\d.]*$/.test(name)) return 'php';
  if (/^(?:lua[\d.]*|luajit)$/.test(name)) return 'lua';
  if (name === 'rscript') return 'rscript';
  if (name === 'osascript') return 'osascript';
  if (name === 'deno') return 'deno';
  if (name === 'bun') return 'bun';
  return undefined;
}

const interpreter: Rule = (v, ctx) => {
  const kind = interpreterKind(v.name)!;
  const spec = INTERP[kind]!;
  const a = v.args;
  const codes: string[] = [];
  let inplace = false;
  let script: Arg | undefined;
  let module: string | undefined;
  let readsStdin = false;
  if (kind === 'deno' || kind === 'bun') {
    const sub = a[0]?.text ?? '';
    if (sub === 'eval' && a[1]) {
      scanInlineCode(spec.lang, a[1].text, ctx);
      return;
    }
    if (!sub || sub === '--version' || sub === '-v' || sub === '-V') return;
    if (!sub.startsWith('-') || kind === 'deno') {
      ctx.add('caution', `runs ${v.name} ${sub}`);
      return;
    }
  }
  for (let i = 0; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--') {
      script = a[i + 1];
      break;
    }
    if (t === '-') {
      readsStdin = true;
      break;
    }
    if (t === '--version' || t === '-V' || (t === '-v' && a.length === 1) || t === '--help' || t === '-h') {
      if (a.length === 1) return;
      continue;
    }
    if (t.startsWith('--')) {
      const name = t.slice(2).split('=')[0]!;
      if (spec.codeLong.includes(name)) {
        if (t.includes('=')) codes.push(t.slice(t.indexOf('=') + 1));
        else if (a[i + 1]) codes.push(a[++i]!.text);
      } else if (name === 'require' || name === 'import' || name === 'loader') i++;
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      for (let j = 1; j < t.length; j++) {
        const c = t[j]!;
        if (spec.codeFlags.includes(c)) {
          const attached = t.slice(j + 1);
          if (attached) codes.push(attached);
          else if (a[i + 1]) codes.push(a[++i]!.text);
          break;
        }
        if (spec.inplace === c) {
          inplace = true;
          break;
        }
        if (kind === 'python' && c === 'm') {
          module = t.slice(j + 1) || a[++i]?.text;
          break;
        }
        if (spec.argFlags.includes(c)) {
          if (j === t.length - 1) i++;
          break;
        }
      }
      if (module) break;
      continue;
    }
    if (!codes.length) script = a[i];
    break;
  }
  if (inplace) ctx.add('caution', `${v.name} -i edits files in place`);
  if (codes.length) {
    for (const c of codes) scanInlineCode(spec.lang, c, ctx);
    return;
  }
  if (module) {
    ctx.add('caution', `runs ${spec.lang} module ${module}`);
    return;
  }
  if (script && !readsStdin && !['/dev/stdin', '-'].includes(script.text)) {
    scriptFromArg(script, v, ctx, spec.lang, (text) => scanInlineCode(spec.lang, text, ctx));
    return;
  }
  return stdinFeedsCode(v, ctx, spec.lang, (text) => scanInlineCode(spec.lang, text, ctx));
};

const awk: Rule = (v, ctx) => {
  const a = v.args;
  let program: string | undefined;
  let fromFile = false;
  for (let i = 0; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--') {
      program ??= a[i + 1]?.text;
      break;
    }
    if (t === '-f' || t.startsWith('--file')) {
      fromFile = true;
      if (t === '-f') i++;
      continue;
    }
    if (t === '-i' || t === '--include') {
      if (a[i + 1]?.text === 'inplace') ctx.add('caution', `${v.name} -i inplace edits files`);
      i++;
      continue;
    }
    if (/^-[Fv]$/.test(t) || t === '-e' || t === '--source') {
      if (t === '-e' || t === '--source') program = a[i + 1]?.text;
      i++;
      continue;
    }
    if (t.startsWith('-') && t.length > 1) continue;
    if (!fromFile && program === undefined) program = t;
    break;
  }
  if (fromFile) ctx.add('caution', `${v.name} runs a program file`);
  if (!program) return;
  const noStr = program.replace(/"(?:\\.|[^"\\])*"/g, '""');
  // string variables (cmd = "...") used as commands: system(cmd), cmd | getline, print | cmd
  const strVars = new Map<string, string>();
  for (const m of program.matchAll(/\b([A-Za-z_]\w*)\s*=\s*"((?:\\.|[^"\\])*)"/g)) strVars.set(m[1]!, m[2]!.replace(/\\(.)/g, '$1'));
  if (/\bsystem\s*\(/.test(program)) {
    ctx.add('caution', `${v.name} program runs shell commands (system())`);
    for (const m of program.matchAll(/\bsystem\s*\(\s*"((?:\\.|[^"\\])*)"/g)) ctx.classifyCode(m[1]!.replace(/\\(.)/g, '$1'), `${v.name} system()`);
  }
  for (const m of program.matchAll(/\bsystem\s*\(\s*([A-Za-z_]\w*)\s*\)|\b([A-Za-z_]\w*)\s*\|&?\s*getline|\|&?\s*([A-Za-z_]\w*)\b/g)) {
    const code = strVars.get(m[1] ?? m[2] ?? m[3] ?? '');
    if (code !== undefined) {
      ctx.add('caution', `${v.name} program runs a command held in a variable`);
      ctx.classifyCode(code, `${v.name} command variable`);
    }
  }
  for (const m of program.matchAll(/"((?:\\.|[^"\\])*)"\s*\|\s*getline/g)) {
    ctx.add('caution', `${v.name} program runs a command (| getline)`);
    ctx.classifyCode(m[1]!.replace(/\\(.)/g, '$1'), `${v.name} getline`);
  }
  if (/\|\s*getline/.test(noStr) && !/"\s*\|\s*getline/.test(program)) ctx.add('caution', `${v.name} program runs a command (| getline)`);
  // gawk's special files /inet/tcp|udp/... are sockets; a program that also runs commands is a reverse shell.
  if (/\/inet[46]?\/(?:tcp|udp)\//.test(program)) {
    ctx.add('caution', `${v.name} program opens a network connection (/inet/...)`);
    if (/\|&?\s*getline|\bsystem\s*\(|\|&/.test(noStr)) ctx.add('dangerous', `${v.name} program connects commands to a network socket (reverse shell)`);
  }
  if (/\bprintf?\b[^;{}]*?(?:>>?|\|)/.test(noStr)) {
    // the print's arguments may contain strings with > or | in them: skip whole strings
    const pipeTo = /\bprintf?\b(?:[^;{}"|>]|"(?:\\.|[^"\\])*")*?\|&?\s*"((?:\\.|[^"\\])*)"/.exec(program);
    if (pipeTo) {
      ctx.add('caution', `${v.name} program pipes output into a command`);
      if (/^\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b/.test(pipeTo[1]!)) ctx.add('dangerous', `${v.name} program pipes generated text into a shell`);
      ctx.classifyCode(pipeTo[1]!, `${v.name} print |`);
    } else {
      const target = /\bprintf?\b(?:[^;{}"|>]|"(?:\\.|[^"\\])*")*?>>?\s*"((?:\\.|[^"\\])*)"/.exec(program);
      if (target) {
        const f = writeFinding(target[1]!, `${v.name} writes to`);
        if (f) ctx.add(f.tier, f.reason);
      } else ctx.add('caution', `${v.name} program redirects output to a file`);
    }
  }
};

const sed: Rule = (v, ctx) => {
  const a = v.args;
  let inplace = false;
  const scripts: string[] = [];
  let fileScript = false;
  const rest: Arg[] = [];
  for (let i = 0; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--') {
      rest.push(...a.slice(i + 1));
      break;
    }
    if (t.startsWith('--')) {
      if (/^--in-place/.test(t)) inplace = true;
      else if (t === '--expression') scripts.push(a[++i]?.text ?? '');
      else if (t.startsWith('--expression=')) scripts.push(t.slice(13));
      else if (t === '--file' || t.startsWith('--file=')) {
        fileScript = true;
        if (t === '--file') i++;
      }
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      for (let j = 1; j < t.length; j++) {
        const c = t[j]!;
        if (c === 'i') {
          inplace = true;
          break;
        }
        if (c === 'e') {
          scripts.push(t.slice(j + 1) || a[++i]?.text || '');
          break;
        }
        if (c === 'f') {
          fileScript = true;
          if (j === t.length - 1) i++;
          break;
        }
        if (c === 'l') {
          if (j === t.length - 1) i++;
          break;
        }
      }
      continue;
    }
    rest.push(a[i]!);
  }
  if (!scripts.length && !fileScript && rest.length) scripts.push(rest.shift()!.text);
  if (fileScript) ctx.add('caution', 'sed runs a script file');
  for (const s of scripts) sedScript(s, v, ctx);
  if (inplace) {
    ctx.add('caution', `sed -i edits files in place (${rest.map((r) => r.text).join(' ')})`);
    for (const f of rest) {
      const w = writeFinding(f.text, 'sed -i edits');
      if (w && w.tier !== 'caution') ctx.add(w.tier, w.reason);
    }
  }
};

function sedScript(script: string, v: CommandView, ctx: RuleContext): void {
  // Walk the commands: addresses, then a command letter; s/// is parsed to find its flags.
  let i = 0;
  const s = script;
  const skipWs = (): void => {
    while (i < s.length && /[\s;{}!]/.test(s[i]!)) i++;
  };
  const skipAddr = (): void => {
    for (;;) {
      if (s[i] === '/' || (s[i] === '\\' && i + 1 < s.length)) {
        const d = s[i] === '/' ? '/' : s[++i]!;
        i++;
        while (i < s.length && s[i] !== d) i += s[i] === '\\' ? 2 : 1;
        i++;
        while (s[i] === 'I' || s[i] === 'M') i++;
      } else if (/[\d$]/.test(s[i] ?? '')) {
        while (/[\d$~+]/.test(s[i] ?? '')) i++;
      } else return;
      while (s[i] === ' ') i++;
      if (s[i] === ',') {
        i++;
        while (s[i] === ' ') i++;
        continue;
      }
      return;
    }
  };
  let guard = 0;
  while (i < s.length && guard++ < 1000) {
    skipWs();
    skipAddr();
    skipWs();
    const c = s[i];
    if (c === undefined) break;
    if (c === 's' || c === 'y') {
      const d = s[i + 1];
      if (d === undefined) break;
      i += 2;
      for (let k = 0; k < 2; k++) {
        while (i < s.length && s[i] !== d) i += s[i] === '\\' ? 2 : 1;
        i++;
      }
      let flags = '';
      while (i < s.length && /[gpiIeEmMw0-9]/.test(s[i]!)) {
        flags += s[i];
        if (s[i] === 'w') break;
        i++;
      }
      if (c === 's' && flags.includes('e')) ctx.add('dangerous', 'sed s///e executes the result as a shell command');
      if (c === 's' && flags.includes('w')) {
        i++;
        const m = /^\s*([^\n;]+)/.exec(s.slice(i));
        const f = writeFinding(m?.[1]?.trim() ?? '', 'sed w writes to');
        if (f) ctx.add(f.tier, f.reason);
        i += m?.[0].length ?? 0;
      }
      continue;
    }
    if (c === 'w' || c === 'W') {
      const m = /^[wW]\s*([^\n]+)/.exec(s.slice(i));
      const f = writeFinding(m?.[1]?.trim() ?? '', `sed ${c} writes to`);
      if (f) ctx.add(f.tier, f.reason);
      i += m?.[0].length ?? 1;
      continue;
    }
    if (c === 'e') {
      const m = /^e\s*([^\n;]*)/.exec(s.slice(i));
      ctx.add('dangerous', `sed e command executes shell commands${m?.[1] ? ` (${m[1]})` : ''}`);
      if (m?.[1]) ctx.classifyCode(m[1], 'sed e');
      i += m?.[0].length ?? 1;
      continue;
    }
    if (/[aicrRbtTqQ:l]/.test(c)) {
      // commands taking text/label/file to end of line
      const nl = s.indexOf('\n', i);
      if (/[aic]/.test(c) || c === ':' || /[rRbtT]/.test(c)) {
        i = nl < 0 ? s.length : nl + 1;
        continue;
      }
    }
    i++;
  }
  void v;
}

const find: Rule = (v, ctx) => {
  const a = v.args;
  let i = 0;
  while (i < a.length && /^-(?:[HLP]|D|O\d*)$/.test(a[i]!.text)) i += a[i]!.text === '-D' ? 2 : 1;
  const starts: string[] = [];
  while (i < a.length && !/^[-(!)]/.test(a[i]!.text)) starts.push(a[i++]!.text);
  if (!starts.length) starts.push('.');
  let del = false;
  let filtered = false;
  let exec = false;
  const critical = starts.some((s) => isCriticalPath(s));
  // What {} stands for in -exec: a file under the first starting point (so ~/.ssh/... stays a key file).
  const found = `${starts[0] === '.' ? '.' : starts[0]!.replace(/\/+$/, '')}/found-file`;
  for (; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '-delete') del = true;
    else if (
      /^-(?:i?name|i?path|i?wholename|i?regex|newer\w*|[acm](?:time|min)|size|user|group|uid|gid|nouser|nogroup|perm|empty|links|inum|samefile|i?lname|used|context)$/.test(
        t,
      )
    )
      filtered = true;
    else if (/^-(?:fprint0?|fprintf|fls)$/.test(t)) {
      const target = a[i + 1]?.text ?? '';
      const f = writeFinding(target, `find ${t} writes to`);
      if (f) ctx.add(f.tier, f.reason);
      i++;
    } else if (/^-(?:exec|execdir|ok|okdir)$/.test(t)) {
      exec = true;
      const sub: Arg[] = [];
      let j = i + 1;
      for (; j < a.length; j++) {
        const u = a[j]!.text;
        if (u === ';' || u === '+') break;
        sub.push(u.includes('{}') ? litArg(u.replace(/\{\}/g, found)) : a[j]!);
      }
      i = j;
      const subName = (sub[0]?.text ?? '').split('/').pop()?.toLowerCase() ?? '';
      if (/^(?:rm|shred|unlink|srm|wipe)$/.test(subName)) del = true;
      if (sub.length) ctx.runArgv(sub, `find ${t}`);
      ctx.add('caution', `find ${t} runs ${subName || 'a command'} on every match`);
      if (critical && !filtered && !/^(?:rm|shred|unlink|srm|wipe|ls|stat|file|echo|printf|cat|head|grep|wc|du|md5sum|sha\d*sum)$/.test(subName)) {
        ctx.add('dangerous', `find ${starts.join(' ')} ${t} ${subName} touches every file under ${starts.join(' ')}`);
      }
    }
  }
  if (del) {
    if (critical && !filtered) ctx.add('blocked', `find ${starts.join(' ')} deletes everything under ${starts.map((s) => normPath(s)).join(' ')}`);
    else ctx.add('dangerous', `find deletes files (${exec ? '-exec rm' : '-delete'})`);
  }
};

const fdRule: Rule = (v, ctx) => {
  const a = v.args;
  const i = a.findIndex((x) => /^(?:-x|--exec|-X|--exec-batch)$/.test(x.text));
  if (i >= 0) {
    const sub = a.slice(i + 1).filter((x) => x.text !== ';');
    if (sub.length)
      ctx.runArgv(
        sub.map((x) => (x.text.includes('{') ? litArg(x.text.replace(/\{[^}]*\}/g, './found-file')) : x)),
        `${v.name} --exec`,
      );
    ctx.add('caution', `${v.name} --exec runs a command on every match`);
  }
};

const xxd: Rule = (v, ctx) => {
  const reverse = hasShort(v.args, 'r') || hasLong(v.args, 'revert');
  const pos = positionals(v.args, 'cglosC', ['cols', 'len', 'seek', 'name', 'groupsize', 'offset']);
  if (pos.length > 1) addWrite(ctx, pos[1]!, 'xxd writes to');
  if (reverse) {
    const text = v.stdin?.text !== undefined ? tryHex(v.stdin.text) : undefined;
    return { decoded: true, text };
  }
  return undefined;
};

const base64: Rule = (v, ctx) => {
  const decode = hasShort(v.args, 'dD') || hasLong(v.args, 'decode');
  const out = optValues(v.args, 'o', 'output');
  for (const o of out) {
    const f = writeFinding(o, `${v.name} writes to`);
    if (f) ctx.add(f.tier, f.reason);
  }
  if (decode) {
    const text = v.stdin?.text !== undefined && v.name === 'base64' ? tryBase64(v.stdin.text) : undefined;
    return { decoded: true, text };
  }
  return undefined;
};

const decompress: Rule = (v, ctx) => {
  const toStdout =
    hasShort(v.args, 'cltk') || hasLong(v.args, 'stdout', 'to-stdout', 'list', 'test', 'keep') || /cat$/.test(v.name) || positionals(v.args).length === 0;
  if (!toStdout) ctx.add('caution', `${v.name} replaces files in place`);
  const decoding =
    /^(?:gunzip|zcat|bzcat|xzcat|unxz|bunzip2|unzstd|zstdcat|lzcat|unlzma|uncompress)$/.test(v.name) || hasShort(v.args, 'd') || hasLong(v.args, 'decompress');
  return decoding ? { decoded: true } : undefined;
};

const opensslRule: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text);
  const sub = words[0] ?? '';
  if ((sub === 'base64' || sub === 'enc' || /^-?(?:aes|des|chacha)/.test(sub)) && words.includes('-d')) {
    return { decoded: true, text: sub === 'base64' && v.stdin?.text !== undefined ? tryBase64(v.stdin.text) : undefined };
  }
  if (sub === 's_client' || sub === 's_server') {
    ctx.add('caution', `opens a network connection (openssl ${sub})`);
    return { net: true, download: true };
  }
  if (
    sub === 'version' ||
    sub === 'x509' ||
    (sub === 'req' && words.includes('-noout')) ||
    sub === 'list' ||
    sub === 'dgst' ||
    sub === 'rand' ||
    sub === 'base64' ||
    sub === 'ciphers'
  )
    return undefined;
  ctx.add('caution', `openssl ${sub}`.trim());
  return undefined;
};

const network =
  (what: string): Rule =>
  (v, ctx) => {
    const a = v.args;
    // Output files (-o, -O, --output-dir, ...) are in the option tables (./command-helpers.ts),
    // uploads of credential material in the data flow (./command-flow.ts).
    if (v.name === 'wget' && !a.some((x) => /^-[a-zA-Z]*O|^--output-document/.test(x.text)))
      ctx.add('caution', 'wget saves a download to the current directory');
    if (v.name === 'curl' && /^(?:DELETE|PUT|PATCH|POST)$/i.test(optValues(a, 'X', 'request')[0] ?? ''))
      ctx.add('caution', `${v.name} sends a ${optValues(a, 'X', 'request')[0]!.toUpperCase()} request`);
    ctx.add('caution', `network access (${what})`);
    return { download: true, net: true };
  };

const netcat: Rule = (v, ctx) => {
  if (hasShort(v.args, 'ec', 'pswiqxXTIOVtW') || hasLong(v.args, 'exec', 'sh-exec', 'lua-exec'))
    ctx.add('dangerous', `${v.name} -e attaches a shell to a socket (reverse/bind shell)`);
  if (hasShort(v.args, 'l', 'pswiqxXTIOVtWec') || hasLong(v.args, 'listen')) ctx.add('caution', `${v.name} listens for connections`);
  ctx.add('caution', `network access (${v.name})`);
  return { download: true, net: true };
};

const socat: Rule = (v, ctx) => {
  if (v.args.some((a) => /(?:^|[,!])(?:EXEC|SYSTEM):/i.test(a.text)))
    ctx.add('dangerous', 'socat EXEC/SYSTEM attaches a program to a socket (reverse/bind shell)');
  ctx.add('caution', 'network access (socat)');
  return { download: true, net: true };
};

/** Index of the first non-option argument (options end there, as for ssh/sudo-style commands). */
function firstPositional(args: Arg[], argShort: string): number {
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '--') return i + 1;
    if (t.startsWith('-') && t.length > 1) {
      for (let j = 1; j < t.length; j++) {
        if (argShort.includes(t[j]!)) {
          if (j === t.length - 1) i++;
          break;
        }
      }
      continue;
    }
    return i;
  }
  return args.length;
}

const ssh: Rule = (v, ctx) => {
  const k = firstPositional(v.args, 'bcDEeFIiJLlmOopQRSWw');
  const host = v.args[k]?.text ?? '';
  const remote = v.args.slice(k + 1);
  if (remote.length) ctx.classifyCode(remote.map((p) => p.text).join(' '), `${v.name} remote command`);
  ctx.add('caution', `network access (${v.name} ${host})`.trim());
  return { net: true, download: true };
};

const setRule: Rule = (v, ctx) => {
  const w = v.args.map((a) => a.text);
  for (let i = 0; i < w.length; i++) {
    if (w[i] === '+o' && w[i + 1] === 'history') ctx.add('dangerous', 'set +o history disables shell history');
  }
};

const unset: Rule = (v, ctx) => {
  for (const a of v.args) {
    if (/^(?:HISTFILE|HISTSIZE|HISTFILESIZE)$/.test(a.text)) ctx.add('dangerous', `unset ${a.text} disables shell history`);
  }
};

const echo: Rule = (v) => ({ text: echoText(v.args) });
const printf: Rule = (v) => ({ text: printfText(v.args) });

const cat: Rule = (v) => {
  const files = positionals(v.args);
  if (!files.length || files.every((f) => f.text === '-')) return { text: v.stdin?.text, download: v.stdin?.download, decoded: v.stdin?.decoded };
  return undefined;
};

const rev: Rule = (v) => ({
  decoded: true,
  text: v.stdin?.text
    ?.split('\n')
    .map((l) => [...l].reverse().join(''))
    .join('\n'),
});

const tr: Rule = () => ({ decoded: true });

const uniq: Rule = (v, ctx) => {
  const pos = positionals(v.args, 'fsw', ['skip-fields', 'skip-chars', 'check-chars', 'group', 'all-repeated']);
  if (pos.length > 1) addWrite(ctx, pos[1]!, 'uniq writes to');
};

const tree: Rule = (v, ctx) => {
  for (const o of optValues(v.args, 'o', null)) addWrite(ctx, litArg(o), 'tree -o writes to');
};

const dateRule: Rule = (v, ctx) => {
  if (hasShort(v.args, 's', 'dfr') || hasLong(v.args, 'set') || positionals(v.args, 'dfrI', ['date', 'file', 'reference']).some((p) => !p.text.startsWith('+')))
    ctx.add('caution', 'sets the system clock (date)');
};

const hostnameRule: Rule = (v, ctx) => {
  if (positionals(v.args).length || hasShort(v.args, 'F', '') || hasLong(v.args, 'file')) ctx.add('caution', 'changes the hostname');
};

const tarRule: Rule = (v, ctx) => {
  const first = v.args[0]?.text ?? '';
  const letters = first.startsWith('-') ? '' : first;
  const listing = hasShort(v.args, 't') || hasLong(v.args, 'list') || letters.includes('t');
  if (listing && !/[xcruA]/.test(letters) && !hasShort(v.args, 'xcruA')) return;
  const dest = optValues(v.args, 'C', 'directory');
  for (const d of dest) {
    if (isCriticalPath(d) || isSystemPath(d)) ctx.add('dangerous', `tar extracts into ${normPath(d)}`);
  }
  ctx.add('caution', `tar ${first} writes files`);
};

const unzipRule: Rule = (v, ctx) => {
  if (hasShort(v.args, 'lvtZ')) return;
  for (const d of optValues(v.args, 'd', null)) if (isCriticalPath(d) || isSystemPath(d)) ctx.add('dangerous', `unzip extracts into ${normPath(d)}`);
  ctx.add('caution', 'unzip extracts files');
};

const ipRule: Rule = (v, ctx) => {
  const words = positionals(v.args, 'fbn', ['family', 'batch', 'netns']).map((a) => a.text);
  if (words.some((w) => /^(?:add|del|delete|set|flush|change|replace|append|exec|up|down|prepend|save|restore)$/.test(w)))
    ctx.add('caution', `changes network configuration (ip ${words.join(' ')})`);
  if (words.includes('flush') && words.some((w) => /^(?:a|addr|address|r|ro|route)$/.test(w)))
    ctx.add('dangerous', `ip ${words.join(' ')} drops network configuration`);
};

const mountRule: Rule = (v, ctx) => {
  if (v.name === 'mount' && (v.args.length === 0 || (hasShort(v.args, 'l') && positionals(v.args).length === 0))) return;
  ctx.add('caution', `${v.name} changes mounted filesystems`);
};

const editor = (): Rule => fileEdit('opens an editor', 'edits', false);

const fileEdit =
  (what: string, verb = 'edits', escalate = true, argShort = '', argLong: string[] = []): Rule =>
  (v, ctx) => {
    const files = positionals(v.args, argShort, argLong);
    for (const f of escalate ? files : []) {
      const w = writeFinding(f.text, verb);
      if (w && w.tier !== 'caution' && w.tier !== 'blocked') ctx.add(w.tier, w.reason);
    }
    ctx.add('caution', `${what} (${v.name}${files.length ? ` ${files.map((f) => f.text).join(' ')}` : ''})`);
  };

const installRule: Rule = (v, ctx) => {
  const pos = positionals(v.args, 'gmoStT', ['group', 'mode', 'owner', 'suffix', 'target-directory']);
  const dest = optValues(v.args, 't', 'target-directory')[0] ?? pos[pos.length - 1]?.text;
  if (dest) {
    const f = writeFinding(dest, 'install writes to');
    if (f && f.tier !== 'caution') ctx.add(f.tier, f.reason);
  }
  ctx.add('caution', 'installs files (install)');
};

const atRule: Rule = (v, ctx) => {
  if (hasShort(v.args, 'lc') || v.name === 'atq') return;
  if (v.stdin?.text) ctx.classifyCode(v.stdin.text, v.name);
  ctx.add('caution', `schedules a job (${v.name})`);
};

const chattr: Rule = (v, ctx) => {
  ctx.add('dangerous', `changes file attributes (chattr ${v.args.map((a) => a.text).join(' ')})`);
};

const diskutil: Rule = (v, ctx) => {
  const sub = v.args[0]?.text ?? '';
  if (
    /^(?:eraseDisk|eraseVolume|partitionDisk|zeroDisk|randomDisk|secureErase|reformat|apfs)$/i.test(sub) &&
    (sub !== 'apfs' || /delete|erase/i.test(v.args[1]?.text ?? ''))
  ) {
    ctx.add('blocked', `diskutil ${sub} erases a disk`);
  } else if (/^(?:list|info|activity)$/i.test(sub)) return;
  else ctx.add('caution', `diskutil ${sub}`);
};

const hdparm: Rule = (v, ctx) => {
  if (v.args.some((a) => /^--(?:security-erase|security-erase-enhanced|trim-sector-ranges|write-sector|fwdownload|make-bad-sector|dco-restore)/.test(a.text)))
    ctx.add('blocked', 'hdparm erases or overwrites the disk');
  else ctx.add('caution', 'changes disk parameters (hdparm)');
};

const nvme: Rule = (v, ctx) => {
  const sub = v.args[0]?.text ?? '';
  if (/^(?:format|sanitize|delete-ns|detach-ns)$/.test(sub)) ctx.add('blocked', `nvme ${sub} erases the drive`);
  else ctx.add('caution', `nvme ${sub}`);
};

const badblocks: Rule = (v, ctx) => {
  if (hasShort(v.args, 'w', 'bcdeiopt')) ctx.add('blocked', 'badblocks -w overwrites the whole device');
  else ctx.add('caution', 'scans a device (badblocks)');
};

const cryptsetup: Rule = (v, ctx) => {
  const words = v.args.map((a) => a.text);
  if (words.some((w) => /^(?:luksFormat|erase|luksErase|reencrypt)$/.test(w))) ctx.add('blocked', `cryptsetup ${words.join(' ')} destroys the volume's data`);
  else ctx.add('caution', 'cryptsetup');
};

const mdadm: Rule = (v, ctx) => {
  if (hasLong(v.args, 'zero-superblock') || hasLong(v.args, 'create') || hasShort(v.args, 'C')) ctx.add('blocked', 'mdadm rewrites RAID metadata on devices');
  else ctx.add('caution', 'mdadm');
};

const volumeRemove: Rule = (v, ctx) => {
  ctx.add('dangerous', `${v.name} ${v.args.map((a) => a.text).join(' ')} deletes storage volumes`.trim());
};

const zfs: Rule = (v, ctx) => {
  const sub = v.args[0]?.text ?? '';
  if (/^(?:destroy|labelclear)$/.test(sub)) ctx.add('dangerous', `${v.name} ${sub} destroys data`);
  else if (/^(?:list|status|get|iostat|history|version)$/.test(sub)) return;
  else ctx.add('caution', `${v.name} ${sub}`);
};

const dropdb: Rule = (v, ctx) => {
  ctx.add(
    'dangerous',
    `${v.name} ${positionals(v.args, 'hpUd', ['host', 'port', 'username', 'maintenance-db'])
      .map((p) => p.text)
      .join(' ')} deletes a database`.trim(),
  );
};

const mysqladmin: Rule = (v, ctx) => {
  const words = positionals(v.args, 'hPuSp', ['host', 'port', 'user', 'socket']).map((a) => a.text.toLowerCase());
  if (words.includes('drop')) ctx.add('dangerous', 'mysqladmin drop deletes a database');
  else if (words.includes('shutdown')) ctx.add('dangerous', 'mysqladmin shutdown stops the database server');
  else ctx.add('caution', 'mysqladmin');
};

const yqRule: Rule = (v, ctx) => {
  if (hasShort(v.args, 'i') || hasLong(v.args, 'inplace')) ctx.add('caution', `${v.name} -i edits files in place`);
};

const gzipLike = decompress;

/** make VAR=value operands override the makefile; SHELL (and MAKESHELL) name the program every recipe runs in. */
const makeRule: Rule = (v, ctx) => {
  ctx.add('caution', `runs a build (${v.name})`);
  for (const a of v.args) {
    const m = /^([A-Za-z_.][A-Za-z0-9_.]*)\s*[:+?!]?=(.*)$/s.exec(a.text);
    if (!m || a.text.startsWith('-')) continue;
    if (m[1] === 'SHELL' || m[1] === 'MAKESHELL' || m[1] === '.SHELLFLAGS') {
      ctx.add('caution', `${v.name} ${m[1]}= changes the program recipes run in (${m[2]})`);
      if (m[1] !== '.SHELLFLAGS' && m[2]) ctx.classifyCode(m[2], `${v.name} ${m[1]}=`);
    } else ctx.add('caution', `${v.name} overrides a makefile variable (${m[1]})`);
  }
};

const unknownTool = (what: string): Rule => caution(what);

// ---------------------------------------------------------------------------------------------
// Registry

/** Read-only commands that are safe with any arguments (no redirects/substitutions assumed). */
export const SAFE_COMMANDS = new Set([
  'ls',
  'dir',
  'vdir',
  'exa',
  'eza',
  'lsd',
  'cat',
  'tac',
  'nl',
  'head',
  'tail',
  'less',
  'more',
  'most',
  'grep',
  'egrep',
  'fgrep',
  'zgrep',
  'zegrep',
  'zfgrep',
  'ag',
  'ack',
  'wc',
  'cut',
  'paste',
  'join',
  'comm',
  'column',
  'fold',
  'fmt',
  'expand',
  'unexpand',
  'pr',
  'od',
  'hexdump',
  'strings',
  'pwd',
  'whoami',
  'id',
  'groups',
  'who',
  'w',
  'users',
  'last',
  'lastlog',
  'uname',
  'uptime',
  'df',
  'du',
  'free',
  'ps',
  'pgrep',
  'pidof',
  'pstree',
  'top',
  'htop',
  'btop',
  'vmstat',
  'iostat',
  'mpstat',
  'nproc',
  'lscpu',
  'lsmem',
  'lsblk',
  'lspci',
  'lsusb',
  'lsattr',
  'lsof',
  'ss',
  'netstat',
  'arch',
  'getconf',
  'locale',
  'tty',
  'printenv',
  'env',
  'which',
  'whereis',
  'type',
  'file',
  'stat',
  'realpath',
  'readlink',
  'basename',
  'dirname',
  'namei',
  'jq',
  'gojq',
  'jless',
  'diff',
  'diff3',
  'sdiff',
  'colordiff',
  'cmp',
  'md5sum',
  'sha1sum',
  'sha224sum',
  'sha256sum',
  'sha384sum',
  'sha512sum',
  'b2sum',
  'cksum',
  'sum',
  'md5',
  'shasum',
  'test',
  '[',
  'true',
  'false',
  ':',
  'sleep',
  'seq',
  'yes',
  'expr',
  'factor',
  'numfmt',
  'bc',
  'cal',
  'ncal',
  'man',
  'info',
  'help',
  'apropos',
  'whatis',
  'getent',
  'zipinfo',
  'zless',
  'zmore',
  'bzless',
  'xzless',
  'cd',
  'pushd',
  'popd',
  'dirs',
  'read',
  'wait',
  'jobs',
  'exit',
  'return',
  'shift',
  'break',
  'continue',
  'let',
  'getopts',
  'hash',
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'shopt',
  'blkid',
  'findmnt',
  'lslocks',
  'lsns',
  'lsmod',
  'modinfo',
  'dmidecode',
  'lshw',
  'inxi',
  'neofetch',
  'fastfetch',
  'screenfetch',
  'tput',
  'clear',
  'locate',
  'plocate',
  'mlocate',
  'fzf',
  'bat',
  'batcat',
  'glow',
  'look',
  'tsort',
  'ptx',
  'csvlook',
  'xsv',
  'mlr',
  'wdiff',
  'logname',
  'nice',
  'quota',
  'times',
  'caller',
  'compgen',
  'complete',
  'disown',
  'fg',
  'bg',
  'sensors',
  'acpi',
  'upower',
  'nvidia-smi',
  'dstat',
  'lsb_release',
  'sw_vers',
  'system_profiler',
  'vm_stat',
  'ioreg',
  'mdfind',
  'mdls',
  'otool',
  'nm',
  'objdump',
  'readelf',
  'ldd',
  'size',
  'c++filt',
  'addr2line',
  'tldr',
  'fc-list',
  'pinky',
  'finger',
  'slabtop',
  'pmap',
  'pwdx',
  'prtstat',
  'xmllint',
  'yamllint',
  'shellcheck',
  'ncdu',
  'dust',
  'duf',
  'procs',
  'tokei',
  'cloc',
  'scc',
  'tload',
  // options that run programs or write files are in the option tables (./command-helpers.ts)
  'sort',
  'gsort',
  'rg',
]);

const ctlRead: Rule = (v, ctx) => {
  const sub = positionals(v.args, 'HM', ['host', 'machine'])[0]?.text ?? '';
  if (sub && !/^(?:status|show|list(?:-[\w-]+)?|timesync-status|show-timesync)$/.test(sub)) ctx.add('caution', `${v.name} ${sub} changes system settings`);
};

const umaskRule: Rule = (v, ctx) => {
  if (positionals(v.args).length) ctx.add('caution', 'changes the file-creation mask (umask)');
};
const ulimitRule: Rule = (v, ctx) => {
  if (v.args.some((a) => !a.text.startsWith('-') || (/^-[HS]*[a-zA-Z]*$/.test(a.text) && v.args.length > 1 && positionals(v.args).length > 0)))
    ctx.add('caution', 'changes resource limits (ulimit)');
};
const iconvRule: Rule = (v, ctx) => {
  for (const o of optValues(v.args, 'o', 'output')) addWrite(ctx, litArg(o), 'iconv writes to');
};
const sttyRule: Rule = (v, ctx) => {
  if (v.args.length && !hasShort(v.args, 'ag') && !hasLong(v.args, 'all', 'save')) ctx.add('caution', 'changes terminal settings (stty)');
};
const fuserRule: Rule = (v, ctx) => {
  if (hasShort(v.args, 'k') || hasLong(v.args, 'kill')) ctx.add('dangerous', 'fuser -k kills processes using a file');
};

export const RULES: Record<string, Rule> = {
  rm,
  rmdir,
  unlink,
  shred,
  srm: shred,
  wipe: shred,
  truncate,
  chmod: chmodLike('chmod'),
  chown: chmodLike('chown'),
  chgrp: chmodLike('chgrp'),
  chattr,
  setcap: (v, ctx) => {
    // file capabilities that amount to root for whoever runs the file
    const caps = v.args.map((a) => a.text.toLowerCase()).filter((t) => /cap_/.test(t));
    if (
      caps.some((c) =>
        /cap_(?:setuid|setgid|sys_admin|sys_ptrace|sys_module|dac_override|dac_read_search|chown|fowner|sys_rawio|bpf|all)\b|=ep|all[+=]/.test(c),
      )
    ) {
      ctx.add('dangerous', `grants root-equivalent file capabilities (setcap ${caps.join(' ')})`);
    }
    ctx.add('caution', `changes file capabilities (setcap ${v.args.map((a) => a.text).join(' ')})`);
  },
  mv,
  cp,
  rsync: cp,
  scp: (v, ctx) => {
    cp(v, ctx);
    ctx.add('caution', `network access (${v.name})`);
  },
  ln,
  tee,
  dd,
  install: installRule,
  mke2fs: mkfs,
  mkswap,
  wipefs,
  fdisk: fdiskLike,
  sfdisk: fdiskLike,
  gdisk: fdiskLike,
  cfdisk: fdiskLike,
  parted,
  sgdisk,
  blkdiscard,
  diskutil,
  hdparm,
  nvme,
  badblocks,
  cryptsetup,
  mdadm,
  lvremove: volumeRemove,
  vgremove: volumeRemove,
  pvremove: volumeRemove,
  zpool: zfs,
  zfs,
  newfs: mkfs,
  shutdown: power('shuts down'),
  reboot: power('reboots'),
  halt: power('halts'),
  poweroff: power('powers off'),
  kexec: (v, ctx) => {
    if (hasShort(v.args, 'e') || hasLong(v.args, 'exec')) ctx.add('blocked', 'kexec -e reboots into another kernel');
    else ctx.add('caution', 'kexec loads a kernel');
  },
  init: initRule,
  telinit: initRule,
  systemctl,
  loginctl: (v, ctx) => {
    const sub = v.args[0]?.text ?? '';
    if (/^(?:poweroff|reboot|halt|kexec)$/.test(sub)) ctx.add('blocked', `loginctl ${sub} takes the machine down`);
    else if (/^(?:terminate-\w+|kill-\w+)$/.test(sub)) ctx.add('dangerous', `loginctl ${sub} ends sessions`);
  },
  kill,
  pkill,
  killall: pkill,
  killall5: add('blocked', 'killall5 signals every process'),
  fuser: fuserRule,
  crontab,
  history,
  iptables,
  ip6tables: iptables,
  'iptables-legacy': iptables,
  'iptables-nft': iptables,
  nft,
  ufw,
  pfctl: (v, ctx) => {
    if (hasShort(v.args, 'dF', 'afsTtx')) ctx.add('dangerous', 'pfctl disables or flushes the firewall');
    else ctx.add('caution', 'pfctl');
  },
  'firewall-cmd': (v, ctx) => {
    if (v.args.some((a) => /^--(?:panic-on|remove-service|remove-port|set-default-zone=trusted)/.test(a.text)))
      ctx.add('dangerous', 'firewall-cmd weakens or cuts the firewall');
    else ctx.add('caution', 'firewall-cmd');
  },
  setenforce,
  userdel: accountsDangerous('deletes a user account'),
  deluser: accountsDangerous('deletes a user account'),
  groupdel: accountsDangerous('deletes a group'),
  delgroup: accountsDangerous('deletes a group'),
  passwd: accountsDangerous('changes passwords'),
  chpasswd: accountsDangerous('changes passwords'),
  usermod: accountsDangerous('modifies a user account'),
  visudo: accountsDangerous('edits sudoers'),
  vipw: accountsDangerous('edits the password file'),
  vigr: accountsDangerous('edits the group file'),
  chage: accountsDangerous('changes password ageing'),
  useradd,
  adduser: useradd,
  groupadd: caution('creates a group'),
  gpasswd,
  newusers: accountsDangerous('creates accounts in bulk'),
  auditctl,
  service,
  git,
  docker,
  podman: docker,
  nerdctl: docker,
  'docker-compose': docker,
  kubectl,
  oc: kubectl,
  helm,
  terraform: iac,
  tofu: iac,
  terragrunt: iac,
  pulumi: iac,
  cdk: iac,
  serverless: iac,
  sls: iac,
  aws: cloud,
  gcloud: cloud,
  gsutil: cloud,
  az: cloud,
  doctl: cloud,
  heroku: cloud,
  flyctl: cloud,
  fly: cloud,
  vercel: cloud,
  netlify: cloud,
  gh: cloud,
  glab: cloud,
  hcloud: cloud,
  linode: cloud,
  ibmcloud: cloud,
  oci: cloud,
  apt: pkgManager,
  'apt-get': pkgManager,
  'apt-cache': pkgManager,
  aptitude: pkgManager,
  dpkg: pkgManager,
  'dpkg-query': pkgManager,
  yum: pkgManager,
  dnf: pkgManager,
  rpm: pkgManager,
  zypper: pkgManager,
  pacman: pkgManager,
  yay: pkgManager,
  paru: pkgManager,
  apk: pkgManager,
  brew: pkgManager,
  port: pkgManager,
  snap: pkgManager,
  flatpak: pkgManager,
  nix: pkgManager,
  'nix-env': pkgManager,
  npm: pkgManager,
  pnpm: pkgManager,
  yarn: pkgManager,
  pip: pkgManager,
  pip3: pkgManager,
  pipx: pkgManager,
  uv: pkgManager,
  poetry: pkgManager,
  gem: pkgManager,
  bundle: pkgManager,
  cargo: pkgManager,
  composer: pkgManager,
  conda: pkgManager,
  mamba: pkgManager,
  go: caution('runs the go tool (builds/installs code)'),
  npx: caution('runs a package binary (npx)'),
  pnpx: caution('runs a package binary (pnpx)'),
  bunx: caution('runs a package binary (bunx)'),
  eval: evalRule,
  source,
  '.': source,
  psql: dbClient('psql'),
  mysql: dbClient('mysql'),
  mariadb: dbClient('mysql'),
  sqlite3: dbClient('sqlite'),
  sqlite: dbClient('sqlite'),
  duckdb: dbClient('sqlite'),
  mongo: dbClient('mongo'),
  mongosh: dbClient('mongo'),
  'redis-cli': dbClient('redis'),
  'valkey-cli': dbClient('redis'),
  'clickhouse-client': dbClient('generic'),
  clickhouse: dbClient('generic'),
  cqlsh: dbClient('generic'),
  sqlcmd: dbClient('generic'),
  cockroach: dbClient('generic'),
  usql: dbClient('generic'),
  dropdb,
  dropuser: dropdb,
  mysqladmin,
  awk,
  gawk: awk,
  mawk: awk,
  nawk: awk,
  busyboxawk: awk,
  sed,
  gsed: sed,
  find,
  gfind: find,
  fd: fdRule,
  fdfind: fdRule,
  xxd,
  base64,
  base32: base64,
  basenc: base64,
  gunzip: gzipLike,
  gzip: gzipLike,
  zcat: gzipLike,
  bzip2: gzipLike,
  bunzip2: gzipLike,
  bzcat: gzipLike,
  xz: gzipLike,
  unxz: gzipLike,
  xzcat: gzipLike,
  zstd: gzipLike,
  unzstd: gzipLike,
  zstdcat: gzipLike,
  lzcat: gzipLike,
  uncompress: gzipLike,
  uudecode: () => ({ decoded: true }),
  openssl: opensslRule,
  curl: network('curl'),
  wget: network('wget'),
  fetch: network('fetch'),
  http: network('httpie'),
  https: network('httpie'),
  aria2c: network('aria2c'),
  lwp: network('lwp'),
  'lwp-request': network('lwp-request'),
  GET: network('GET'),
  nc: netcat,
  ncat: netcat,
  netcat,
  'nc.traditional': netcat,
  'nc.openbsd': netcat,
  'netcat.openbsd': netcat,
  'netcat.traditional': netcat,
  socat,
  xterm: (v, ctx) => {
    const display = optValues(v.args, null, 'display').concat(
      v.args.flatMap((a, i) => (a.text === '-display' || a.text === '-d' ? [v.args[i + 1]?.text ?? ''] : [])),
    );
    if (display.some((d) => /^[^:]+:\d/.test(d) && !/^(?:localhost|127\.0\.0\.1|unix)?:/.test(d)))
      ctx.add('dangerous', `xterm opens a shell on a remote display (${display.join(' ')}) (reverse shell)`);
    ctx.add('caution', 'opens a terminal (xterm)');
  },
  zmodload: (v, ctx) => {
    if (v.args.some((a) => /^zsh\/net\//.test(a.text))) ctx.add('caution', `loads zsh network modules (${v.args.map((a) => a.text).join(' ')})`);
  },
  telnet: network('telnet'),
  ftp: network('ftp'),
  sftp: network('sftp'),
  ssh,
  mosh: ssh,
  ping: caution('network access (ping)'),
  ping6: caution('network access (ping6)'),
  dig: caution('network access (dig)'),
  nslookup: caution('network access (nslookup)'),
  host: caution('network access (host)'),
  traceroute: caution('network access (traceroute)'),
  mtr: caution('network access (mtr)'),
  whois: caution('network access (whois)'),
  nmap: caution('network scanning (nmap)'),
  tcpdump: caution('captures network traffic (tcpdump)'),
  ...BUILTIN_RULES,
  set: setRule,
  unset,
  echo,
  printf,
  cat,
  rev,
  tr,
  uniq,
  tree,
  date: dateRule,
  hostname: hostnameRule,
  tar: tarRule,
  unzip: unzipRule,
  dmesg,
  journalctl,
  ip: ipRule,
  sysctl,
  mount: mountRule,
  umount: mountRule,
  swapoff: caution('disables swap'),
  swapon: caution('enables swap'),
  yq: yqRule,
  umask: umaskRule,
  ulimit: ulimitRule,
  iconv: iconvRule,
  stty: sttyRule,
  touch: fileEdit('creates or updates files', 'touches', true, 'rdt', ['reference', 'date', 'time']),
  mkdir: caution('creates directories'),
  mkfifo: caution('creates a named pipe'),
  mknod: caution('creates a device node'),
  split: caution('writes split files'),
  csplit: caution('writes split files'),
  patch: fileEdit('patches files', 'patches'),
  at: atRule,
  batch: atRule,
  atq: atRule,
  atrm: caution('removes scheduled jobs'),
  vi: editor(),
  vim: editor(),
  nvim: editor(),
  nano: editor(),
  emacs: editor(),
  pico: editor(),
  ed: editor(),
  ex: editor(),
  code: editor(),
  subl: editor(),
  micro: editor(),
  helix: editor(),
  hx: editor(),
  joe: editor(),
  sudoedit: fileEdit('edits files as root'),
  make: makeRule,
  gmake: makeRule,
  cmake: unknownTool('runs a build (cmake)'),
  open: caution('opens a file or URL with another program'),
  'xdg-open': caution('opens a file or URL with another program'),
  tmux,
  screen,
  daemonize,
  dtach,
  abduco: dtach,
  'systemd-run': systemdRun,
  'start-stop-daemon': startStopDaemon,
  disown,
  bg: disown,
  dc: caution('dc can run shell commands (!)'),
  'update-grub': caution('rewrites the boot loader config'),
  'grub-install': add('dangerous', 'reinstalls the boot loader'),
  'update-initramfs': caution('rebuilds the initramfs'),
  modprobe: caution('loads/unloads kernel modules'),
  rmmod: add('dangerous', 'unloads a kernel module'),
  insmod: add('dangerous', 'loads a kernel module'),
  sysrq: add('blocked', 'triggers a kernel SysRq action'),
  'pm-suspend': add('dangerous', 'suspends the machine'),
  'pm-hibernate': add('dangerous', 'hibernates the machine'),
  flashrom: (v, ctx) => {
    if (hasShort(v.args, 'wE') || hasLong(v.args, 'write', 'erase')) ctx.add('blocked', 'flashrom rewrites firmware');
    else ctx.add('caution', 'flashrom');
  },
  defaults: (v, ctx) => {
    if (!/^(?:read|read-type|domains|find|export)$/.test(v.args[0]?.text ?? '')) ctx.add('caution', 'changes macOS defaults');
  },
  csrutil: (v, ctx) => {
    if ((v.args[0]?.text ?? '') === 'disable') ctx.add('dangerous', 'disables System Integrity Protection');
    else ctx.add('caution', 'csrutil');
  },
  timedatectl: ctlRead,
  hostnamectl: ctlRead,
  localectl: ctlRead,
  spctl: (v, ctx) => {
    if (v.args.some((a) => /^--master-disable$|^--global-disable$/.test(a.text))) ctx.add('dangerous', 'disables Gatekeeper');
    else ctx.add('caution', 'spctl');
  },
};

export function isShell(name: string): boolean {
  return SHELLS.has(name);
}

export function ruleFor(name: string): Rule | undefined {
  if (Object.prototype.hasOwnProperty.call(RULES, name)) return RULES[name];
  if (/^mkfs(?:\.|$)|^mkdosfs$|^mkntfs$|^mkexfatfs$|^mkfs\w+$/.test(name)) return mkfs;
  if (SHELLS.has(name)) return shell;
  if (interpreterKind(name)) return interpreter;
  return undefined;
}
