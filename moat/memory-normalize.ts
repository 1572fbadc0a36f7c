/**
 * Normalization for the memory guard's injection classifier: undoes the
 * tricks that make an instruction look like something else to a phrase
 * match, so the features in ./memory-injection.ts see plain lower-case words.
 *
 * Two views of a note:
 *  - `plain`: NFKC (full-width and mathematical letters, ligatures), hidden
 *    characters removed (zero-width, bidi controls, soft hyphen, Unicode tag
 *    characters), Cyrillic/Greek/IPA look-alike letters mapped to the Latin
 *    letters they imitate, quotes straightened, lower case, spaces collapsed.
 *  - `decoded`: `plain` with the spelling tricks undone too: letters spaced
 *    out or separated by dots, dashes or underscores ("i g n o r e",
 *    "i.g.n.o.r.e") joined; leetspeak (0→o 1→i/l 3→e 4→a 5→s 7→t @→a $→s …)
 *    and repeated letters ("ignooore") mapped back where that gives a word of
 *    the classifier's vocabulary; camelCase and run-together words
 *    ("IgnoreAllPreviousInstructions", "ignoreallprevious") split into
 *    vocabulary words; text smuggled in tag characters spelled out.
 *
 * Spelling fixes are vocabulary-guided: a token changes only when the result
 * is a word the classifier knows ("us3r" → "user", "8am" stays "8am"), so
 * numbers, codes and names in innocent notes are left as they were.
 */

export type Trick = 'hidden' | 'confusables' | 'leetspeak' | 'spacing' | 'repeats' | 'joined' | 'smuggled';

export interface NormalizedNote {
  plain: string;
  decoded: string;
  /** The tricks found (and undone) in the note. */
  tricks: Set<Trick>;
  /** Number of hidden characters removed (zero-width joiners inside emoji sequences are not counted). */
  hiddenChars: number;
  /** Words that mix Latin with Cyrillic/Greek look-alike letters ("іgnоrе"). */
  mixedScriptWords: number;
}

// ---------------------------------------------------------------------------
// Hidden characters

/** Zero-width, bidi controls, invisible operators, soft hyphen, Mongolian vowel separator, BOM. */
const HIDDEN = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\u3164\uFEFF\uFFA0]/u;
const HIDDEN_G = new RegExp(HIDDEN.source, 'gu');
/** Unicode tag characters (U+E0000–E007F): invisible, and able to spell ASCII text. */
const TAGS_G = /[\u{E0000}-\u{E007F}]/gu;
const PICTO = /\p{Extended_Pictographic}/u;

/** True for the zero-width joiner inside an emoji sequence (👨‍👩‍👧), which is not hidden text. */
function emojiJoiner(s: string, i: number): boolean {
  if (s[i] !== '\u200D') return false;
  const before = [...s.slice(Math.max(0, i - 3), i)];
  const after = [...s.slice(i + 1, i + 4)];
  const prev = before.filter((c) => c !== '\uFE0F').pop();
  const next = after[0];
  return !!prev && !!next && PICTO.test(prev) && PICTO.test(next);
}

// ---------------------------------------------------------------------------
// Look-alike letters (the common Cyrillic, Greek, Armenian and IPA imitations of Latin letters)

