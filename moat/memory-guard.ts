/**
 * Memory guard: a durable memory write (a note the agent keeps across
 * conversations) is allowed only when it is
 *  - not empty, and at most `maxChars` long (default 500);
 *  - not instruction-like (prompt injection aimed at future conversations:
 *    the classifier in ./memory-injection.ts, over text normalized by
 *    ./memory-normalize.ts) — checked before evidence: a note that is an
 *    injection is refused even when the user or a tool said exactly that;
 *  - free of secrets (injected detector, or a small built-in one);
 *  - supported by evidence in this conversation: the note's content words
 *    overlap a user message or a tool output (pronouns, "user"/"I" and
 *    preference verbs ignored, so "user prefers dark mode" is supported by
 *    "I like dark mode"); numbers and names in the note must appear in the
 *    evidence, and a negated note needs negated evidence.
 *
 * Operators' notes (CLI, HTTP API) go through checkOperatorNote: no evidence
 * is needed, but secrets are always refused and injection is refused unless
 * the operator forces it.
 */
import { findInjection } from './memory-injection.js';
import { scanText } from './secrets.js';

export interface MemoryEvidence {
  userMessages: string[];
  toolOutputs: string[];
}

export interface MemoryCheck {
  allowed: boolean;
  reason?: string;
  code?: 'no_evidence' | 'secret' | 'injection' | 'too_long' | 'empty';
}

export interface MemoryGuardOptions {
  maxChars?: number;
  findSecrets?: (text: string) => boolean;
}

// ---------------------------------------------------------------------------
// Injection: a classifier over normalized text (./memory-injection.ts).

export { classifyInjection, findInjection, type InjectionVerdict } from './memory-injection.js';

// ---------------------------------------------------------------------------
// Secrets

const SECRET_PATTERNS: RegExp[] = [
  /\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}/,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{20,}/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/,
  /\bAIza[0-9A-Za-z_-]{35}\b/,
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/,
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\bbearer\s+[A-Za-z0-9._~+/-]{20,}/i,
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:[^\s:/@]+@/i,
  /\b(?:password|passwd|passphrase|pwd|pass\s*code|passcode|pin(?:\s*code)?)\b\s*(?:is|was|=|:|->)\s*\S+/i,
  /\b(?:api[\s_-]?key|secret(?:[\s_-]?key)?|access[\s_-]?token|auth[\s_-]?token|token|client[\s_-]?secret|private[\s_-]?key)\b\s*(?:is|=|:)\s*['"]?[A-Za-z0-9_\-./+=]{12,}/i,
];

/** The built-in detector: obvious API keys, tokens, private keys and stated passwords. */
export function defaultFindSecrets(text: string): boolean {
  return SECRET_PATTERNS.some((re) => re.test(text));
}

// ---------------------------------------------------------------------------
// Evidence

const STOPWORDS = new Set(
  // articles, pronouns, auxiliaries, prepositions, conjunctions
  (
    "a an the this that these those it its it's i i'm i've i'd i'll me my mine myself we we're our ours us you your yours " +
    "you're yourself he him his she her hers they them their theirs user user's users person human owner assistant " +
    'is am are was were be been being has have had do does did doing will would shall should can could may might must ' +
    'of in on at to for from by with about as into onto over under than then so and or but if because while also too very ' +
    'just really quite some any all each every both such what which who whom whose when where why how there here ' +
    'up out off now currently again still already ' +
    // preference / relation verbs: paraphrase-tolerant
    'prefer prefers preferred preference preferences like likes liked love loves loved enjoy enjoys enjoyed want wants wanted ' +
    'favorite favourite fan into keen usually typically generally tends tend mostly ' +
    'name named called call go goes going use uses using used said says say told tell mentioned mention noted note stated ' +
    'remember remembered per according based always'
  ).split(/\s+/),
);

const NEGATIONS = new Set(
  "not no never don't doesn't didn't isn't aren't wasn't weren't won't can't cannot couldn't shouldn't hate hates hated dislike dislikes disliked avoid avoids nothing none neither nor without allergic".split(
    ' ',
  ),
);

function stem(w: string): string {
  let s = w.replace(/'s$/, '').replace(/'$/, '');
  if (s.length > 4 && s.endsWith('ies')) s = s.slice(0, -3) + 'y';
  else if (s.length > 5 && s.endsWith('ing')) s = s.slice(0, -3);
  else if (s.length > 4 && s.endsWith('ed')) s = s.slice(0, -2);
  else if (s.length > 3 && s.endsWith('es') && /(?:sh|ch|x|z|ss)es$/.test(s)) s = s.slice(0, -2);
  else if (s.length > 3 && s.endsWith('s') && !s.endsWith('ss') && !s.endsWith('us') && !s.endsWith('is')) s = s.slice(0, -1);
  return s;
}

interface Tok {
  raw: string;
  stem: string;
  /** A negation ("not", "don't", "hate", …) within the five words before, in the same clause. */
  neg: boolean;
}

