// The command classifier's vocabulary: evaluated arguments, what flows between pipeline stages,
// the view a rule gets of one simple command, the context it reports through, and small helpers
// to read options and operands. Shared by ./command-rules.ts and the tables beside it.
import type { Tier } from './command-tier.js';

/** One argument after quote removal, parameter resolution, field splitting and brace expansion. */
export interface Arg {
  /** Value after expansion; unresolved expansions appear as their source text (e.g. `$HOME`, `$(id)`). */
  text: string;
  /** Source text of the word this argument came from. */
  raw: string;
  /** Contains an expansion whose value is unknown (variable, command substitution, arithmetic). */
  dynamic: boolean;
  /** Contains unquoted glob characters (`*`, `?`, `[...]`, extglob). */
  glob: boolean;
  /** The word contains a command or process substitution. */
  subst: boolean;
  /** The word contains a process substitution (`<(...)` / `>(...)`). */
  procSubst: boolean;
  /** A substitution in the word downloads data (curl, wget, ...). */
  substDownload: boolean;
  /** A substitution in the word decodes/deobfuscates data (base64 -d, xxd -r, ...). */
  substDecoded: boolean;
  /** The word is nothing but one command/process substitution (e.g. `"$(curl x)"`). */
  substOnly: boolean;
  /** A substitution (or a variable holding command output) in the word carries credential material: what it came from. */
  secret?: string;
  /** A substitution in the word prints names of credential files. */
  secretNames?: string;
}

/** Where a command's standard input comes from, when the classifier can tell. */
export interface Stdin {
  source: 'pipe' | 'heredoc' | 'herestring' | 'file';
  /** Some upstream stage downloads data. */
  download: boolean;
  /** Some upstream stage decodes or deobfuscates data. */
  decoded: boolean;
  /** The exact text arriving on stdin, when statically known (echo/printf/heredoc/decoded). */
  text?: string;
  /** For `< file` redirects: the file. */
  path?: string;
  /** Some upstream stage read credential material: what it was. */
  secret?: string;
  /** Some upstream stage printed names of credential files. */
  secretNames?: string;
}

/** What a pipeline stage produces for the next one. */
export interface Produced {
  download?: boolean;
  decoded?: boolean;
  /** Exact stdout text when statically known. */
  text?: string;
  /** The output carries credential material: what it came from. */
  secret?: string;
  /** The output is a list of credential files (find -name id_rsa). */
  secretNames?: string;
  /** The stage talks to the network (its output is remote data, its input is sent away). */
  net?: boolean;
  /** The stage runs code read from its standard input (a shell or interpreter fed by the pipe). */
  runsInput?: boolean;
}

export interface RedirectInfo {
  /** 'out' for writes (>, >>, &>, >|, <>), 'in' for reads, 'dup' for fd duplication. */
  kind: 'out' | 'in' | 'dup';
  target: string;
  /** The redirect connects to the network (/dev/tcp, or a descriptor opened on it earlier). */
  net?: boolean;
}

export interface CommandView {
  /** Normalised command name: basename, lower-cased. */
  name: string;
  /** argv[0] is the command word as written (after expansion). */
  argv: Arg[];
  /** Arguments after the command word. */
  args: Arg[];
  /** Runs through sudo/doas/su/pkexec/runuser. */
  privileged: boolean;
  /** Arguments are (partly) supplied by xargs from stdin. */
  viaXargs: boolean;
  stdin: Stdin | undefined;
  redirects: RedirectInfo[];
}