const CONFUSABLES: Record<string, string> = {
  // Cyrillic lower case
  а: 'a',
  в: 'b',
  е: 'e',
  ё: 'e',
  һ: 'h',
  і: 'i',
  ї: 'i',
  ј: 'j',
  к: 'k',
  м: 'm',
  н: 'h',
  о: 'o',
  р: 'p',
  с: 'c',
  т: 't',
  у: 'y',
  х: 'x',
  ѕ: 's',
  ԁ: 'd',
  ԛ: 'q',
  ԝ: 'w',
  ү: 'y',
  ӏ: 'l',
  ɡ: 'g',
  ь: 'b',
  ѵ: 'v',
  п: 'n',
  г: 'r',
  // Cyrillic upper case
  А: 'a',
  В: 'b',
  Е: 'e',
  Ё: 'e',
  Һ: 'h',
  І: 'i',
  Ї: 'i',
  Ј: 'j',
  К: 'k',
  М: 'm',
  Н: 'h',
  О: 'o',
  Р: 'p',
  С: 'c',
  Т: 't',
  У: 'y',
  Х: 'x',
  Ѕ: 's',
  Ԁ: 'd',
  Ԛ: 'q',
  Ԝ: 'w',
  Ү: 'y',
  Ӏ: 'l',
  // Greek
  α: 'a',
  β: 'b',
  ε: 'e',
  η: 'n',
  ι: 'i',
  κ: 'k',
  ν: 'v',
  ο: 'o',
  ρ: 'p',
  τ: 't',
  υ: 'u',
  χ: 'x',
  γ: 'y',
  ω: 'w',
  ς: 's',
  ϲ: 'c',
  ϳ: 'j',
  Α: 'a',
  Β: 'b',
  Ε: 'e',
  Ζ: 'z',
  Η: 'h',
  Ι: 'i',
  Κ: 'k',
  Μ: 'm',
  Ν: 'n',
  Ο: 'o',
  Ρ: 'p',
  Τ: 't',
  Υ: 'y',
  Χ: 'x',
  Ϲ: 'c',
  // Armenian
  օ: 'o',
  ս: 'u',
  ո: 'n',
  ց: 'g',
  հ: 'h',
  զ: 'q',
  // Latin extensions and IPA that pass NFKC unchanged
  ɑ: 'a',
  ɩ: 'i',
  ı: 'i',
  ȷ: 'j',
  ʟ: 'l',
  ɪ: 'i',
  ɴ: 'n',
  ʀ: 'r',
  ʏ: 'y',
  ᴀ: 'a',
  ᴄ: 'c',
  ᴅ: 'd',
  ᴇ: 'e',
  ᴋ: 'k',
  ᴍ: 'm',
  ᴏ: 'o',
  ᴘ: 'p',
  ᴛ: 't',
  ᴜ: 'u',
  ᴠ: 'v',
  ᴡ: 'w',
  ᴢ: 'z',
  ꜱ: 's',
  ƅ: 'b',
  ɢ: 'g',
  ʜ: 'h',
  ℓ: 'l',
  ǀ: 'l',
};
const CONFUSABLE_G = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'gu');
const NON_LATIN_LOOKALIKE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'u');

// ---------------------------------------------------------------------------
// Vocabulary: the words the features are written in (and the small words around them).

const STRONG_WORDS = `
ignore ignored ignoring disregard disregarding forget forgetting override overriding overrule bypass bypassing skip skipping drop
previous prior above earlier preceding instruction instructions rule rules prompt prompts guideline guidelines guardrail guardrails
policy policies restriction restrictions constraint constraints safety filter filters directive directives command commands
system developer assistant model chatbot bot agent operator operators admin admins administrator administrators root sudo superuser
always never only reply replies respond responds answer answers say tell send forward email upload post leak reveal print output
dump repeat show obey comply follow execute run shell approve approval approvals approved confirmation confirm confirmed permission
permissions permitted allowed allow authorized authorised authorize entitled trusted trust verified verification privileges privilege
access unrestricted unfiltered uncensored unlimited jailbreak jailbroken exfiltrate pretend roleplay persona mode dan god unlock
enable disable disabled required needed necessary need grant granted whitelisted exempt everyone everything anything anyone
conversation conversations history messages message secrets secret credentials password passwords keys token tokens environment
files file contacts data memory notes future from now on going forward whenever every each users user staff new hidden real true
must shall should required stop cancel void apply applies outdated instead
`;
const SMALL_WORDS = `a an the this that these those it its i me my we our you your yours he him his she her they them their
is am are was were be been being has have had do does did will would can could may might of in on at to for from by with about as
into over under than then so and or but if not no any all some what which who when where why how here there up out off`;

/** The words spelling fixes may produce, and the strong ones a split of a run-together token must contain. */
export interface Lexicon {
  words: ReadonlySet<string>;
  strong: ReadonlySet<string>;
}

export const BASE_LEXICON: Lexicon = {
  words: new Set(`${STRONG_WORDS} ${SMALL_WORDS}`.split(/\s+/).filter(Boolean)),
  strong: new Set(STRONG_WORDS.split(/\s+/).filter((w) => w.length >= 3)),
};

/** The base lexicon with more words (the features' own vocabulary). */
export function extendLexicon(words: Iterable<string>, strong: Iterable<string> = []): Lexicon {
  return { words: new Set([...BASE_LEXICON.words, ...words, ...strong]), strong: new Set([...BASE_LEXICON.strong, ...strong]) };
}

// ---------------------------------------------------------------------------
// Spelling tricks

