// A small getopt for the classifier's option tables: finds the options of a command line that a
// table names, in every spelling the tools accept: `--opt=value`, `--opt value`, unique prefixes
// of long options (getopt_long), `-x value`, `-xvalue`, short clusters (`-zxI prog`), single-dash
// words (`zip -TT cmd`, `gdb -ex cmd`, `openssl -in f`), old-style letter clusters (`tar cIf prog
// a.tar`) and `+cmd` operands (less, vim).
import type { Arg } from './command-args.js';

export interface OptionSpec<K extends string = string> {
  /** Short letters, each a spelling of this option. */
  short?: string;
  /** Long names, without the dashes. */
  long?: string[];
  /** Single-dash words that are one option (`-TT`, `-ex`, `-fprint`). */
  words?: string[];
  kind: K;
  /** What the value is, for reasons ("compress program"). */
  what: string;
  /** The option takes no value (curl -O, ssh -A). */
  flag?: boolean;
  /** The value is optional and, when given, attached (`-O[pager]`, `--html[=browser]`). */
  optional?: boolean;
  /** Only values with this prefix count, and it is stripped (`exec=` of tar --checkpoint-action). */
  prefix?: string;
  /** The option takes two words and the second is the value (jq --slurpfile NAME FILE). */
  pair?: boolean;
}

export interface OptionTable<K extends string = string> {
  /** Short letters that take a value, beyond the table's own (so clusters split right). */
  argShort?: string;
  /** Long options that take a value as the next word, beyond the table's own. */
  argLong?: string[];
  /** Long options that take the next two words (jq --arg NAME VALUE). */
  argLong2?: string[];
  /** Long options may be shortened to a unique prefix (getopt_long, git, less). */
  abbrev?: boolean;
  /** The first word may be a dash-less cluster of letters (tar cvf). */
  oldStyle?: boolean;
  /** A single dash also introduces long options (gdb -eval-command=x, openssl -in). */
  singleDashLong?: boolean;
  /** Options end at the first operand (ssh host cmd -o x: the -o is the remote command's). */
  stopAtOperand?: boolean;
  /** A `+text` operand is this option (less +cmd, vim +cmd). */
  plus?: OptionSpec<K>;
  options: OptionSpec<K>[];
}

export interface OptionHit<K extends string = string> {
  spec: OptionSpec<K>;
  /** The option as written (`--to-command`, `-I`, `-TT`). */
  spelling: string;
  value: string;
  /** Index of the argument the value came from (for callers that want the Arg). */
  at: number;
}

function takesValue(spec: OptionSpec | undefined): boolean {
  return !!spec && !spec.flag;
}

function byLong<K extends string>(t: OptionTable<K>, name: string): OptionSpec<K> | undefined {
  const exact = t.options.find((o) => o.long?.includes(name));
  if (exact || !t.abbrev || name.length < 3) return exact;
  const cands = t.options.filter((o) => o.long?.some((l) => l.startsWith(name)));
  return cands.length === 1 ? cands[0] : undefined;
}

