/**
 * The secret/PII guard: finds credentials and personal data in text before it
 * reaches a model provider, a tool, a log line or a reply, and replaces them
 * with stable placeholders that can be mapped back.
 *
 *  - scanText: findings (kind, span, class), sorted, non-overlapping. Rules live
 *    in ./secret-rules.ts: vendor token formats (prefix + shape + placeholder
 *    filter), PEM/age private keys, JWTs (decoded header/payload), URLs with a
 *    password, "credential-ish name = generated-looking value" (key-name words +
 *    Shannon entropy + character classes), cards (IIN + length + Luhn), IBANs
 *    (country length + mod-97), US SSNs (SSA validity rules); phones and e-mail
 *    addresses only when the contact class is asked for.
 *  - Redactor: same value → same placeholder ("[REDACTED:openai_key#1]") for the
 *    Redactor's lifetime; restore() puts the originals back.
 *
 * Spans cover the secret itself, not its key name: `DB_PASSWORD=hunter2X9!`
 * reports only `hunter2X9!`; `postgres://app:pw@db/x` reports only `pw` (kind
 * connection_string), so redacted text keeps its shape and host names.
 * What is deliberately not reported (documented examples, publishable keys,
 * placeholders, default credentials) is listed at the top of ./secret-rules.ts.
 */
import { readFileSync } from 'node:fs';
import { type FindingClass, RULES, type Rule } from './secret-rules.js';

export type SecretKind = string;

export interface Finding {
  kind: SecretKind;
  start: number;
  end: number;
  /** 'secret' | 'pii' | 'contact' */
  class: FindingClass;
}

export interface ScanOptions {
  /** Credentials, tokens, keys, connection strings. Default true. */
  secrets?: boolean;
  /** card_number, iban, ssn. Default true. */
  pii?: boolean;
  /** phone, email. Default false. */
  contact?: boolean;
}

export { MESSAGE_SECRET_POLICIES, type MessageSecretPolicy, type SecretPolicy } from './secret-policies.js';

interface Candidate extends Finding {
  priority: number;
}

function enabled(cls: FindingClass, opts: ScanOptions): boolean {
  if (cls === 'secret') return opts.secrets !== false;
  if (cls === 'pii') return opts.pii !== false;
  return opts.contact === true;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One pass over the text finds every vendor prefix at a left token boundary (or after a JSON "\n" escape). */
const PREFIX_RULES = new Map<string, Rule[]>();
for (const r of RULES) for (const p of r.prefixes ?? []) PREFIX_RULES.set(p, [...(PREFIX_RULES.get(p) ?? []), r]);
const ALL_PREFIXES = [...PREFIX_RULES.keys()].sort((a, b) => b.length - a.length);
const PREFIX_RE = new RegExp(String.raw`(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt]))(?:` + ALL_PREFIXES.map(escapeRe).join('|') + ')', 'g');

function prefixStarts(text: string): Map<Rule, number[]> {
  const starts = new Map<Rule, number[]>();
  PREFIX_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = PREFIX_RE.exec(text))) {
    const hit = m[0];
    // Every shorter prefix that also matches here is a prefix of the longest one that did.
    for (const p of ALL_PREFIXES) {
      if (p.length > hit.length || !hit.startsWith(p)) continue;
      for (const r of PREFIX_RULES.get(p)!) {
        const arr = starts.get(r);
        if (arr) {
          if (arr[arr.length - 1] !== m.index) arr.push(m.index);
        } else starts.set(r, [m.index]);
      }
    }
    PREFIX_RE.lastIndex = m.index + 1;
  }
  return starts;
}

/** Findings sorted by start, non-overlapping (the more specific kind wins an overlap, then the longer span). */
export function scanText(text: string, opts: ScanOptions = {}): Finding[] {
  if (!text) return [];
  const lower = text.toLowerCase(); // needle pre-filter only (indices never taken from it)
  const cands: Candidate[] = [];
  const starts = opts.secrets !== false ? prefixStarts(text) : new Map<Rule, number[]>();
  for (const rule of RULES) {
    if (!enabled(rule.cls, opts)) continue;
    if (rule.needles && !rule.needles.some((n) => lower.includes(n))) continue;
    const emit = (kind: string, start: number, end: number) => {
      if (end > start) cands.push({ kind, start, end, class: rule.cls, priority: rule.priority });
    };
    if (rule.scan) {
      rule.scan(text, emit);
      continue;
    }
    const re = rule.re!;
    const at = rule.prefixes ? (starts.get(rule) ?? []) : null;
    let k = 0;
    re.lastIndex = 0;
    let lastEnd = 0;
    for (;;) {
      let m: RegExpExecArray | null;
      if (at) {
        // sticky regex, tried only where one of its prefixes starts a token
        while (k < at.length && at[k]! < lastEnd) k++;
        if (k >= at.length) break;
        re.lastIndex = at[k++]!;
        m = re.exec(text);
        if (!m) continue;
        lastEnd = m.index + m[0].length;
      } else {
        m = re.exec(text);
        if (!m) break;
        if (m[0].length === 0) {
          re.lastIndex++;
          continue;
        }
      }
      const span = m.indices?.[rule.group ?? 0];
      if (!span) continue;
      const [start, end] = span;
      const verdict = rule.check ? rule.check(text.slice(start, end), text, start, end, m) : true;
      if (verdict === false) continue;
      emit(typeof verdict === 'string' ? verdict : rule.kind, start, end);
    }
  }
  return resolveOverlaps(cands);
}