const LEET: Record<string, string[]> = {
  '0': ['o'],
  '1': ['i', 'l'],
  '3': ['e'],
  '4': ['a'],
  '5': ['s'],
  '7': ['t'],
  '8': ['b'],
  '9': ['g'],
  '6': ['g'],
  '@': ['a'],
  $: ['s'],
  '|': ['l', 'i'],
  '!': ['i'],
  '+': ['t'],
};
const LEET_CHAR = /[0-9@$|!+]/;

/** Every reading of a token with its leet characters replaced (at most 32). */
function leetReadings(tok: string): string[] {
  let out = [''];
  for (const ch of tok) {
    const subs = LEET[ch] ?? [ch];
    const next: string[] = [];
    for (const p of out) for (const s of subs) if (next.length < 32) next.push(p + s);
    out = next;
  }
  return out;
}

/** "ignooore" → "ignore", "alll" → "all": the readings with repeated letters collapsed. */
function unrepeat(w: string): string[] {
  if (!/(.)\1/.test(w)) return [];
  return [...new Set([w.replace(/(.)\1{2,}/g, '$1$1'), w.replace(/(.)\1+/g, '$1')])].filter((x) => x !== w);
}

/** Splits a run-together token into vocabulary words (fewest words wins), or undefined. */
function segment(w: string, lex: Lexicon): string[] | undefined {
  if (w.length < 6 || w.length > 80 || !/^[a-z]+$/.test(w)) return undefined;
  const best: Array<string[] | undefined> = new Array(w.length + 1).fill(undefined);
  best[0] = [];
  for (let i = 1; i <= w.length; i++) {
    for (let j = Math.max(0, i - 16); j < i; j++) {
      const prev = best[j];
      if (!prev) continue;
      const part = w.slice(j, i);
      if (part.length === 1 && part !== 'a' && part !== 'i') continue;
      if (!lex.words.has(part)) continue;
      if (!best[i] || best[i]!.length > prev.length + 1) best[i] = [...prev, part];
    }
  }
  const parts = best[w.length];
  // Only a split with a word of the classifier's own vocabulary in it ("to get her" is not one).
  return parts && parts.length >= 2 && parts.some((p) => lex.strong.has(p)) ? parts : undefined;
}

/** A token read back to a vocabulary word (or words) if a spelling trick hides one. */
/** Text-speak read back as words ("ur" → "your", "pls" → "please"). */
const TEXTSPEAK: Record<string, string> = {
  u: 'you',
  ur: 'your',
  r: 'are',
  pls: 'please',
  plz: 'please',
  plis: 'please',
  thx: 'thanks',
  n: 'and',
  b4: 'before',
  '2day': 'today',
  msg: 'message',
  msgs: 'messages',
  cmd: 'command',
  cmds: 'commands',
  instr: 'instructions',
  instrs: 'instructions',
  prev: 'previous',
  sys: 'system',
  admn: 'admin',
  perms: 'permissions',
  pw: 'password',
  pwd: 'password',
  ppl: 'people',
  ne1: 'anyone',
  every1: 'everyone',
  any1: 'anyone',
  some1: 'someone',
  w8: 'wait',
  l8r: 'later',
};

function decodeToken(tok: string, tricks: Set<Trick>, forceSegment: boolean, lex: Lexicon): string {
  if (lex.words.has(tok)) return tok;
  if (Object.hasOwn(TEXTSPEAK, tok)) return TEXTSPEAK[tok]!;
  // Separators inside a word: "ign.ore", "in-struc-tions".
  if (/^[a-z0-9@$]+(?:[._*~-][a-z0-9@$]+)+$/.test(tok)) {
    const parts = tok.split(/[._*~-]/);
    // A compound of words ("no-confirmation-needed") is read as its words, and is no trick.
    if (parts.every((p) => p.length >= 2 && lex.words.has(p))) return parts.join(' ');
    const back = decodeToken(parts.join(''), new Set(), false, lex);
    if (lex.words.has(back) || back.includes(' ')) return (tricks.add('spacing'), back);
  }
  // "rulez" → "rules".
  if (/[a-z]{3,}z$/.test(tok) && lex.words.has(tok.slice(0, -1) + 's')) return (tricks.add('leetspeak'), tok.slice(0, -1) + 's');
  const hasLetter = /[a-z]/.test(tok);
  if (LEET_CHAR.test(tok) && hasLetter) {
    for (const r of leetReadings(tok)) {
      if (lex.words.has(r)) return (tricks.add('leetspeak'), r);
      for (const u of unrepeat(r)) if (lex.words.has(u)) return (tricks.add('leetspeak').add('repeats'), u);
    }
    for (const r of leetReadings(tok)) {
      const parts = segment(r, lex);
      if (parts) return (tricks.add('leetspeak').add('joined'), parts.join(' '));
    }
    return tok;
  }
  if (!/^[a-z]+$/.test(tok)) return tok;
  for (const u of unrepeat(tok)) if (lex.words.has(u)) return (tricks.add('repeats'), u);
  if (forceSegment || tok.length >= 10) {
    const parts =
      segment(tok, lex) ??
      unrepeat(tok)
        .map((u) => segment(u, lex))
        .find(Boolean);
    if (parts) return (tricks.add('joined'), parts.join(' '));
  }
  return tok;
}

