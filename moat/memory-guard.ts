/**
 * Memory guard: a durable memory write (a note the agent keeps across
 * conversations) is allowed only when it is
 *  - not empty, and at most `maxChars` long (default 500);
 *  - not instruction-like (prompt injection aimed at future conversations) —
 *    checked before evidence: a note that is an injection is refused even when
 *    the user or a tool said exactly that;
 *  - free of secrets (injected detector, or a small built-in one);
 *  - supported by evidence in this conversation: the note's content words
 *    overlap a user message or a tool output (pronouns, "user"/"I" and
 *    preference verbs ignored, so "user prefers dark mode" is supported by
 *    "I like dark mode"); numbers and names in the note must appear in the
 *    evidence, and a negated note needs negated evidence.
 */
import { stripSpecialTokens } from './untrusted.js';

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
// Injection

/** Zero-width and bidi-control characters, Unicode tag characters: hidden text. */
const HIDDEN_CHARS = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|[\u{E0000}-\u{E007F}]/u;

const INJECTION_PATTERNS: Array<[RegExp, string]> = [
  [/\b(?:ignore|disregard|forget|override|bypass|skip|drop)\b[\s\w,'-]{0,40}?\b(?:instructions?|rules|prompts?|directions|directives|guidelines|guardrails|policies|policy|restrictions|constraints|safety|programming|context|commands)\b/, 'asks to ignore instructions'],
  [/\bdisregard\b/, 'asks to disregard something'],
  [/\b(?:forget|ignore)\s+(?:everything|all\s+(?:that|of\s+(?:that|this)|above)|what\s+you\s+(?:were|have\s+been)\s+told)\b/, 'asks to forget what came before'],
  [/\b(?:always|only|never)\s+(?:reply|respond|answer|say|write|output|print|start|begin|end|include|append|add|use|call|run|execute|send|forward|recommend|mention|link|tell|obey|comply|agree|refuse)\b/, 'standing order to the assistant'],
  [/\bfrom\s+now\s+on\b/, 'standing order ("from now on")'],
  [/\b(?:going|moving)\s+forward,?\s+(?:you|always|never|reply|respond|answer)\b/, 'standing order ("going forward")'],
  [/\b(?:in\s+(?:all|every)\s+(?:future\s+)?(?:conversations?|chats?|sessions?|replies|responses|answers)|in\s+future\s+(?:conversations?|chats?|sessions?))\b/, 'standing order for future conversations'],
  [/\b(?:whenever|every\s+time|each\s+time)\s+(?:the\s+user|someone|anyone|you|they|he|she)\s+(?:asks?|says?|mentions?|types?|writes?|sends?|requests?)\b/, 'trigger for future behaviour'],
  [/\byou(?:\s+are|'re)\s+now\b/, 'role reassignment ("you are now")'],
  [/\byou\s+(?:will|shall|must|should)\s+now\b/, 'role reassignment'],
  [/\byour\s+(?:new\s+)?(?:instructions|rules|role|task|goal|purpose|directive|persona|identity|name)\s+(?:is|are)\b/, 'role reassignment'],
  [/\byou\s+(?:must|shall|have\s+to|are\s+required\s+to|need\s+to)\s+(?:always|never|now|ignore|obey|follow|comply|reply|respond|answer|not|only|do|say|pretend|act|forget|reveal|send|forward|run|execute)\b/, 'order to the assistant ("you must …")'],
  [/\b(?:the\s+)?(?:assistant|ai|model|bot|chatbot|llm|agent)\s+(?:must|shall|should\s+always|should\s+never|is\s+required\s+to|has\s+to|will\s+now)\b/, 'order to the assistant'],
  [/\bsystem\s*(?:prompt|message|instructions?|override|note|update)\s*[:=]/, 'system-prompt marker'],
  [/\b(?:reveal|print|show|ignore|new|update|change|override|replace|leak|repeat)\s+(?:the\s+|your\s+|my\s+)?system\s+(?:prompt|message|instructions?)\b/, 'targets the system prompt'],
  [/(?:^|\n|[.!?]\s)\s*(?:system|assistant|developer)\s*:/, 'chat-role prefix'],
  [/\[\s*(?:system|assistant|developer|inst|sys|admin|instructions?)\s*\]/, 'chat-role marker'],
  [/<\s*\/?\s*(?:system|instructions?|assistant|developer|admin|prompt|im_start|im_end|sys)\s*>/, 'hidden-instruction tag'],
  [/#{2,}\s*(?:system|instructions?|new\s+instructions?|admin|override)\b/, 'instruction header'],
  [/\b(?:new|updated|additional|hidden|secret|real|true)\s+(?:instructions?|rules|directives?|orders)\b/, 'new instructions'],
  [/\b(?:begin|start|end)\s+(?:of\s+)?(?:hidden\s+|secret\s+|system\s+)?(?:instructions?|prompt)\b/, 'hidden-instruction marker'],
  [/<!--[\s\S]*?-->/, 'hidden HTML comment'],
  [/\bnote\s+to\s+(?:the\s+)?(?:ai|assistant|model|llm|bot|agent|chatbot|gpt|claude)\b/, 'note addressed to the model'],
  [/\b(?:attention|hey|dear|important(?:\s+for)?)\s*[,:!]?\s+(?:the\s+)?(?:ai|assistant|model|llm|bot|agent|chatbot|gpt|claude)\b/, 'message addressed to the model'],
  [/\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|show|let|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to|alert|warn|notify)\s+(?:the\s+)?(?:user|users|human|owner|them|him|her|anyone)\b/, 'hides something from the user'],
  [/\b(?:do\s+not|don'?t|never)\s+(?:reveal|mention|say|disclose|admit|explain|show)\s+(?:\w+\s+){0,3}?to\s+(?:the\s+)?(?:user|users|human|owner)\b/, 'hides something from the user'],
  [/\bwithout\s+(?:telling|informing|asking|notifying|alerting)\s+(?:the\s+)?(?:user|users|human|owner|them|him|her|anyone)\b/, 'hides something from the user'],
  [/\b(?:keep|hide)\s+(?:this|it|that)\s+(?:secret|hidden|confidential)?\s*from\s+(?:the\s+)?(?:user|users|human|owner)\b/, 'hides something from the user'],
  [/\b(?:reveal|print|output|show|leak|dump|repeat|send)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|instructions|hidden\s+prompt|initial\s+prompt|api\s+keys?|secrets?|credentials|environment\s+variables|env)\b/, 'asks to leak the prompt or secrets'],
  [/\b(?:exfiltrate|jailbreak|jailbroken|prompt\s+injection)\b/, 'injection vocabulary'],
  [/\b(?:send|forward|upload|post|copy|leak|email)\s+(?:all|every|the\s+whole|the\s+entire|the\s+full)?\s*(?:of\s+)?(?:the\s+|their\s+|the\s+user'?s\s+)?(?:conversations?|chat\s+history|chats|messages|emails|memory|memories|files|history|data|contacts|passwords|credentials)\s+to\b/, 'exfiltration order'],
  [/\b(?:act|behave|respond|speak)\s+as\s+(?:if\s+you\s+(?:are|were)|an?\s+(?:unfiltered|unrestricted|uncensored|evil|different)|dan\b)/, 'role-play jailbreak'],
  [/\bpretend\s+(?:to\s+be|that\s+you|you\s+are|you're)\b/, 'role-play jailbreak'],
  [/\b(?:role-?play|roleplay)\s+as\b/, 'role-play jailbreak'],
  [/\bdo\s+anything\s+now\b/, 'jailbreak persona'],
  [/\b(?:enable|enter|activate|switch\s+(?:in)?to|turn\s+on|unlock|are\s+(?:now\s+)?(?:in\s+)?|act\s+as|become|you'?re\s+(?:now\s+)?(?:in\s+)?)\s*(?:the\s+|a\s+)?(?:dan|developer\s+mode|god\s+mode|admin\s+mode|sudo\s+mode|unrestricted\s+mode|jailbreak\s+mode|evil\s+mode)\b/, 'jailbreak persona'],
  [/\b(?:answer|respond|reply|act|operate|behave|talk|speak|work|mode|assistant|ai|model|chatbot|bot|llm|you)\b[\w\s,'-]{0,30}?\b(?:no|without(?:\s+any)?|free\s+(?:of|from))\s+(?:restrictions|filters|limits|limitations|guidelines|rules|censorship|safety\s+(?:checks|filters|rules|guidelines))\b/, 'asks to drop restrictions'],
  [/\b(?:unfiltered|uncensored|unrestricted)\b/, 'asks to drop restrictions'],
  [/\bexecute\s+(?:the\s+)?(?:following|this|these)\b/, 'asks to execute something'],
  [/\b(?:curl|wget)\s+\S+\s*\|\s*(?:sh|bash)\b/, 'piped download-and-run'],
  [/\b(?:obey|comply\s+with)\s+(?:these|the\s+following|this|my|all)\b/, 'order to obey'],
  [/\bnew\s+rule\b/, 'new rule'],
];

function normalizeForScan(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/[\u2018\u2019\u02BC]/g, "'")
    .replace(/[\u201C\u201D]/g, '"')
    .replace(/\s+/g, ' ')
    .toLowerCase();
}

/** Why the note is instruction-like, or undefined. */
export function findInjection(note: string): string | undefined {
  if (HIDDEN_CHARS.test(note)) return 'contains hidden (zero-width, bidi or tag) characters';
  if (stripSpecialTokens(note) !== note) return 'contains chat-template special tokens';
  // Compare on a copy with hidden characters and separators flattened.
  const text = normalizeForScan(note);
  if (stripSpecialTokens(text) !== text) return 'contains chat-template special tokens';
  for (const [re, why] of INJECTION_PATTERNS) if (re.test(text)) return why;
  return undefined;
}

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
  (
    // articles, pronouns, auxiliaries, prepositions, conjunctions
    'a an the this that these those it its it\'s i i\'m i\'ve i\'d i\'ll me my mine myself we we\'re our ours us you your yours ' +
    'you\'re yourself he him his she her hers they them their theirs user user\'s users person human owner assistant ' +
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