function resolveOverlaps(cands: Candidate[]): Finding[] {
  cands.sort((a, b) => b.priority - a.priority || b.end - b.start - (a.end - a.start) || a.start - b.start);
  const kept: Candidate[] = []; // sorted by start, disjoint
  for (const c of cands) {
    // first kept index with start >= c.start
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kept[mid]!.start < c.start) lo = mid + 1;
      else hi = mid;
    }
    const prev = kept[lo - 1];
    const next = kept[lo];
    if (prev && prev.end > c.start) continue;
    if (next && next.start < c.end) continue;
    kept.splice(lo, 0, c);
  }
  return kept.map(({ kind, start, end, class: cls }) => ({ kind, start, end, class: cls }));
}

const PLACEHOLDER_RE = /\[REDACTED:([a-z0-9_]+)#(\d+)\]/g;

/**
 * Replaces findings with stable placeholders: the same secret value always gets the same
 * placeholder within one Redactor, e.g. "[REDACTED:openai_key#1]", so a model can still refer
 * to "the key" consistently and the operator can map back. Keeps a map value→placeholder.
 */
export class Redactor {
  readonly #opts: ScanOptions;
  readonly #byValue = new Map<string, string>();
  readonly #byPlaceholder = new Map<string, { value: string; kind: string }>();
  readonly #counters = new Map<string, number>();

  constructor(opts: ScanOptions = {}) {
    this.#opts = { ...opts };
  }

  /** What this Redactor looks for. */
  get options(): Readonly<ScanOptions> {
    return this.#opts;
  }

  /** Distinct values seen so far. */
  get size(): number {
    return this.#byValue.size;
  }

  /** Findings are reported against the input text (not the redacted one). */
  redact(text: string): { text: string; findings: Finding[] } {
    const findings = scanText(text, this.#opts);
    if (!findings.length) return { text, findings };
    let out = '';
    let pos = 0;
    for (const f of findings) {
      out += text.slice(pos, f.start) + this.#placeholder(text.slice(f.start, f.end), f.kind);
      pos = f.end;
    }
    out += text.slice(pos);
    return { text: out, findings };
  }

  /**
   * Put the original values back (for tool arguments the model produced from placeholders).
   * Unknown placeholders are left as they are. With `{ json: true }` values are JSON-string-escaped,
   * for placeholders that sit inside JSON string literals.
   *
   * Caution: placeholders are guessable ("…#1"), so a prompt-injected model can ask for any of
   * them. Restore only into tool calls the policy trusts with that secret (its own service),
   * never into arbitrary URLs or outgoing messages.
   */
  restore(text: string, opts: { json?: boolean } = {}): string {
    if (!this.#byPlaceholder.size) return text;
    return text.replace(PLACEHOLDER_RE, (ph) => {
      const e = this.#byPlaceholder.get(ph);
      if (!e) return ph;
      return opts.json ? JSON.stringify(e.value).slice(1, -1) : e.value;
    });
  }

  /** The operator's map back: placeholder → kind and original value. */
  entries(): Array<{ placeholder: string; kind: string; value: string }> {
    return [...this.#byPlaceholder].map(([placeholder, e]) => ({ placeholder, kind: e.kind, value: e.value }));
  }

  #placeholder(value: string, kind: string): string {
    const known = this.#byValue.get(value);
    if (known) return known;
    const n = (this.#counters.get(kind) ?? 0) + 1;
    this.#counters.set(kind, n);
    const ph = `[REDACTED:${kind}#${n}]`;
    this.#byValue.set(value, ph);
    this.#byPlaceholder.set(ph, { value, kind });
    return ph;
  }
}

/** One-shot helper used by the CLI: `switchboard moat scan` prints {findings:[{kind,start,end}], redacted}. */
export function scanAndRedact(text: string, opts?: ScanOptions): { findings: Finding[]; redacted: string } {
  const r = new Redactor(opts).redact(text);
  return { findings: r.findings, redacted: r.text };
}

/** Lines of a corpus file without blank lines and `#` comment lines. */
export function loadLines(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
}

/** true.txt: `kind<TAB>text` per line. */
export function loadSecretCorpus(path: string): Array<{ kind: string; text: string }> {
  return loadLines(path).map((l, i) => {
    const tab = l.indexOf('\t');
    if (tab <= 0) throw new Error(`${path}: entry ${i + 1} has no "kind<TAB>text" shape: ${l.slice(0, 60)}`);
    return { kind: l.slice(0, tab).trim(), text: l.slice(tab + 1) };
  });
}