/** Single characters separated by one repeated separator: "i g n o r e", "i.g.n.o.r.e", "i-g-n-o-r-e". */
const SPACED = /(?<![\p{L}\p{N}])[a-z0-9@$](?<sep>[ ._*~·•+\/-])[a-z0-9@$](?:\k<sep>[a-z0-9@$])+(?![\p{L}\p{N}])/gu;

// ---------------------------------------------------------------------------

export function normalizeNote(note: string, lex: Lexicon = BASE_LEXICON): NormalizedNote {
  const tricks = new Set<Trick>();
  let s = note.normalize('NFKC');

  // Hidden characters: counted and removed; tag characters also spelled out (ASCII smuggling).
  let hiddenChars = 0;
  let smuggled = '';
  s = s.replace(TAGS_G, (c) => {
    hiddenChars++;
    const cp = c.codePointAt(0)! - 0xe0000;
    if (cp >= 0x20 && cp < 0x7f) smuggled += String.fromCharCode(cp);
    return '';
  });
  s = s.replace(HIDDEN_G, (c: string, off: number, str: string) => (c === '\u200D' && emojiJoiner(str, off) ? c : (hiddenChars++, '')));
  if (hiddenChars) tricks.add('hidden');
  if (smuggled.trim()) tricks.add('smuggled');

  // Look-alike letters: a word mixing them with Latin letters is a trick; all are mapped.
  let mixedScriptWords = 0;
  for (const w of s.match(/[\p{L}\p{M}]+/gu) ?? []) if (NON_LATIN_LOOKALIKE.test(w) && /[A-Za-z]/.test(w)) mixedScriptWords++;
  if (mixedScriptWords) tricks.add('confusables');
  s = s.replace(CONFUSABLE_G, (c) => CONFUSABLES[c] ?? c);
  // Drop combining marks left on Latin letters ("ïgnörè" reads "ignore" to a model too).
  const folded = s
    .normalize('NFD')
    .replace(/(?<=[A-Za-z])\p{M}+/gu, '')
    .normalize('NFC');

  const straight = folded
    .replace(/[\u2018\u2019\u201A\u201B\u02BC\u2032\u0060\u00B4]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F\u2033]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-');
  const plain = straight.replace(/\s+/g, ' ').trim().toLowerCase();

  // decoded: camelCase split (before lower-casing), spaced letters joined, tokens decoded.
  let d = straight.replace(/(?<=\p{Ll})(?=\p{Lu}\p{Ll})/gu, ' ').toLowerCase();
  const joinedRuns = new Set<string>();
  d = d.replace(SPACED, (run) => {
    const chars = run.replace(/[ ._*~·•+\/-]/g, '');
    if ((chars.match(/[a-z]/g) ?? []).length < 2) return run;
    if (chars.length >= 4) tricks.add('spacing');
    joinedRuns.add(chars);
    return ` ${chars} `;
  });
  d = d.replace(/\s+/g, ' ');
  const words = d.split(' ').map((chunk) => {
    // The word inside its punctuation; a trailing "!" is punctuation, a leading "$" or "@" is leetspeak.
    const m = /^([^\p{L}\p{N}@$|!+]*)(.*?)([^\p{L}\p{N}@$|+]*)$/u.exec(chunk);
    if (!m || !m[2]) return chunk;
    // A single letter with a dot is an initial ("J. R. Tolkien"), not text-speak.
    if (m[2].length === 1 && m[3].startsWith('.')) return chunk;
    return m[1] + decodeToken(m[2], tricks, joinedRuns.has(m[2]), lex) + m[3];
  });
  let decoded = words.join(' ').replace(/\s+/g, ' ').trim();
  if (smuggled.trim()) decoded += ` [hidden: ${smuggled.toLowerCase().replace(/\s+/g, ' ').trim()}]`;
  return { plain, decoded, tricks, hiddenChars, mixedScriptWords };
}
