// What an operator is shown of a tool call before deciding: all of it, visibly.
//
// Nothing is cut silently and nothing stays invisible: control characters (new lines, tabs,
// ANSI escapes...) become escapes (`\n`, `\t`, `\x1b`), invisible and direction-changing
// characters (zero-width spaces and joiners, bidi overrides, BOM, tag characters, unusual spaces)
// become `\u{200B}`-style escapes, runs of spaces become `␠×300` and runs of the same escape
// `\n×40`. A literal backslash that would read as one of these escapes is doubled (`\\n`), so
// every escape means what it says. Text longer than the budget keeps its head and tail around a
// marker saying how much is not shown here, and where it is shown in full.

/** Characters that render as nothing (or nearly) without being Unicode format/space characters. */
const INVISIBLE_EXTRA = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x180b, 0x180c, 0x180d, 0x180e, 0x180f, 0x2800, 0x3164, 0xffa0, 0x2420]);
// Format (Cf), line/paragraph separators, spaces other than ' ', private use, unassigned, lone surrogates.
const INVISIBLE = /^[\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Co}\p{Cn}\p{Cs}]$/u;
const CONTROL_NAMES: Record<number, string> = { 0x0a: '\\n', 0x09: '\\t', 0x0d: '\\r' };

interface Token {
  /** What is shown. */
  shown: string;
  /** How many UTF-16 units of the original text it stands for. */
  units: number;
  /** Same-kind runs collapse: spaces and escapes. */
  run?: string;
}

function tokenOf(ch: string, next: string | undefined): Token {
  const cp = ch.codePointAt(0)!;
  if (ch === ' ') return { shown: ' ', units: 1, run: '␠' };
  if (cp < 0x20 || cp === 0x7f || (cp >= 0x80 && cp < 0xa0)) {
    const e = CONTROL_NAMES[cp] ?? `\\x${cp.toString(16).padStart(2, '0')}`;
    return { shown: e, units: 1, run: e };
  }
  if (INVISIBLE.test(ch) || INVISIBLE_EXTRA.has(cp) || (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef)) {
    const e = `\\u{${cp.toString(16).toUpperCase().padStart(4, '0')}}`;
    return { shown: e, units: ch.length, run: e };
  }
  // A backslash that would read as an escape of ours is doubled.
  if (ch === '\\' && next !== undefined && /[ntrxu\\]/.test(next)) return { shown: '\\\\', units: 1 };
  return { shown: ch, units: ch.length };
}

function tokens(text: string): Token[] {
  const chars = Array.from(text);
  const raw = chars.map((c, i) => tokenOf(c, chars[i + 1]));
  const out: Token[] = [];
  for (let i = 0; i < raw.length; ) {
    const t = raw[i]!;
    let j = i + 1;
    if (t.run) while (j < raw.length && raw[j]!.run === t.run) j++;
    const n = j - i;
    const threshold = t.run === '␠' ? 2 : 3;
    if (t.run && n >= threshold) {
      out.push({ shown: `${t.run}×${n}`, units: raw.slice(i, j).reduce((s, x) => s + x.units, 0) });
    } else for (let k = i; k < j; k++) out.push(raw[k]!);
    i = j;
  }
  return out;
}

/** The whole text with every invisible or control character, and every run of spaces, made visible. */
export function visibleText(text: string): string {
  return tokens(text)
    .map((t) => t.shown)
    .join('');
}

export interface ShowOptions {
  /** At most about this many characters are shown; the rest is collapsed into a marker. */
  max?: number;
  /** Where the full text is: named in the marker. */
  fullAt?: string;
}

export const DEFAULT_SHOW_MAX = 500;

/** The text made visible, collapsed around a marker when longer than `max` (never silently cut). */
export function showText(text: string, opts: ShowOptions = {}): string {
  const max = Math.max(80, opts.max ?? DEFAULT_SHOW_MAX);
  const toks = tokens(text);
  const total = toks.reduce((s, t) => s + t.shown.length, 0);
  if (total <= max) return toks.map((t) => t.shown).join('');
  const headBudget = Math.floor(max * 0.65);
  const tailBudget = max - headBudget;
  let head = 0;
  let used = 0;
  while (head < toks.length && used + toks[head]!.shown.length <= headBudget) used += toks[head++]!.shown.length;
  let tail = toks.length;
  used = 0;
  while (tail > head && used + toks[tail - 1]!.shown.length <= tailBudget) used += toks[--tail]!.shown.length;
  const hidden = toks.slice(head, tail).reduce((s, t) => s + t.units, 0);
  const where = opts.fullAt ? `, shown in full by ${opts.fullAt}` : '';
  return `${toks
    .slice(0, head)
    .map((t) => t.shown)
    .join('')}…[${hidden} more characters${where}]…${toks
    .slice(tail)
    .map((t) => t.shown)
    .join('')}`;
}

/** A Markdown code span that holds any text (backticks inside included). */
export function codeSpan(s: string): string {
  let longest = 0;
  for (const m of s.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const fence = '`'.repeat(longest + 1);
  const pad = s.startsWith('`') || s.endsWith('`') || s.startsWith(' ') || s.endsWith(' ') ? ' ' : '';
  return `${fence}${pad}${s}${pad}${fence}`;
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * The parts of a call's arguments an operator reads: the command line of a shell call (and
 * its other arguments, if any), or the arguments as JSON.
 */
export function callParts(args: unknown): { command?: string; rest?: string } {
  if (args && typeof args === 'object' && !Array.isArray(args) && typeof (args as { command?: unknown }).command === 'string') {
    const { command, ...rest } = args as { command: string } & Record<string, unknown>;
    return { command, ...(Object.keys(rest).length ? { rest: json(rest) } : {}) };
  }
  return { rest: json(args) };
}

/** The call's arguments in full, made visible (for `approvals show`, the console, the HTTP API). */
export function visibleCall(args: unknown): string {
  const p = callParts(args);
  if (p.command === undefined) return visibleText(p.rest ?? '');
  return p.rest ? `${visibleText(p.command)}  (with ${visibleText(p.rest)})` : visibleText(p.command);
}

/** The call's arguments for a request message: Markdown code spans, visible, collapsed past `max`. */
export function describeCall(args: unknown, opts: ShowOptions = {}): string {
  const p = callParts(args);
  if (p.command === undefined) return codeSpan(showText(p.rest ?? '', opts));
  const cmd = codeSpan(showText(p.command, opts));
  return p.rest ? `${cmd} (with ${codeSpan(showText(p.rest, { ...opts, max: 200 }))})` : cmd;
}

/** Where the full text of approval `code` can be read. */
export function fullTextAt(code: string): string {
  return `switchboard approvals show ${code} and in the console`;
}