function words(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .replace(/[\u2018\u2019]/g, "'")
      .toLowerCase()
      .match(/[\p{L}\p{N}][\p{L}\p{N}'@._+-]*[\p{L}\p{N}]|[\p{L}\p{N}]/gu) ?? []
  ).map((w) => w.replace(/[.]+$/, ''));
}

const isNegation = (w: string) => NEGATIONS.has(w) || w.endsWith("n't");

/** Content words with their negation flag: "I don't like cilantro" → cilantro (negated). */
function tokens(text: string): Tok[] {
  const out: Tok[] = [];
  for (const clause of text.split(/[,;:!?.()\n]|\s(?:but|so|although|though|however|whereas)\s/i)) {
    let lastNeg = -10;
    words(clause).forEach((w, i) => {
      if (isNegation(w)) lastNeg = i;
      else if (!STOPWORDS.has(w)) out.push({ raw: w, stem: stem(w), neg: i - lastNeg <= 5 });
    });
  }
  return out;
}

/** Words that must match exactly: numbers, and capitalized names (not sentence-initial). */
function keyWords(note: string): Set<string> {
  const keys = new Set<string>();
  const raw = note.normalize('NFKC').match(/[\p{L}\p{N}][\p{L}\p{N}'@._+-]*[\p{L}\p{N}]|[\p{L}\p{N}]/gu) ?? [];
  raw.forEach((w, i) => {
    const lw = w.toLowerCase().replace(/'s$/, '');
    if (STOPWORDS.has(lw) || NEGATIONS.has(lw)) return;
    if (/\d/.test(w)) keys.add(lw);
    else if (i > 0 && /^\p{Lu}/u.test(w) && !/^\p{Lu}+$/u.test(w)) keys.add(lw);
  });
  return keys;
}

function tokenMatch(a: Tok, b: Tok): boolean {
  if (a.neg !== b.neg) return false;
  if (a.stem === b.stem || a.raw === b.raw) return true;
  // Loose stems: "running"/"run", "organize"/"organization" (shared prefix ≥ 5, lengths close).
  const [x, y] = a.stem.length <= b.stem.length ? [a.stem, b.stem] : [b.stem, a.stem];
  return x.length >= 5 && y.startsWith(x) && y.length - x.length <= 4;
}

function coverage(note: Tok[], unit: Tok[]): number {
  if (note.length === 0) return 0;
  let hit = 0;
  for (const t of note) if (unit.some((u) => tokenMatch(t, u))) hit++;
  return hit / note.length;
}

function sentences(text: string): string[] {
  return text.split(/(?<=[.!?])\s+|\n+/).filter((s) => s.trim());
}

const COVERAGE = 0.6;

function supportedBy(note: string, evidence: MemoryEvidence): boolean {
  const noteToks = tokens(note);
  if (noteToks.length === 0) return false;
  const sources = [...evidence.userMessages, ...evidence.toolOutputs].filter((s) => typeof s === 'string' && s.trim());
  if (sources.length === 0) return false;
  const keys = keyWords(note);
  const keysIn = (text: string) => {
    const ws = new Set(words(text).map((w) => w.replace(/'s$/, '')));
    for (const k of keys) if (!ws.has(k)) return false;
    return true;
  };

  // One sentence (or one whole message) that says it; a negated word only matches a negated word.
  for (const src of sources) {
    for (const unit of [...sentences(src), src]) {
      if (coverage(noteToks, tokens(unit)) >= COVERAGE && keysIn(unit)) return true;
    }
  }
  // Facts gathered across messages: every content word said somewhere, with the same polarity.
  const all = tokens(sources.join('\n'));
  return noteToks.every((t) => all.some((u) => tokenMatch(t, u))) && keysIn(sources.join('\n'));
}

// ---------------------------------------------------------------------------

export function checkMemoryWrite(note: string, evidence: MemoryEvidence, opts: MemoryGuardOptions = {}): MemoryCheck {
  const maxChars = opts.maxChars ?? 500;
  if (typeof note !== 'string' || !note.trim()) return { allowed: false, code: 'empty', reason: 'the note is empty' };
  const injection = findInjection(note);
  if (injection) return { allowed: false, code: 'injection', reason: `the note is instruction-like: ${injection}` };
  const findSecrets = opts.findSecrets ?? defaultFindSecrets;
  if (findSecrets(note)) return { allowed: false, code: 'secret', reason: 'the note contains a secret (key, token or password)' };
  if (note.length > maxChars) return { allowed: false, code: 'too_long', reason: `the note is ${note.length} chars, over the ${maxChars}-char limit` };
  if (!supportedBy(note, evidence ?? { userMessages: [], toolOutputs: [] })) {
    return { allowed: false, code: 'no_evidence', reason: 'nothing the user said or a tool returned in this conversation supports the note' };
  }
  return { allowed: true };
}

export interface OperatorNoteCheck {
  allowed: boolean;
  code?: 'empty' | 'too_long' | 'secret' | 'injection';
  reason?: string;
  /** Set when an instruction-like note was let through by force. */
  forcedInjection?: string;
}

/**
 * An operator's note (written with the CLI or the HTTP API): secrets are
 * refused always (the project's scanner: moat/secrets.ts), instruction-like
 * notes unless `force` (an operator may mean a standing rule; it is then
 * still shown to the model as a note, not as an instruction).
 */
export function checkOperatorNote(note: string, opts: { force?: boolean; maxChars?: number } = {}): OperatorNoteCheck {
  const maxChars = opts.maxChars ?? 2000;
  if (typeof note !== 'string' || !note.trim()) return { allowed: false, code: 'empty', reason: 'the note is empty' };
  if (note.length > maxChars) return { allowed: false, code: 'too_long', reason: `the note is ${note.length} chars, over the ${maxChars}-char limit` };
  const secrets = scanText(note);
  if (secrets.length || defaultFindSecrets(note)) {
    const kinds = [...new Set(secrets.map((f) => f.kind))];
    const what = secrets.length && secrets.every((f) => f.class === 'pii') ? 'personal data' : 'a secret';
    return {
      allowed: false,
      code: 'secret',
      reason: `the note contains ${what}${kinds.length ? ` (${kinds.join(', ')})` : ' (key, token or password)'}; notes are shown to the model, so secrets are never kept in them`,
    };
  }
  const injection = findInjection(note);
  if (injection && !opts.force) return { allowed: false, code: 'injection', reason: `the note is instruction-like: ${injection}` };
  return injection ? { allowed: true, forcedInjection: injection } : { allowed: true };
}
