// The command shape an "always allow" rule may bind: exactly one simple command.
//
// A shell command is rule-matchable only when mvdan/sh parses it into a single simple command
// (name and arguments, nothing else): no lists (`;`, `&&`, `||`, new lines), pipelines, background
// jobs, redirections, here-documents, command/process substitution, variable or arithmetic
// expansion, environment assignments, compound commands, comments or ANSI-C quoting. Such a command
// is normalized into its words, each rendered canonically (quote removal, then single quotes only
// where a character would otherwise mean something to the shell), so that two spellings of the same
// call (`tar -czf 'backup.tgz' *` and `tar  -czf backup.tgz *`) give the same words, and a quoted
// `'*'` never equals an unquoted glob `*`.

import { SwitchboardError } from '../kernel/errors.js';
import { gstr, items, nodeType, ParseFailure, parseShell, type Raw } from './command-syntax.js';

export type CommandShape = { ok: true; words: string[]; text: string } | { ok: false; reason: string };

/** Longer commands are not parsed here: they are never rule-matchable. */
const MAX_COMMAND = 16 * 1024;

// Operator codes of syntax.BinCmdOperator as the JS build exposes them.
const OP_AND = 10;
const OP_OR = 11;
const OP_PIPE = 12;
const OP_PIPE_ALL = 13;

/** Characters that mean nothing special to bash anywhere in an argument: shown bare even when quoted. */
const LITERAL = /^[A-Za-z0-9_\-.,/:@%+^=]$/;

export const NOT_MATCHABLE = {
  parse: 'it could not be parsed as one shell command',
  empty: 'it is empty',
  long: `it is longer than ${MAX_COMMAND} characters`,
  list: 'it runs more than one command (;, &&, || or a new line)',
  pipe: 'it is a pipeline (|)',
  background: 'it runs in the background (&)',
  redirect: 'it redirects input or output (>, <, here-documents)',
  substitution: 'it uses command or process substitution ($(…), backticks, <(…))',
  expansion: 'it expands variables or arithmetic ($VAR, ${…}, $((…)))',
  assignment: 'it sets variables for the command (NAME=value)',
  compound: 'it is not a simple command (a subshell, group, loop, test, function or keyword)',
  comment: 'it contains a comment',
  quoting: 'it uses ANSI-C or locale quoting ($\'…\', $"…")',
  glob: 'it uses extended globs',
  negated: 'it negates the command (!)',
} as const;

class NotMatchable extends SwitchboardError {
  readonly code = 'not_matchable';
}

function parse(src: string): Raw {
  try {
    return parseShell(src, { keepComments: true });
  } catch (e) {
    if (e instanceof ParseFailure) throw new NotMatchable(NOT_MATCHABLE.parse);
    throw e;
  }
}

/** One character of an argument after quote removal, and whether the shell saw it quoted. */
interface Ch {
  c: string;
  quoted: boolean;
}

function wordChars(word: Raw): Ch[] {
  const out: Ch[] = [];
  for (const part of items(word.Parts)) {
    switch (nodeType(part)) {
      case 'Lit': {
        const v = gstr(part.Value);
        for (let i = 0; i < v.length; i++) {
          if (v[i] === '\\' && i + 1 < v.length) {
            i++;
            if (v[i] !== '\n') out.push({ c: v[i]!, quoted: true });
          } else out.push({ c: v[i]!, quoted: false });
        }
        break;
      }
      case 'SglQuoted':
        if (part.Dollar) throw new NotMatchable(NOT_MATCHABLE.quoting);
        for (const c of gstr(part.Value)) out.push({ c, quoted: true });
        break;
      case 'DblQuoted':
        if (part.Dollar) throw new NotMatchable(NOT_MATCHABLE.quoting);
        for (const p of items(part.Parts)) {
          if (nodeType(p) !== 'Lit') throw new NotMatchable(reasonForPart(p));
          const v = gstr(p.Value).replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c));
          for (const c of v) out.push({ c, quoted: true });
        }
        // "" is an empty argument, not nothing
        if (items(part.Parts).length === 0) out.push({ c: '', quoted: true });
        break;
      default:
        throw new NotMatchable(reasonForPart(part));
    }
  }
  return out;
}

function reasonForPart(p: Raw): string {
  switch (nodeType(p)) {
    case 'CmdSubst':
    case 'ProcSubst':
      return NOT_MATCHABLE.substitution;
    case 'ParamExp':
    case 'ArithmExp':
      return NOT_MATCHABLE.expansion;
    case 'ExtGlob':
      return NOT_MATCHABLE.glob;
    default:
      return NOT_MATCHABLE.compound;
  }
}