export interface RuleContext {
  add(tier: Tier, reason: string): void;
  /** Content written to `path` earlier in the same command line, when statically known. */
  fileContent(path: string): string | undefined;
  /** Classifies `code` as a shell program (nested in this command) and merges its findings. */
  classifyCode(code: string, label: string): void;
  /** Classifies an argv as a command run by this one (find -exec, docker exec, ssh, ...). */
  runArgv(argv: Arg[], label: string, extra?: { viaXargs?: boolean; privileged?: boolean; stdin?: Stdin }): void;
  /** This command reads `path`: reported when it lies outside the workspace; credential material taints the output. */
  reads(path: string, what?: string, recursive?: boolean): void;
  /** This command writes `path` (its content then carries whatever this command's output carries). */
  writes(path: string): void;
  /** What `path` holds if this command line wrote it from a download or from decoded data. */
  fetched(path: string): 'download' | 'decoded' | undefined;
  /** `path` is credential material, or a file this command line filled with some. */
  isSecret(path: string, recursive?: boolean): boolean;
}

export type Rule = (v: CommandView, ctx: RuleContext) => Produced | void;

// ---------------------------------------------------------------------------------------------
// Argument helpers

export function litArg(text: string): Arg {
  return {
    text,
    raw: text,
    dynamic: false,
    glob: /[*?]/.test(text),
    subst: false,
    procSubst: false,
    substDownload: false,
    substDecoded: false,
    substOnly: false,
  };
}

/** Arguments before a `--` end-of-options marker. */
export function beforeDD(args: Arg[]): Arg[] {
  const i = args.findIndex((a) => a.text === '--');
  return i < 0 ? args : args.slice(0, i);
}

/** True when a short-option cluster (`-rf`) contains one of `chars`; `argChars` take the rest as value. */
export function hasShort(args: Arg[], chars: string, argChars = ''): boolean {
  for (const a of beforeDD(args)) {
    const t = a.text;
    if (!t.startsWith('-') || t.startsWith('--') || t.length < 2) continue;
    for (let i = 1; i < t.length; i++) {
      const c = t[i]!;
      if (chars.includes(c)) return true;
      if (argChars.includes(c)) break;
    }
  }
  return false;
}

export function hasLong(args: Arg[], ...names: string[]): boolean {
  for (const a of beforeDD(args)) {
    for (const n of names) if (a.text === `--${n}` || a.text.startsWith(`--${n}=`)) return true;
  }
  return false;
}

export function hasWord(args: Arg[], ...words: string[]): boolean {
  return args.some((a) => words.includes(a.text));
}

/** Non-option arguments; `argShort`/`argLong` name options that consume the following argument. */
export function positionals(args: Arg[], argShort = '', argLong: string[] = []): Arg[] {
  const out: Arg[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '--') {
      i++;
      break;
    }
    if (t.startsWith('--') && t.length > 2) {
      if (!t.includes('=') && argLong.includes(t.slice(2))) i++;
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      for (let j = 1; j < t.length; j++) {
        if (argShort.includes(t[j]!)) {
          if (j === t.length - 1) i++;
          break;
        }
      }
      continue;
    }
    out.push(args[i]!);
  }
  for (; i < args.length; i++) out.push(args[i]!);
  return out;
}

/** Values of an option given as `-x V`, `-xV`, `--long V` or `--long=V`. */
export function optValues(args: Arg[], short: string | null, long: string | null): string[] {
  const out: string[] = [];
  const pre = beforeDD(args);
  for (let i = 0; i < pre.length; i++) {
    const t = pre[i]!.text;
    if (long && t === `--${long}`) {
      if (i + 1 < pre.length) out.push(pre[++i]!.text);
    } else if (long && t.startsWith(`--${long}=`)) {
      out.push(t.slice(long.length + 3));
    } else if (short && t === `-${short}`) {
      if (i + 1 < pre.length) out.push(pre[++i]!.text);
    } else if (short && t.startsWith(`-${short}`) && !t.startsWith('--') && t.length > 2) {
      out.push(t.slice(2));
    }
  }
  return out;
}

export function subcommand(args: Arg[], argShort = '', argLong: string[] = []): { sub: string; rest: Arg[] } {
  const pos = positionals(args, argShort, argLong);
  const first = pos[0];
  if (!first) return { sub: '', rest: [] };
  const idx = args.indexOf(first);
  return { sub: first.text.toLowerCase(), rest: args.slice(idx + 1) };
}