/** Finds every option of `table` in `args`. */
export function scanOptions<K extends string>(table: OptionTable<K>, args: Arg[]): OptionHit<K>[] {
  const hits: OptionHit<K>[] = [];
  const shortSpec = (c: string): OptionSpec<K> | undefined => table.options.find((o) => o.short?.includes(c));
  const push = (spec: OptionSpec<K>, spelling: string, value: string | undefined, at: number): void => {
    if (value === undefined) return;
    if (spec.prefix !== undefined) {
      if (!value.startsWith(spec.prefix)) return;
      value = value.slice(spec.prefix.length);
    }
    hits.push({ spec, spelling, value, at });
  };
  let i = 0;
  const first = args[0]?.text ?? '';
  if (table.oldStyle && first && !first.startsWith('-') && /^[A-Za-z]+$/.test(first)) {
    let next = 1;
    for (const c of first) {
      const spec = shortSpec(c);
      const takes = spec ? takesValue(spec) : (table.argShort ?? '').includes(c);
      if (!takes) {
        if (spec) push(spec, `-${c}`, '', 0);
        continue;
      }
      const at = next++;
      if (spec) push(spec, `-${c}`, args[at]?.text, at);
    }
    i = next;
  }
  for (; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '--') break;
    if (t.startsWith('--') && t.length > 2) {
      const eq = t.indexOf('=');
      const name = eq < 0 ? t.slice(2) : t.slice(2, eq);
      const spec = byLong(table, name);
      if (spec) {
        if (spec.flag) push(spec, `--${name}`, '', i);
        else if (eq >= 0) push(spec, `--${name}`, t.slice(eq + 1), i);
        else if (spec.optional) push(spec, `--${name}`, '', i);
        else if (spec.pair) {
          push(spec, `--${name}`, args[i + 2]?.text, i + 2);
          i += 2;
        } else {
          push(spec, `--${name}`, args[i + 1]?.text, i + 1);
          i++;
        }
      } else if (eq < 0 && table.argLong2?.includes(name)) i += 2;
      else if (eq < 0 && table.argLong?.includes(name)) i++;
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      const word = table.options.find((o) => o.words?.includes(t) || o.words?.some((w) => t.startsWith(`${w}=`)));
      if (word) {
        const w = word.words!.find((x) => t === x || t.startsWith(`${x}=`))!;
        if (word.flag) push(word, w, '', i);
        else if (t.length > w.length) push(word, w, t.slice(w.length + 1), i);
        else {
          push(word, w, args[i + 1]?.text, i + 1);
          i++;
        }
        continue;
      }
      if (table.singleDashLong) {
        const eq = t.indexOf('=');
        const name = eq < 0 ? t.slice(1) : t.slice(1, eq);
        const spec = name.length > 1 ? byLong(table, name) : undefined;
        if (spec) {
          if (spec.flag) push(spec, `-${name}`, '', i);
          else if (eq >= 0) push(spec, `-${name}`, t.slice(eq + 1), i);
          else {
            push(spec, `-${name}`, args[i + 1]?.text, i + 1);
            i++;
          }
          continue;
        }
        if (name.length > 1 && table.argLong?.includes(name) && eq < 0) {
          i++;
          continue;
        }
      }
      for (let j = 1; j < t.length; j++) {
        const c = t[j]!;
        const spec = shortSpec(c);
        if (spec?.optional) {
          push(spec, `-${c}`, t.slice(j + 1), i);
          break;
        }
        if (takesValue(spec) || (!spec && (table.argShort ?? '').includes(c))) {
          const attached = t.slice(j + 1);
          if (attached) {
            if (spec) push(spec, `-${c}`, attached, i);
          } else {
            if (spec) push(spec, `-${c}`, args[i + 1]?.text, i + 1);
            i++;
          }
          break;
        }
        if (spec) push(spec, `-${c}`, '', i);
      }
      continue;
    }
    if (table.plus && t.startsWith('+') && t.length > 1) {
      push(table.plus, '+', t.slice(1), i);
      continue;
    }
    if (table.stopAtOperand) break;
  }
  return hits;
}

/** Operands (non-option words) under `table`'s parsing rules; options it names are skipped with their values. */
export function scanOperands(table: OptionTable, args: Arg[]): Arg[] {
  const valueAt = new Set(scanOptions(table, args).map((h) => h.at));
  const out: Arg[] = [];
  const shortSpec = (c: string): OptionSpec | undefined => table.options.find((o) => o.short?.includes(c));
  let i = 0;
  const first = args[0]?.text ?? '';
  if (table.oldStyle && first && !first.startsWith('-') && /^[A-Za-z]+$/.test(first)) {
    i = 1;
    for (const c of first) if (takesValue(shortSpec(c)) || (!shortSpec(c) && (table.argShort ?? '').includes(c))) i++;
  }
  for (; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '--') {
      out.push(...args.slice(i + 1));
      break;
    }
    if (valueAt.has(i) && !(t.startsWith('-') && t.length > 1)) continue;
    if (t.startsWith('--') && t.length > 2) {
      const name = t.slice(2).split('=')[0]!;
      if (!t.includes('=')) {
        if (table.argLong2?.includes(name) || byLong(table, name)?.pair) i += 2;
        else if (table.argLong?.includes(name) || takesValue(byLong(table, name))) {
          if (!byLong(table, name)?.optional) i++;
        }
      }
      continue;
    }
    if (t.startsWith('-') && t.length > 1) {
      const word = table.options.find((o) => o.words?.includes(t));
      if (word) {
        if (!word.flag) i++;
        continue;
      }
      if (table.singleDashLong && t.length > 2 && (byLong(table, t.slice(1)) || table.argLong?.includes(t.slice(1)))) {
        if (!t.includes('=') && !byLong(table, t.slice(1))?.flag) i++;
        continue;
      }
      for (let j = 1; j < t.length; j++) {
        const c = t[j]!;
        const spec = shortSpec(c);
        if (spec?.optional) break;
        if (takesValue(spec) || (!spec && (table.argShort ?? '').includes(c))) {
          if (j === t.length - 1) i++;
          break;
        }
      }
      continue;
    }
    if (table.plus && t.startsWith('+') && t.length > 1) continue;
    out.push(args[i]!);
    if (table.stopAtOperand) {
      out.push(...args.slice(i + 1));
      break;
    }
  }
  return out;
}
