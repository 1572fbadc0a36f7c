/**
 * Honesty check: claims of action in the agent's final text, checked against
 * this turn's tool trace.
 *
 * A claim is a sentence in which the assistant states, as done in this turn,
 * an action only a tool could do: "I deleted `notes.txt`", "I've sent the email
 * to Bob", "I ran the tests and they pass", "Done — the PR is merged", "Your
 * preference is saved", "The tests pass", "Email sent.". Each claimed action
 * (normalized verb: delete, send, run, write, fetch, deploy, book, cancel, or a
 * caller-defined one) is matched to the trace through a verb → tool-keyword
 * map (tool-name tokens; for shell-like tools also the command in the args):
 *  - a matching call succeeded                     → supported, text untouched;
 *  - matching calls ran and every one failed        → contradicted;
 *    (test results: "the tests pass" when the run's output reports failures)
 *  - no call in the trace could have done it        → unsupported.
 * Contradicted and unsupported claims are corrected visibly: the sentence is
 * kept and followed by " [Correction: …]"; every other byte is unchanged.
 *
 * Precision first — a sentence that claims nothing is never changed. Not claims:
 * questions, plans and offers ("I will…", "I can… if you want"), conditionals and
 * hypotheticals, negations ("I did not send it"), descriptions of how things work
 * ("rm deletes files"), the user's or someone else's actions ("you deleted…"),
 * quotes ("…" and > blockquotes), code (``` fences and `inline code` are never
 * analysed or touched), earlier turns ("yesterday I sent…", "already",
 * "earlier"), habits ("I usually…"), and in-chat work an LLM does without tools
 * ("I wrote a poem", "I checked the math", "I updated the list below"): verbs
 * that can name text work need an object only a tool reaches (a file, a branch,
 * your calendar, `code`, a path…). When unsure, it is not a claim.
 */
import { loadLines } from './corpus.js';

export interface TraceEntry {
  tool: string;
  args?: unknown;
  ok: boolean;
  output?: string;
}

export interface ClaimFinding {
  sentence: string;
  /** Normalized verb, e.g. 'delete'. */
  action: string;
  verdict: 'contradicted' | 'unsupported';
  reason: string;
  tool?: string;
}

export interface ClaimCheck {
  findings: ClaimFinding[];
  /** Corrected text; identical to the input when there are no findings. */
  text: string;
}

export interface ClaimCase {
  text: string;
  trace: TraceEntry[];
  expect: 'contradicted' | 'unsupported' | 'supported' | 'none';
  /** What the case tests (corpus bookkeeping). */
  class?: string;
  /** The sentences that must get a correction; every other sentence must come through unchanged. */
  flag?: string[];
}

export interface ClaimOptions {
  /** Extra verb → tool-name keywords, merged into the built-in map (a new verb is recognized in its regular past form). */
  actionTools?: Record<string, string[]>;
}

// ---------------------------------------------------------------------------
// Actions and tools

/** Verb → tool-name keywords. A tool matches when one of its name tokens equals a keyword (or starts with one of ≥ 4 letters). */
export const DEFAULT_ACTION_TOOLS: Record<string, string[]> = {
  delete: ['rm', 'delete', 'remove', 'unlink', 'trash', 'rmdir', 'erase', 'purge', 'drop', 'destroy', 'del', 'forget', 'clear'],
  send: ['send', 'email', 'mail', 'message', 'post', 'notify', 'slack', 'sms', 'text', 'reply', 'forward', 'dm', 'tweet', 'publish', 'discord', 'telegram', 'whatsapp', 'twilio', 'sendgrid'],
  run: ['shell', 'exec', 'run', 'test', 'bash', 'terminal', 'command', 'cmd', 'script', 'sh', 'ci', 'npm', 'make', 'pytest', 'jest', 'vitest', 'install', 'restart', 'build', 'compile'],
  write: ['write', 'save', 'create', 'update', 'patch', 'edit', 'remember', 'memory', 'store', 'set', 'put', 'insert', 'upsert', 'add', 'append', 'mkdir', 'touch', 'move', 'rename', 'upload', 'modify', 'replace', 'note', 'config'],
  fetch: ['fetch', 'get', 'read', 'search', 'http', 'browse', 'browser', 'scrape', 'curl', 'wget', 'lookup', 'query', 'list', 'find', 'web', 'download', 'open', 'view', 'load', 'check', 'cat', 'recall', 'grep', 'ls', 'api', 'request'],
  deploy: ['deploy', 'merge', 'git', 'push', 'commit', 'release', 'publish', 'pr', 'ship', 'rollback', 'revert', 'tag'],
  book: ['calendar', 'book', 'schedule', 'reserve', 'event', 'meeting', 'appointment', 'reminder', 'invite', 'alarm', 'timer'],
  cancel: ['cancel', 'delete', 'remove', 'calendar', 'book', 'unsubscribe', 'refund', 'stop'],
};

/** Other names for the built-in actions (keys of an extra map may use them). */
const ACTION_ALIASES: Record<string, string> = {
  remove: 'delete', unlink: 'delete', erase: 'delete',
  email: 'send', message: 'send', post: 'send', notify: 'send', text: 'send',
  execute: 'run', exec: 'run', test: 'run', install: 'run',
  save: 'write', create: 'write', update: 'write', edit: 'write', remember: 'write',
  download: 'fetch', read: 'fetch', check: 'fetch', 'look up': 'fetch', lookup: 'fetch', search: 'fetch', get: 'fetch',
  merge: 'deploy', push: 'deploy', commit: 'deploy', release: 'deploy',
  schedule: 'book', reserve: 'book',
};

const SHELL_TOKENS = new Set(['shell', 'bash', 'sh', 'zsh', 'exec', 'terminal', 'cmd', 'command', 'powershell', 'pwsh', 'subprocess']);

/** What a shell command must contain to count as the action (args undefined → assume it could). */
const SHELL_ARGS: Record<string, RegExp | true | false> = {
  delete: /\b(?:rm|rmdir|unlink|del|shred|trash|delete|remove|drop)\b/i,
  send: /\b(?:mail|sendmail|mutt|curl|slack|twilio|send|notify)\b/i,
  run: true,
  write: /(?:>|\b(?:tee|cp|mv|touch|mkdir|sed\s+-i|echo|printf|write|save|create|patch|apply|install|cat\s*>|chmod|ln)\b)/i,
  fetch: /\b(?:curl|wget|cat|head|tail|less|more|grep|rg|ls|find|http|get|fetch|read|jq|git\s+(?:log|show|status|diff|fetch|pull))\b/i,
  deploy: /\b(?:git|deploy|kubectl|docker|helm|fly|vercel|netlify|heroku|publish|push|merge|commit|terraform|release)\b/i,
  book: false,
  cancel: /\b(?:cancel|kill|stop|rm|delete)\b/i,
};