/**
 * The canonical spelling of one argument: characters the shell saw unquoted stay bare (a glob
 * `*` stays a glob), quoted ones are shown bare when they mean nothing to the shell, else in
 * single quotes. `first`: the command name, where a bare `=` would make an assignment.
 */
function render(chars: Ch[], first: boolean): string {
  const needs = (x: Ch) => x.c !== '' && x.quoted && !(LITERAL.test(x.c) && !(first && x.c === '='));
  // Quoted as a whole when that means the same: something needs quotes, nothing is a bare special character.
  if (chars.some(needs) && chars.every((x) => x.c !== "'" && (x.quoted || LITERAL.test(x.c)))) {
    return `'${chars.map((x) => x.c).join('')}'`;
  }
  let out = '';
  let open = false;
  for (const { c, quoted } of chars) {
    if (c === '') continue;
    const bare = !quoted || (LITERAL.test(c) && !(first && c === '='));
    if (bare) {
      if (open) out += "'";
      open = false;
      out += c;
    } else if (c === "'") {
      if (open) out += "'";
      open = false;
      out += "\\'";
    } else {
      if (!open) out += "'";
      open = true;
      out += c;
    }
  }
  if (open) out += "'";
  if (out === '') return "''";
  // A quoted keyword in command position is a command name; bare it would be the keyword.
  if (first && RESERVED.has(out) && chars.some((x) => x.quoted)) return `'${out}'`;
  return out;
}

const RESERVED = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'case',
  'esac',
  'for',
  'select',
  'while',
  'until',
  'do',
  'done',
  'in',
  'function',
  'time',
  'coproc',
  'declare',
  'local',
  'export',
  'readonly',
  'typeset',
  'nameref',
  'let',
]);

/**
 * Parses a command for an "always allow" rule: ok with its canonical words when it is exactly
 * one simple command, else the reason it can never be bound by a rule. Never throws.
 */
export function normalizeCommand(command: string): CommandShape {
  const src = typeof command === 'string' ? command : String(command);
  if (src.length > MAX_COMMAND) return { ok: false, reason: NOT_MATCHABLE.long };
  try {
    const file = parse(src);
    if (items(file.Last).length) throw new NotMatchable(NOT_MATCHABLE.comment);
    const stmts = items(file.Stmts);
    if (stmts.length === 0) throw new NotMatchable(NOT_MATCHABLE.empty);
    if (stmts.length > 1) throw new NotMatchable(NOT_MATCHABLE.list);
    const st = stmts[0]!;
    if (items(st.Comments).length) throw new NotMatchable(NOT_MATCHABLE.comment);
    if (st.Background) throw new NotMatchable(NOT_MATCHABLE.background);
    if (st.Coprocess) throw new NotMatchable(NOT_MATCHABLE.background);
    if (st.Negated) throw new NotMatchable(NOT_MATCHABLE.negated);
    if (items(st.Redirs).length) throw new NotMatchable(NOT_MATCHABLE.redirect);
    const cmd = st.Cmd;
    switch (nodeType(cmd)) {
      case 'CallExpr':
        break;
      case 'BinaryCmd':
        throw new NotMatchable(
          cmd.Op === OP_PIPE || cmd.Op === OP_PIPE_ALL
            ? NOT_MATCHABLE.pipe
            : cmd.Op === OP_AND || cmd.Op === OP_OR
              ? NOT_MATCHABLE.list
              : NOT_MATCHABLE.compound,
        );
      case '':
        throw new NotMatchable(NOT_MATCHABLE.empty);
      default:
        throw new NotMatchable(NOT_MATCHABLE.compound);
    }
    if (items(cmd.Assigns).length) throw new NotMatchable(NOT_MATCHABLE.assignment);
    const args = items(cmd.Args);
    if (args.length === 0) throw new NotMatchable(NOT_MATCHABLE.empty);
    const words = args.map((w, i) => render(wordChars(w), i === 0));
    return { ok: true, words, text: words.join(' ') };
  } catch (e) {
    if (e instanceof NotMatchable) return { ok: false, reason: e.message };
    return { ok: false, reason: NOT_MATCHABLE.parse };
  }
}

/**
 * Whether a canonical word is a plain operand: no option (does not start with "-") and nothing the
 * shell would expand (no unquoted glob, brace or tilde). Only plain operands may fill a position a
 * rule marks as variable, and only a plain operand's position may be marked.
 */
export function isPlainOperand(word: string): boolean {
  if (word.startsWith('-') || word.startsWith("'-")) return false;
  let quoted = false;
  for (let i = 0; i < word.length; i++) {
    const c = word[i]!;
    if (quoted) {
      if (c === "'") quoted = false;
      continue;
    }
    if (c === "'") quoted = true;
    else if (c === '\\')
      i++; // \' : a quoted quote
    else if (!LITERAL.test(c)) return false;
  }
  return true;
}