/** Tool name → lowercase tokens: "mcp__github__merge_pull_request" → mcp, github, merge, pull, request; "sendEmail" → send, email. */
function nameTokens(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

function keywordHit(tokens: string[], keywords: string[]): boolean {
  return tokens.some((t) => keywords.some((k) => t === k || (k.length >= 4 && t.startsWith(k))));
}

function argsText(args: unknown): string | undefined {
  if (args === undefined || args === null) return undefined;
  if (typeof args === 'string') return args;
  try {
    return JSON.stringify(args);
  } catch {
    return String(args);
  }
}

interface Matcher {
  map: Record<string, string[]>;
}

function toolMatches(e: TraceEntry, action: string, m: Matcher, objectWords: string[]): boolean {
  const tokens = nameTokens(e.tool ?? '');
  if (keywordHit(tokens, m.map[action] ?? [action])) return true;
  // Reading/looking things up through a tool named after the thing: "I checked your calendar" ← calendar_events.
  if (action === 'fetch' && objectWords.some((w) => w.length >= 4 && tokens.some((t) => t === w || t === w.replace(/s$/, '')))) return true;
  if (tokens.some((t) => SHELL_TOKENS.has(t))) {
    const rule = SHELL_ARGS[action] ?? false;
    if (rule === true) return true;
    if (rule === false) return false;
    const a = argsText(e.args);
    return a === undefined || rule.test(a);
  }
  return false;
}

// ---------------------------------------------------------------------------
// Verb lexicon

type Req = 'inherent' | RegExp;

interface Verb {
  action: string;
  participle: string;
  req: Req;
  /** "sent you the list": the chat itself unless the object is an email/message/…; "saved you time". */
  youIsChat?: boolean;
}

const CODE = '[\\uE000\\uE001]';
const FILE_EXT = '\\b[\\w-]+\\.(?:txt|md|json|jsonl|csv|tsv|ya?ml|toml|log|ts|tsx|js|mjs|cjs|py|rb|go|rs|java|kt|c|h|cpp|html|css|xml|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|zip|tar|gz|sh|env|ini|conf|cfg|sql|db|sqlite|lock|bak)\\b';
const PATH = '(?:^|\\s)(?:~|\\.{1,2})?\\/[\\w.-]+';
const ARTIFACT = `${CODE}|${FILE_EXT}|${PATH}`;
const ext = (words: string): RegExp => new RegExp(`(?:\\b(?:${words})\\b|${ARTIFACT})`, 'i');

const EXT_DELETE = ext(
  'files?|folders?|director(?:y|ies)|dirs?|branch(?:es)?|repo(?:sitory|sitories|s)?|records?|rows?|database|db|emails?|messages?|' +
    'events?|meetings?|appointments?|reminders?|alarms?|preferences?|memor(?:y|ies)|account|keys?|containers?|images?|buckets?|backups?|logs?|cache|' +
    'tickets?|issues?|posts?|tweets?|webhooks?|cron\\s+jobs?|contacts?|tags?|releases?|deployments?|volumes?|snapshots?|indexes|index|pods?|vms?|instances?|drafts?',
);
const EXT_SEND = ext('emails?|messages?|replies|reply|thread|tickets?|comments?|issues?|reviews?|posts?|tweets?|dms?|texts?|sms|invites?|invitations?|slack|channel|inbox');
const EXT_RUN = ext(
  'tests?|test\\s+suite|suites?|specs?|scripts?|commands?|programs?|build|linter|lint|migrations?|quer(?:y|ies)|jobs?|pipelines?|benchmarks?|ci|checks|type-?checks?|typecheck|' +
    'npm|npx|yarn|pnpm|pytest|make|cargo|go\\s+test|jest|vitest|installer|tsc|eslint|prettier|formatter|seed|cron|workflow|playbook|container',
);
const EXT_TEST = ext('endpoint|api|fix|changes?|code|script|function|build|app|deployment|migration|integration|webhook|connection|server|service|login|page|site|feature|patch|branch|query');
const EXT_RESTART = ext('servers?|services?|app|application|containers?|pods?|daemon|process|bot|workers?|machine|computer|database|db|vm|instance|cluster|nginx|deployment|gateway|router');
const EXT_BUILD = ext('project|app|application|image|docker\\s+image|containers?|binary|bundle|package|artifacts?|site|docs');
const EXT_WRITE = ext(
  'files?|folders?|director(?:y|ies)|repo(?:sitory)?|branch(?:es)?|pull\\s+requests?|prs?|issues?|tickets?|calendar|events?|invites?|meetings?|appointments?|' +
    'reminders?|alarms?|timers?|preferences?|settings?|config(?:uration)?|memor(?:y|ies)|database|db|records?|rows?|spreadsheet|sheet|webhooks?|cron|jobs?|account|contacts?|' +
    'profile|wiki|readme|passwords?|env(?:ironment)?\\s+variables?|secrets?|labels?|tasks?\\s+in|todo\\s+list\\s+in|card|board|dashboard',
);
const EXT_FETCH = ext(
  'websites?|sites?|pages?|web\\s?pages?|urls?|links?|docs|documentation|logs?|files?|folders?|director(?:y|ies)|inbox|emails?|calendar|servers?|status|weather|forecast|' +
    'prices?|stocks?|repo(?:sitory)?|issues?|tickets?|prs?|pull\\s+requests?|database|db|endpoint|api|feed|dashboard|metrics|web|internet|online|news|headlines|' +
    'exchange\\s+rates?|scores?|flights?|orders?|notifications?|github|slack|jira|memory|notes|records?|spreadsheet|sheet',
);
const EXT_GIT = ext('lockfile|files?|branch(?:es)?|prs?|pull\\s+requests?|mrs?|merge\\s+requests?|changes?|fix(?:es)?|commits?|code|main|master|origin|remote|production|prod|staging|develop|repo(?:sitory)?|feature|patch|hotfix|migration');
const EXT_RELEASE = ext('versions?|releases?|v\\d[\\w.]*|packages?|builds?|updates?|hotfix|patch');
const EXT_BOOK = ext('meetings?|calls?|appointments?|events?|reminders?|sessions?|interviews?|demos?|syncs?|standups?|1:1|invites?|invitations?|jobs?|backups?|posts?|emails?|messages?|tweets?|deliver(?:y|ies)|flights?|tables?|rooms?|slots?|reservations?|cron|tasks?\\s+(?:for|at)|call');
const EXT_CANCEL = ext('meetings?|reservations?|bookings?|appointments?|events?|subscriptions?|orders?|flights?|jobs?|builds?|deployments?|invites?|invitations?|tickets?|plans?|accounts?|reminders?|alarms?|timers?|payments?|transfers?');
const EXT_API = ext('api|endpoint|webhook|service|function|tools?');
const EXT_PULL = ext('data|logs?|latest|changes|repo(?:sitory)?|branch|records?|report|metrics|numbers\\s+from|stats|emails?');
const CALENDARISH = /\b(?:calendar|meetings?|events?|appointments?|reminders?|alarms?|timers?|invites?|invitations?)\b/i;

function verbs(): Array<[string, Verb]> {
  const v = (action: string, participle: string, req: Req, youIsChat = false): Verb => ({ action, participle, req, youIsChat });
  const list: Array<[string, Verb]> = [
    // delete
    ['deleted', v('delete', 'deleted', EXT_DELETE)],
    ['removed', v('delete', 'removed', EXT_DELETE)],
    ['erased', v('delete', 'erased', EXT_DELETE)],
    ['wiped', v('delete', 'wiped', EXT_DELETE)],
    ['purged', v('delete', 'purged', EXT_DELETE)],
    ['unlinked', v('delete', 'unlinked', EXT_DELETE)],
    ['trashed', v('delete', 'trashed', EXT_DELETE)],
    ['destroyed', v('delete', 'destroyed', EXT_DELETE)],
    ['dropped', v('delete', 'dropped', ext('tables?|database|db|indexes|index|collections?|columns?'))],
    ['emptied', v('delete', 'emptied', ext('trash|bin|recycle\\s+bin|folder|inbox|cache|queue|bucket|table|database|db'))],
    ['cleared', v('delete', 'cleared', ext('cache|logs?|inbox|queue|database|db|memor(?:y|ies)|history|notifications?|reminders?'))],
    // send
    ['sent', v('send', 'sent', 'inherent', true)],
    ['emailed', v('send', 'emailed', 'inherent', true)],
    ['texted', v('send', 'texted', 'inherent')],
    ['messaged', v('send', 'messaged', 'inherent')],
    ['pinged', v('send', 'pinged', 'inherent')],
    ['notified', v('send', 'notified', 'inherent')],
    ['forwarded', v('send', 'forwarded', 'inherent', true)],
    ['posted', v('send', 'posted', 'inherent', true)],
    ['mailed', v('send', 'mailed', 'inherent', true)],
    ['tweeted', v('send', 'tweeted', 'inherent')],
    ["dm'd", v('send', "DM'd", 'inherent')],
    ['dmed', v('send', 'DMed', 'inherent')],
    ['replied', v('send', 'replied', EXT_SEND)],
    // run
    ['ran', v('run', 'run', EXT_RUN)],
    ['executed', v('run', 'executed', EXT_RUN)],
    ['re-ran', v('run', 're-run', EXT_RUN)],
    ['reran', v('run', 're-run', EXT_RUN)],
    ['tested', v('run', 'tested', EXT_TEST)],
    ['installed', v('run', 'installed', 'inherent')],
    ['uninstalled', v('run', 'uninstalled', 'inherent')],
    ['upgraded', v('run', 'upgraded', ext('packages?|dependenc(?:y|ies)|deps|node|npm|python|libraries|library|version|server|database|db|cluster'))],
    ['restarted', v('run', 'restarted', EXT_RESTART)],
    ['rebooted', v('run', 'rebooted', EXT_RESTART)],
    ['rebuilt', v('run', 'rebuilt', EXT_BUILD)],
    ['built', v('run', 'built', EXT_BUILD)],
    ['compiled', v('run', 'compiled', EXT_BUILD)],
    ['migrated', v('run', 'migrated', ext('database|db|schema|tables?|data\\s+to'))],
    // write
    ['saved', v('write', 'saved', 'inherent', true)],
    ['stored', v('write', 'stored', 'inherent')],
    ['created', v('write', 'created', EXT_WRITE)],
    ['wrote', v('write', 'written', EXT_WRITE)],
    ['updated', v('write', 'updated', EXT_WRITE)],
    ['edited', v('write', 'edited', EXT_WRITE)],
    ['modified', v('write', 'modified', EXT_WRITE)],
    ['changed', v('write', 'changed', EXT_WRITE)],
    ['added', v('write', 'added', EXT_WRITE)],
    ['patched', v('write', 'patched', EXT_WRITE)],
    ['renamed', v('write', 'renamed', EXT_WRITE)],
    ['moved', v('write', 'moved', EXT_WRITE)],
    ['uploaded', v('write', 'uploaded', 'inherent')],
    ['set up', v('write', 'set up', EXT_WRITE)],
    ['set', v('write', 'set', EXT_WRITE)],
    ['configured', v('write', 'configured', EXT_WRITE)],
    ['inserted', v('write', 'inserted', EXT_WRITE)],
    ['appended', v('write', 'appended', EXT_WRITE)],
    ['overwrote', v('write', 'overwritten', EXT_WRITE)],
    ['recorded', v('write', 'recorded', EXT_WRITE)],
    ['made a note', v('write', 'noted', 'inherent')],
    ['committed to memory', v('write', 'saved', 'inherent')],
    // fetch
    ['fetched', v('fetch', 'fetched', 'inherent')],
    ['downloaded', v('fetch', 'downloaded', 'inherent')],
    ['retrieved', v('fetch', 'retrieved', 'inherent')],
    ['scraped', v('fetch', 'scraped', 'inherent')],
    ['browsed', v('fetch', 'browsed', 'inherent')],
    ['googled', v('fetch', 'googled', 'inherent')],
    ['looked up', v('fetch', 'looked up', 'inherent')],
    ['searched', v('fetch', 'searched', 'inherent')],
    ['queried', v('fetch', 'queried', 'inherent')],
    ['checked', v('fetch', 'checked', EXT_FETCH)],
    ['read', v('fetch', 'read', EXT_FETCH)],
    ['opened', v('fetch', 'opened', EXT_FETCH)],
    ['visited', v('fetch', 'visited', EXT_FETCH)],
    ['looked at', v('fetch', 'looked at', EXT_FETCH)],
    ['pulled', v('fetch', 'pulled', EXT_PULL)],
    ['called', v('fetch', 'called', EXT_API)],
    // deploy
    ['deployed', v('deploy', 'deployed', 'inherent')],
    ['merged', v('deploy', 'merged', EXT_GIT)],
    ['pushed', v('deploy', 'pushed', EXT_GIT)],
    ['committed', v('deploy', 'committed', EXT_GIT)],
    ['released', v('deploy', 'released', EXT_RELEASE)],
    ['published', v('deploy', 'published', 'inherent')],
    ['rolled back', v('deploy', 'rolled back', 'inherent')],
    ['reverted', v('deploy', 'reverted', EXT_GIT)],
    ['tagged', v('deploy', 'tagged', EXT_RELEASE)],
    ['opened a pr', v('deploy', 'opened', 'inherent')],
    ['opened a pull request', v('deploy', 'opened', 'inherent')],
    // book
    ['booked', v('book', 'booked', 'inherent')],
    ['reserved', v('book', 'reserved', 'inherent')],
    ['scheduled', v('book', 'scheduled', EXT_BOOK)],
    ['rescheduled', v('book', 'rescheduled', EXT_BOOK)],
    ['cancelled', v('cancel', 'cancelled', EXT_CANCEL)],
    ['canceled', v('cancel', 'canceled', EXT_CANCEL)],
    ['unsubscribed', v('cancel', 'unsubscribed', 'inherent')],
  ];
  return list;
}

const BASE_VERBS = verbs();

interface Lexicon {
  verbs: Map<string, Verb>;
  /** Alternation of verb forms, longest first. */
  alt: string;
  map: Record<string, string[]>;
  byParticiple: Map<string, Verb>;
  actRe: RegExp;
  andRe: RegExp;
  bareRe: RegExp;
  passRe: RegExp;
  fragRe: RegExp;
}

function pastForms(verb: string): string[] {
  const v = verb.toLowerCase();
  if (v.endsWith('e')) return [v + 'd'];
  if (/[^aeiou]y$/.test(v)) return [v.slice(0, -1) + 'ied'];
  const forms = [v + 'ed'];
  if (/[^aeiou][aeiou][bdgklmnprt]$/.test(v)) forms.push(v + v.at(-1) + 'ed');
  return forms;
}

function buildLexicon(extra?: Record<string, string[]>): Lexicon {
  const map: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(DEFAULT_ACTION_TOOLS)) map[k] = [...v];
  const verbsMap = new Map(BASE_VERBS);
  for (const [rawKey, kws] of Object.entries(extra ?? {})) {
    const key = rawKey.toLowerCase().trim();
    const canon = map[key] ? key : ACTION_ALIASES[key];
    const keywords = kws.map((k) => k.toLowerCase());
    if (canon) {
      map[canon] = [...new Set([...(map[canon] ?? []), ...keywords])];
      continue;
    }
    // A new action: recognized in its regular past form, as an inherently tool-only verb.
    map[key] = keywords.length ? keywords : [key];
    for (const form of pastForms(key)) if (!verbsMap.has(form)) verbsMap.set(form, { action: key, participle: form, req: 'inherent' });
  }
  const alt = escapeAlt([...verbsMap.keys()]);
  const byParticiple = new Map<string, Verb>();
  for (const v of verbsMap.values()) if (!byParticiple.has(v.participle.toLowerCase())) byParticiple.set(v.participle.toLowerCase(), v);
  const partAlt = escapeAlt([...byParticiple.keys()].filter((p) => !/\s/.test(p) || /^(?:set up|rolled back|looked up)$/.test(p)));
  const singleAlt = escapeAlt([...verbsMap.keys()].filter((k) => !/\s/.test(k)));
  return {
    verbs: verbsMap,
    alt,
    map,
    byParticiple,
    actRe: new RegExp(
      `^I(?:'ve|\\s+have)?(?:\\s+(?:just|now|also|then|successfully|finally|quickly|first|gone\\s+ahead\\s+and|went\\s+ahead\\s+and|went\\s+and|have))*\\s+(${alt})\\b`,
      'i',
    ),
    andRe: new RegExp(
      `(?:\\s*,\\s*(?:and\\s+|then\\s+|and\\s+then\\s+)?|\\s+(?:and|then|and\\s+then|and\\s+also)\\s+)(?:I(?:'ve|\\s+have)?\\s+)?(?:also\\s+|then\\s+|just\\s+)?(${alt})\\b`,
      'gi',
    ),
    bareRe: new RegExp(`^(${alt})\\b`, 'i'),
    passRe: new RegExp(
      `^((?:the|your|that|this|those|these|both|all(?:\\s+the)?|my|our)\\s+[^,;:]{1,60}?|it|they|everything|all\\s+of\\s+them)\\s+(has|have|is|are|was|were|'s|'re)((?:\\s+(?:now|just|all|also|been|successfully))*)\\s+(${partAlt})\\b`,
      'i',
    ),
    fragRe: new RegExp(
      `^((?:(?:the|your|my)\\s+)?[\\w\\uE000\\uE001./#@-]+(?:\\s+[\\w\\uE000\\uE001./#@-]+)?)\\s+(?:successfully\\s+)?(${singleAlt})\\b(\\s+(?:successfully|to|on|in|into|for|from|at)\\b[^,;]{0,40})?\\s*[.!]*\\s*$`,
      'i',
    ),
  };
}

let defaultLexicon: Lexicon | undefined;

// ---------------------------------------------------------------------------
// Masking and sentences

/** Same-length analysis copy: code and quotes become placeholder runs, fences and blockquotes become line breaks. */
function mask(text: string): string {
  let a = text.replace(/[\u2018\u2019\u02BC]/g, "'");
  const fill = (s: string, ch: string) => s.replace(/[^\n]/g, ch);
  // Fenced code blocks (``` or ~~~), to the closing fence or the end of the text.
  a = a.replace(/(^|\n)([ \t]*)(`{3,}|~{3,})[^\n]*(?:\n[\s\S]*?(?:\n[ \t]*\3[ \t]*(?=\n|$)|$)|$)/g, (m) => m.replace(/[^\n]/g, '\n'));
  // Inline code, including ``double``.
  a = a.replace(/(`+)[^`\n][\s\S]*?\1/g, (m) => (m.includes('\n\n') ? m : fill(m, '\uE000')));
  // URLs.
  a = a.replace(/\b(?:https?|ftp):\/\/[^\s<>()"'`]+[^\s<>()"'`.,;:!?]/gi, (m) => fill(m, '\uE000'));
  // Quotations: "…", “…”, «…».
  a = a.replace(/"[^"\n]{1,400}"|“[^”\n]{1,400}”|«[^»\n]{1,400}»/g, (m) => fill(m, '\uE001'));
  // Blockquote lines.
  a = a.replace(/(^|\n)[ \t]*>[^\n]*/g, (m) => m.replace(/[^\n]/g, '\n'));
  return a;
}

interface Span {
  start: number;
  end: number;
}

const ABBREVIATIONS = /(?:\b(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|st|no|approx|cf|incl|fig|jr|sr)|\b[a-z])\.$/i;

function sentenceSpans(a: string): Span[] {
  const spans: Span[] = [];
  let start = 0;
  const push = (s: number, e: number) => {
    let i = s;
    while (i < e && /\s/.test(a[i]!)) i++;
    let j = e;
    while (j > i && /\s/.test(a[j - 1]!)) j--;
    if (j > i) spans.push({ start: i, end: j });
  };
  for (let i = 0; i < a.length; i++) {
    const c = a[i]!;
    if (c === '\n') {
      push(start, i);
      start = i + 1;
      continue;
    }
    if (c === '.' || c === '!' || c === '?') {
      let j = i;
      while (j + 1 < a.length && /[.!?]/.test(a[j + 1]!)) j++;
      let k = j;
      while (k + 1 < a.length && /[)"'\]*_\uE001\u201D]/.test(a[k + 1]!)) k++;
      if (k + 1 >= a.length || /\s/.test(a[k + 1]!)) {
        if (c === '.' && j === i && ABBREVIATIONS.test(a.slice(Math.max(start, i - 8), i + 1))) continue;
        // "1. Deleted …": a list number, not a sentence.
        if (c === '.' && j === i && /^\s*\d{1,3}$/.test(a.slice(start, i))) continue;
        push(start, k + 1);
        start = k + 1;
        i = k;
      }
    }
  }
  push(start, a.length);
  return spans;
}

// ---------------------------------------------------------------------------
// Claim detection

interface Claim {
  action: string;
  participle: string;
  kind: 'act' | 'pass' | 'fail';
  /** Object noun phrase, original text, when one was found. */
  np?: string;
  objectWords: string[];
}

/** List markers, emphasis, check marks and emoji before a sentence. */
const LEAD = /^(?:[\s>*_#+•·\-–—]|\d{1,3}[.)]\s|\p{Extended_Pictographic}|\uFE0F|\u200D|[✓✔☑])*/u;
const BULLETED = /[-*+•✓✔☑]|\d[.)]|\p{Extended_Pictographic}/u;
const DISCOURSE =
  "(?:all\\s+done|done|finished|complete|ok(?:ay)?|sure(?:\\s+thing)?|alright|all\\s+right|great(?:\\s+news)?|good\\s+news|yes|yep|yeah|perfect|success|there\\s+you\\s+go|got\\s+it|understood|as\\s+requested|as\\s+you\\s+asked|as\\s+you\\s+requested|per\\s+your\\s+request|first(?:ly)?|then|next|finally|also|so|and|now|right|just\\s+now)";
/** Labels count as a prefix only with their colon or dash: "Update: …", "Changes — …". */
const LABEL = "(?:update|status|summary|results?|changes|here'?s\\s+what\\s+i\\s+did|here\\s+is\\s+what\\s+i\\s+did|what\\s+i\\s+did|progress|report)";
const PREFIX = new RegExp(`^(?:${DISCOURSE}(?:\\s*(?:[,:!—–]|\\s-\\s|\\.\\.\\.)\\s*|\\s+)|${LABEL}\\s*(?:[:—–]|\\s-\\s)\\s*)*`, 'i');
const LABEL_LED = new RegExp(`^\\s*${LABEL}\\s*(?:[:—–]|\\s-\\s)`, 'i');
const DONE_PREFIX = /^\s*(?:all\s+done|done|finished|complete|success)\b/i;
const PROCEDURAL_PREFIX = /^\s*(?:first(?:ly)?|then|next|finally|after\s+that|and)\b/i;

/** Anywhere in the sentence: earlier turns, habits, hypotheticals, meta talk. */
const SKIP_ANYWHERE = new RegExp(
  '\\b(?:' +
    [
      'yesterday', 'earlier', 'previously', 'formerly', 'before', 'ago', 'already', 'since', 'originally', 'once',
      "last\\s+(?:week|night|time|month|year|turn|session|conversation|chat|message|reply|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)(?!'s)",
      'the\\s+other\\s+day', 'this\\s+morning', 'in\\s+the\\s+past', 'back\\s+then', 'at\\s+the\\s+time',
      'in\\s+(?:our|my|your|a|the|an)\\s+(?:previous|last|earlier|prior|other|first|past)',
      'usually', 'typically', 'normally', 'generally', 'often', 'sometimes', 'always', 'never', 'rarely', 'routinely', 'regularly', 'automatically', 'by\\s+default',
      'every\\s+(?:time|day|week|morning|night|hour|month)', 'each\\s+time', 'whenever', 'many\\s+times', 'several\\s+times', 'a\\s+few\\s+times',
      'if', 'unless', 'whether', 'suppose', 'supposing', 'imagine', 'hypothetically', 'hypothetical', 'pretend', 'as\\s+if', 'in\\s+case', 'assuming', 'assume', 'when', 'as\\s+long\\s+as', 'provided', 'otherwise',
      'would', 'could', 'should', 'might',
      'for\\s+example', 'per\\s+(?:the|your|my|their|his|her)', 'screenshot', 'you\\s+(?:shared|pasted|posted|uploaded|showed|mentioned|quoted|sent\\s+me)', 'in\\s+your\\s+(?:paste|log|output|message)',
      'you\\s+(?:gave|provided|linked|attached|forwarded|shared|pasted|posted|uploaded|showed|mentioned|quoted|sent\\s+me)',
      'in\\s+this\\s+(?:conversation|chat|thread|session)', 'for\\s+(?:this|the)\\s+(?:conversation|chat|session)', 'for\\s+instance', 'e\\.g', 'example', 'says', 'said', 'told', 'claims?', 'claimed', 'according\\s+to', 'reportedly', 'supposedly', 'apparently', 'allegedly',
    ].join('|') +
    ')\\b',
  'i',
);

/** In the claim's own clause: negation, modality, future, attempts, hedges. */
const SKIP_CLAUSE = new RegExp(
  "(?:\\b(?:not|no|never|nothing|none|no\\s+longer|will|shall|can|cannot|must|going\\s+to|gonna|about\\s+to|plan(?:ned|ning)?\\s+to|want(?:ed)?\\s+to|need(?:ed)?\\s+to|tried|try|trying|attempt(?:ed|ing)?|failed|unable|let\\s+me|let's|pretend|wish|hope|maybe|perhaps|probably|think|believe|guess|above|below)\\b|n't\\b|'ll\\b|'d\\b)",
  'i',
);

/** Words that make a would-be passive subject a clause of its own ("this is how the file is deleted"). */
const NOT_IN_SUBJECT = /\b(?:is|are|was|were|be|been|being|how|what|why|when|where|which|who|whom|whose|if|can|will|would|should|could|may|might|must|do|does|did|has|have|had|not|you|he|she|they|we|someone|somebody)\b/i;

function clauseEnd(s: string, from: number): number {
  const rest = s.slice(from);
  const m = /[,;:]|\s(?:and|but|so|which|that|because|while|though|although|then)\s|\s[—–]\s|\s-\s|\(/i.exec(rest);
  return m ? from + m.index : s.length;
}

const DETERMINER = /^(?:the|your|my|our|that|this|those|these|both|all(?:\s+the)?|a|an|some|its|their|his|her)\s+/i;

/** The object noun phrase after a verb (or the subject before a passive), as original text. */
function nounPhrase(orig: string, a: string, from: number, to: number, bareNoun = false): string | undefined {
  const seg = a.slice(from, to);
  const lead = seg.length - seg.trimStart().length;
  const body = seg.slice(lead);
  const m = /^((?:(?:the|your|my|our|that|this|those|these|both|all(?:\s+the)?|a|an)\s+)?(?:[\w\uE000\uE001.'/@#:-]+\s+){0,3}?[\w\uE000\uE001.'/@#:-]+?)(?=\s+(?:to|from|in|into|on|onto|at|for|with|via|using|by|and|but|so|now|successfully|as|over|through|under)\b|[,;:!?]|\.(?:\s|$)|\s*$)/i.exec(
    body,
  );
  if (!m) return undefined;
  const s = from + lead;
  let np = orig.slice(s, s + m[1]!.length).trim().replace(/[.]+$/, '');
  if (!np || np.length > 60 || /\n/.test(np)) return undefined;
  const hasCode = /[\uE000\uE001]/.test(m[1]!);
  // "emailed Sarah the contract" → "the contract".
  const inner = /^[A-Z][\w'-]*\s+((?:the|a|an|your|my|our)\s+.+)$/.exec(np);
  if (inner) np = inner[1]!;
  if (/^(?:both|all)\b/i.test(np)) return undefined;
  if (DETERMINER.test(np)) return np[0]!.toLowerCase() + np.slice(1);
  if (hasCode) return np;
  if (bareNoun && /^[A-Za-z]/.test(np)) return 'the ' + np[0]!.toLowerCase() + np.slice(1);
  if (!/^[A-Z#@]/.test(np)) return undefined;
  return np;
}

function contentWords(s: string): string[] {
  return (s.toLowerCase().match(/[a-z][a-z0-9]+/g) ?? []).filter((w) => w.length >= 3);
}

function requirementMet(v: Verb, object: string): boolean {
  if (v.req === 'inherent') return true;
  return v.req.test(object);
}

const EMAILISH = /\b(?:emails?|e-mail|messages?|texts?|sms|dms?|invites?|invitations?|notifications?|slack|calendar|by\s+(?:email|mail|text|sms))\b/i;

/** "sent you the list", "posted the answer here", "saved you time": the chat itself, not a tool. */
function chatYou(v: Verb, object: string): boolean {
  if (!v.youIsChat) return false;
  const o = object.trim();
  if (v.participle === 'saved' && /^(?:you\b|the\s+best\b|(?:some|a\s+lot\s+of|lots\s+of)?\s*(?:time|money|effort|trouble|energy)\b)/i.test(o)) return true;
  // "I posted my answer in two parts": the assistant's own chat output.
  if (/^my\s+(?:answer|reply|response|message|explanation|summary|thoughts|notes?|previous|last|first|draft)\b/i.test(o)) return true;
  if (/\b(?:here|in\s+(?:this|the)\s+(?:chat|thread|conversation|reply|message))\b/i.test(o) && !EMAILISH.test(o)) return true;
  if (!/^you\b/i.test(o) && !/\bto\s+you\b/i.test(o)) return false;
  return !EMAILISH.test(o);
}

const TEST_SUBJECT =
  "(?:(?:all|both)\\s+(?:of\\s+)?(?:the\\s+)?(?:\\d+\\s+)?|the\\s+|\\d+\\s*(?:/\\s*\\d+\\s+|of\\s+\\d+\\s+)?|every\\s+|each\\s+)?(?:unit\\s+|integration\\s+|e2e\\s+|end-to-end\\s+|remaining\\s+|new\\s+|existing\\s+|updated\\s+)?(?:tests?|test\\s+suite|test\\s+run|specs?|suite|build|ci|ci\\s+pipeline|pipeline|checks|lint(?:er)?|type-?checks?|typecheck|test\\s+cases?)";
const TEST_PASS =
  '(?:(?:now\\s+|all\\s+|still\\s+)*(?:pass(?:es|ed)?|succeed(?:s|ed)?|(?:is|are)\\s+(?:now\\s+|all\\s+)*(?:green|passing|successful|clean)|completed\\s+successfully|ran\\s+clean|went\\s+green|came\\s+back\\s+green))';
const TEST_FAIL = '(?:(?:now\\s+|still\\s+)*(?:fail(?:s|ed)?|(?:is|are)\\s+(?:still\\s+)?(?:failing|red|broken)|broke))';
const TEST_RE = new RegExp(`^${TEST_SUBJECT}\\s+(?:(${TEST_PASS})|(${TEST_FAIL}))\\b`, 'i');
const AND_RESULT = new RegExp(
  `^\\s*,?\\s*(?:and|so)\\s+(?:now\\s+)?(?:they|it|everything|all\\s+of\\s+them|all\\s+\\d+|${TEST_SUBJECT})\\s+(?:(${TEST_PASS})|(${TEST_FAIL}))\\b`,
  'i',
);
/** Tools that can report test/CI results without running them here. */
const CI_TOKENS = ['ci', 'check', 'checks', 'status', 'github', 'gitlab', 'actions', 'pipeline', 'build', 'workflow', 'jenkins', 'circleci', 'buildkite'];

const BE_OR_MODAL = /\b(?:is|are|was|were|be|been|has|have|had|do|does|did|can|will|would|should|could|may|might|must|go|goes)\b/i;

function escapeAlt(forms: string[]): string {
  return [...new Set(forms)]
    .sort((x, y) => y.length - x.length)
    .map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'))
    .join('|');
}

/** "The tests pass. That's what the README claims." — the next sentence attributes the previous one. */
const ATTRIBUTES_PREVIOUS = /^(?:that'?s|that\s+is|this\s+is|or\s+so|so\s+(?:says|claims)|at\s+least\s+that'?s)\b[^.!?\n]{0,60}\b(?:what|says?|claims?|claimed|said|according|reports?|reported)\b/i;

function detectClaims(orig: string, a: string, span: Span, lex: Lexicon, next?: string): Claim[] {
  const s = a.slice(span.start, span.end);
  if (next !== undefined && ATTRIBUTES_PREVIOUS.test(next)) return [];
  if (/\?\s*[)"'\]*_\uE001]*\s*$/.test(s)) return [];
  if (SKIP_ANYWHERE.test(s)) return [];
  const lead = LEAD.exec(s)?.[0] ?? '';
  const bulleted = BULLETED.test(lead);
  const afterLead = s.slice(lead.length);
  const prefixLen = PREFIX.exec(afterLead)?.[0].length ?? 0;
  const prefix = afterLead.slice(0, prefixLen);
  const doneLed = DONE_PREFIX.test(prefix);
  const labelLed = LABEL_LED.test(prefix);
  const body0 = lead.length + prefixLen; // offset of the clause start within s
  const body = s.slice(body0);
  const endsWithColon = /:\s*$/.test(s);
  const claims: Claim[] = [];
  const at = (i: number) => span.start + i; // s-offset → text offset

  const addAct = (verbForm: string, verbEnd: number): boolean => {
    const v = lex.verbs.get(verbForm.toLowerCase().replace(/\s+/g, ' '));
    if (!v) return false;
    const end = clauseEnd(s, verbEnd);
    const object = s.slice(verbEnd, end);
    // "…, sent by Bob": a participle describing something, not an act.
    if (/^\s+by\s+(?!me\b|e-?mail|mail|text|sms|slack|phone)/i.test(object)) return false;
    if (chatYou(v, object)) return false;
    if (!requirementMet(v, object)) return false;
    if (SKIP_CLAUSE.test(object)) return false;
    // "I created a config file for you:" + content: showing text, not a tool claim.
    if (endsWithColon && v.req !== 'inherent' && (v.action === 'write' || v.action === 'fetch')) return false;
    let action = v.action;
    if (action === 'write' && CALENDARISH.test(object)) action = 'book';
    if (action === 'fetch' && /\b(?:my|own)\s+(?:memory|knowledge|training|mind)\b/i.test(object)) return false;
    const np = nounPhrase(orig, a, at(verbEnd), at(end));
    claims.push({ action, participle: v.participle, kind: 'act', np, objectWords: contentWords(object) });
    // "… and they pass"
    const r = AND_RESULT.exec(s.slice(end));
    if (r) claims.push({ action: 'run', participle: 'run', kind: r[1] ? 'pass' : 'fail', objectWords: [] });
    return true;
  };

  const addCoordinated = (from: number) => {
    // "…, sent the email and ran the tests": clean coordination only (nothing negating between).
    const andRe = lex.andRe;
    andRe.lastIndex = from;
    let n: RegExpExecArray | null;
    while ((n = andRe.exec(s))) {
      if (n[0].length === 0) andRe.lastIndex++;
      addAct(n[1]!, n.index + n[0].length);
    }
  };

  // A. "I (have|'ve) (just|now|…)* VERB …", and "… and (then|also)? VERB …".
  const m = lex.actRe.exec(body);
  if (m && /^I(?:'ve|\s+have)\b/i.test(m[0]) && /^[^.;:!?]*?\b(?:many|several|countless|numerous|dozens|hundreds|thousands|lots|plenty|plenty\s+of)\b/i.test(s.slice(body0 + m[0].length))) {
    // "I have deployed many services with this setup": experience, not this turn's work.
    return [];
  }
  if (m) {
    if (addAct(m[1]!, body0 + m[0].length)) addCoordinated(body0 + m[0].length);
    return dedupe(claims);
  }

  // E. Bulleted or "Done:" summaries without a subject: "- Deleted `old.log`", "✅ Sent the invite to Bob".
  if ((bulleted || doneLed || labelLed) && !BE_OR_MODAL.test(body)) {
    // The verb must take a clear object ("the …", "`x`", "Bob", "it", "to staging"): "Deleted files go to trash" is an adjective.
    const e = lex.bareRe.exec(body);
    const after = e ? body.slice(e[0].length) : '';
    const clearObject =
      /^\s+(?:the|a|an|your|my|all|both|two|three|\d+|it|them|this|that|these|those|to|from|on|in|into|for)\b/i.test(after) ||
      /^\s*[\uE000\uE001]/.test(after) ||
      /^\s+[A-Z#@]/.test(after) ||
      /^\s*[.!]?\s*$/.test(after);
    if (e && clearObject && !/:/.test(after)) {
      if (addAct(e[1]!, body0 + e[0].length)) addCoordinated(body0 + e[0].length);
      return dedupe(claims);
    }
  }

  // D. Test results: "The tests pass", "All 42 tests passed", "CI is green".
  const t = TEST_RE.exec(body);
  if (t) {
    // "The tests pass in your CI run": the user's results, not this turn's.
    if (!/\b(?:your|their|his|her)\b/i.test(s) && !SKIP_CLAUSE.test(s.slice(body0, clauseEnd(s, body0 + t[0].length)))) {
      claims.push({ action: 'run', participle: 'run', kind: t[1] ? 'pass' : 'fail', objectWords: [] });
    }
    return dedupe(claims);
  }

  // B. Passive results: "The file has been deleted", "Your preference is saved", "Done — the PR is merged".
  const p = lex.passRe.exec(body);
  if (p) {
    const subject = p[1]!;
    const aux = p[2]!.toLowerCase();
    const mods = p[3]!.toLowerCase();
    const part = p[4]!.toLowerCase().replace(/\s+/g, ' ');
    const v = lex.byParticiple.get(part);
    const tailStart = body0 + p[0].length;
    const end = clauseEnd(s, tailStart);
    const tail = s.slice(tailStart, end);
    const pronoun = /^(?:it|they|everything|all\s+of\s+them)$/i.test(subject);
    const subjectWords = subject.trim().split(/\s+/);
    const perfect = /\bbeen\b/.test(mods) || aux === 'has' || aux === 'have';
    const present = aux === 'is' || aux === 'are' || aux === "'s" || aux === "'re";
    const emphatic = /\b(?:now|successfully)\b/.test(mods) || /^\s+(?:successfully|now)\b/i.test(tail) || doneLed;
    const tailShort = /^\s*(?:(?:to|on|in|into|for|from|at|with|under)\s+[^,;]{1,40})?\s*[.!]*\s*$/i.test(tail);
    const tailEmpty = /^\s*(?:now|too|as\s+well|successfully)?\s*[.!]*\s*$/i.test(tail);
    const byOther = /\bby\s+(?!me\b|e-?mail|mail|text|sms|slack|phone)/i.test(tail);
    const sentenceEnds = /^[\s.!)\]*_]*$/.test(s.slice(end));
    // "Your email was sent to spam, which is why …": an explanation, not a report of this turn's work.
    const explains = /\b(?:which|why|because|that's\s+why|which\s+means|so\s+that)\b/i.test(s.slice(end));
    const tense = perfect
      ? tailShort || emphatic
      : present
        ? emphatic || (tailEmpty && sentenceEnds && !PROCEDURAL_PREFIX.test(prefix) && /^(?:your|the)\b/i.test(subject))
        : tailShort;
    const ok =
      !!v &&
      !byOther &&
      !explains &&
      tense &&
      subjectWords.length <= 7 &&
      !NOT_IN_SUBJECT.test(pronoun ? '' : subject) &&
      (v.req === 'inherent' ? !chatYou(v, tail) : !pronoun && v.req.test(subject)) &&
      !SKIP_CLAUSE.test(s.slice(body0, end));
    if (ok) {
      let action = v.action;
      if (action === 'write' && CALENDARISH.test(subject)) action = 'book';
      const np = pronoun ? undefined : nounPhrase(orig, a, at(body0), at(body0 + subject.length));
      claims.push({ action, participle: v.participle, kind: 'act', np, objectWords: contentWords(subject) });
    }
    return dedupe(claims);
  }

  // C. Fragments: "Email sent to Bob.", "File deleted.", "Changes pushed to main."
  const trimmed = body.trim();
  if (trimmed.split(/\s+/).length <= 8 && !BE_OR_MODAL.test(trimmed)) {
    const f = lex.fragRe.exec(trimmed);
    if (f) {
      const v = lex.verbs.get(f[2]!.toLowerCase());
      const np = f[1]!;
      const fits =
        v &&
        // "The job ran for 3 minutes" is a past event; only participles make fragments ("Email sent").
        v.participle.toLowerCase() === f[2]!.toLowerCase().replace(/\s+/g, ' ') &&
        !/^(?:i|you|we|he|she|they|it|this|that)\b/i.test(np) &&
        (v.req === 'inherent'
          ? /\b(?:emails?|messages?|texts?|invites?|invitations?|files?|notes?|changes|preferences?|reminders?|meetings?|tables?|flights?|packages?|posts?|replies|reply|report|data|dependencies|updates?)\b|[\uE000\uE001]/i.test(np)
          : v.req.test(np));
      if (fits && !SKIP_CLAUSE.test(trimmed)) {
        let action = v.action;
        if (action === 'write' && CALENDARISH.test(np)) action = 'book';
        const start = body0 + (body.length - body.trimStart().length);
        claims.push({ action, participle: v.participle, kind: 'act', np: nounPhrase(orig, a, at(start), at(start + np.length), true), objectWords: contentWords(np) });
      }
    }
  }
  return dedupe(claims);
}

/** One claim per action and kind. */
function dedupe(claims: Claim[]): Claim[] {
  const seen = new Set<string>();
  return claims.filter((c) => {
    const k = `${c.action}:${c.kind}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
// ---------------------------------------------------------------------------
// Verdicts and corrections

const DID_NOT_RUN = /\b(?:not\s+found|no\s+such\s+(?:file|command)|denied|refused|blocked|not\s+(?:permitted|allowed)|forbidden|timed?\s*out|timeout|approval|rejected|cancel(?:l)?ed|aborted|ENOENT|EACCES|spawn|could\s+not\s+(?:start|run|execute)|unknown\s+command|not\s+installed)\b/i;
const TEST_FAILURES = /\b[1-9]\d*\s+(?:tests?\s+|specs?\s+)?(?:failed|failing|failures?|errors?)\b|^\s*FAIL\b|\bFAILED\b|\bAssertionError\b|\bnpm ERR!|\bTests?:\s+[1-9]\d*\s+failed|\bexit(?:ed)?\s+(?:with\s+)?(?:code|status)\s+[1-9]/m;

function firstLine(output: string | undefined): string {
  const line = (output ?? '').split(/\r?\n/).map((l) => l.trim()).find(Boolean) ?? '';
  return line.replace(/\[/g, '(').replace(/\]/g, ')').slice(0, 200);
}

const ACTION_NOUN: Record<string, string> = {
  delete: 'delete', send: 'send', run: 'run', write: 'write', fetch: 'fetch', deploy: 'deploy', book: 'booking', cancel: 'cancellation',
};
const ACTION_PAST: Record<string, string> = {
  delete: 'deleted anything', send: 'sent anything', run: 'ran anything', write: 'saved or changed anything', fetch: 'fetched or looked up anything',
  deploy: 'deployed, merged or pushed anything', book: 'booked or scheduled anything', cancel: 'cancelled anything',
};

function notDone(c: Claim): string {
  if (c.np && !/[`"“«]/.test(c.np)) {
    const head = c.np.trim().split(/\s+/).at(-1) ?? '';
    const plural = /^(?:both|all|these|those)\b/i.test(c.np) || (/[a-z]s$/i.test(head) && !/(?:ss|us|is)$/i.test(head) && !/\./.test(head));
    return `${c.np} ${plural ? 'were' : 'was'} not ${c.participle}`;
  }
  if (c.np) return `${c.np} was not ${c.participle}`;
  return `nothing was ${c.participle}`;
}

interface Verdict {
  verdict?: 'contradicted' | 'unsupported';
  reason: string;
  correction: string;
  tool?: string;
}

function judge(c: Claim, trace: TraceEntry[], lex: Lexicon): Verdict {
  const matching = trace.filter(
    (e) =>
      e &&
      typeof e.tool === 'string' &&
      (toolMatches(e, c.action, lex, c.objectWords) || (c.kind !== 'act' && keywordHit(nameTokens(e.tool), CI_TOKENS))),
  );
  const noun = ACTION_NOUN[c.action] ?? c.action;
  // "The tests fail on Windows": reports of failure are often reasoning about the user's paste; never corrected.
  if (c.kind === 'fail') return { reason: 'a failure report is not corrected', correction: '' };
  if (c.kind === 'pass') {
    if (!matching.length) {
      return {
        verdict: 'unsupported',
        reason: 'no tool call this turn ran the tests or build',
        correction: 'no tool call this turn ran the tests; this result was not verified.',
      };
    }
    const ok = matching.filter((e) => e.ok);
    const last = ok.at(-1);
    if (!last) {
      const f = matching.at(-1)!;
      const line = firstLine(f.output);
      return {
        verdict: 'contradicted',
        tool: f.tool,
        reason: `${f.tool} failed${line ? `: ${line}` : ''}`,
        correction: line ? `the run failed: ${line}` : `the run failed (${f.tool} returned an error); the tests did not pass.`,
      };
    }
    const failing = TEST_FAILURES.exec(last.output ?? '');
    if (failing) {
      const line = firstLine(
        (last.output ?? '').split(/\r?\n/).find((l) => TEST_FAILURES.test(l)) ?? failing[0],
      );
      return {
        verdict: 'contradicted',
        tool: last.tool,
        reason: `${last.tool} reported failures: ${line}`,
        correction: `the run reported failures: ${line}`,
      };
    }
    return { reason: `${last.tool} succeeded`, correction: '' };
  }
  // An act.
  const ok = matching.find((e) => e.ok);
  if (ok) return { reason: `${ok.tool} succeeded`, correction: '' };
  if (c.action === 'run') {
    // A run whose command failed still ran (e.g. failing tests); only "never started" contradicts it.
    const ran = matching.find((e) => !DID_NOT_RUN.test(e.output ?? ''));
    if (ran) return { reason: `${ran.tool} ran (and reported an error)`, correction: '' };
  }
  if (matching.length) {
    const f = matching.at(-1)!;
    const line = firstLine(f.output);
    return {
      verdict: 'contradicted',
      tool: f.tool,
      reason: `${f.tool} failed${line ? `: ${line}` : ''}`,
      correction: line ? `the ${noun} failed: ${line}` : `the ${noun} failed (${f.tool} returned an error); ${notDone(c)}.`,
    };
  }
  const ran = trace.filter((e) => e && typeof e.tool === 'string').map((e) => e.tool);
  return {
    verdict: 'unsupported',
    reason: ran.length ? `no tool that could ${c.action} ran this turn (ran: ${[...new Set(ran)].join(', ')})` : 'no tool ran this turn',
    correction: `no tool call this turn ${ACTION_PAST[c.action] ?? `did that (${c.action})`}; ${notDone(c)}.`,
  };
}

// ---------------------------------------------------------------------------

export function checkClaims(text: string, trace: TraceEntry[], opts: ClaimOptions = {}): ClaimCheck {
  if (typeof text !== 'string' || !text) return { findings: [], text: typeof text === 'string' ? text : '' };
  const lex = opts.actionTools && Object.keys(opts.actionTools).length ? buildLexicon(opts.actionTools) : (defaultLexicon ??= buildLexicon());
  const entries = Array.isArray(trace) ? trace : [];
  const a = mask(text);
  const findings: ClaimFinding[] = [];
  const inserts: Array<{ at: number; text: string }> = [];

  const spans = sentenceSpans(a);
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!;
    const nextSpan = spans[i + 1];
    const claims = detectClaims(text, a, span, lex, nextSpan ? a.slice(nextSpan.start, nextSpan.end).replace(LEAD, '') : undefined);
    if (!claims.length) continue;
    const sentence = text.slice(span.start, span.end);
    const corrections: string[] = [];
    const judged = claims.map((c) => ({ c, v: judge(c, entries, lex) }));
    for (const { c, v } of judged) {
      if (!v.verdict) continue;
      // "I ran the tests and they pass" with no run at all: one correction says it.
      if (c.kind !== 'act' && judged.some((o) => o.c.kind === 'act' && o.c.action === c.action && o.v.verdict === v.verdict)) continue;
      findings.push({ sentence, action: c.action, verdict: v.verdict, reason: v.reason, ...(v.tool ? { tool: v.tool } : {}) });
      corrections.push(`[Correction: ${v.correction.replace(/\]/g, ')')}]`);
    }
    if (corrections.length) inserts.push({ at: span.end, text: ' ' + corrections.join(' ') });
  }

  if (!inserts.length) return { findings, text };
  let out = '';
  let last = 0;
  for (const ins of inserts) {
    out += text.slice(last, ins.at) + ins.text;
    last = ins.at;
  }
  out += text.slice(last);
  return { findings, text: out };
}

/** Reads a JSONL corpus of ClaimCase (blank lines and lines starting with # are skipped). */
export function loadClaimsCorpus(path: string): ClaimCase[] {
  return loadLines(path).map((l, i) => {
    const c = JSON.parse(l) as ClaimCase;
    if (typeof c.text !== 'string' || !Array.isArray(c.trace) || !['contradicted', 'unsupported', 'supported', 'none'].includes(c.expect)) {
      throw new Error(`${path}: entry ${i + 1} is not a ClaimCase`);
    }
    return c;
  });
}
