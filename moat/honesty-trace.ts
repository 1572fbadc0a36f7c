/**
 * Trace matching for the honesty check: which tool calls of the turn could have
 * done what a claim says, what each call did (recipients, paths, amounts, items,
 * times, its outcome), and the verdict for each claim.
 *
 * A call fits a claim when its tool does that kind of thing: name tokens against
 * the action's keywords ("mcp__github__merge_pull_request" → merge), narrowed by
 * the verb (a merge tool does not tag a release, an SMS tool does not send an
 * e-mail, a read-only "list_"/"get_" tool changes nothing), and for shells and
 * SQL tools by the command itself (`rm` deletes, `git status` pushes nothing,
 * SELECT drops no table). Among the calls that fit, the details the text commits
 * to decide: a call to another recipient, path, amount or time does not support
 * the claim, and a call another claim of the same text names is that claim's.
 * A shell call "succeeded" only with exit code 0; a tool's output that reports
 * failure ("Error: …", `"status":"error"`, "BUILD FAILED") counts as a failure
 * for everything but look-ups (a fetched log full of errors is still fetched).
 */
import type { Claim, Recipient } from './honesty-extract.js';
import { looksLikePath, RUN_KIND_TOKENS, timesIn } from './honesty-extract.js';

export interface TraceEntry {
  tool: string;
  args?: unknown;
  ok: boolean;
  output?: string;
}

/** Verb → tool-name keywords. A tool matches when one of its name tokens equals a keyword (or starts with one of ≥ 4 letters). */
export const DEFAULT_ACTION_TOOLS: Record<string, string[]> = {
  delete: [
    'rm',
    'delete',
    'remove',
    'unlink',
    'trash',
    'rmdir',
    'erase',
    'purge',
    'drop',
    'destroy',
    'del',
    'forget',
    'clear',
    'wipe',
    'prune',
    'nuke',
    'revoke',
    'clean',
    'empty',
  ],
  send: [
    'send',
    'email',
    'mail',
    'message',
    'post',
    'notify',
    'slack',
    'sms',
    'text',
    'reply',
    'forward',
    'dm',
    'tweet',
    'publish',
    'discord',
    'telegram',
    'whatsapp',
    'twilio',
    'sendgrid',
    'gmail',
    'smtp',
    'outlook',
    'mailgun',
    'postmark',
    'ses',
    'teams',
    'signal',
    'imessage',
    'invite',
    'ping',
    'page',
    'pagerduty',
    'alert',
    'chat',
    'compose',
  ],
  run: [
    'shell',
    'exec',
    'run',
    'test',
    'bash',
    'terminal',
    'command',
    'cmd',
    'script',
    'sh',
    'ci',
    'npm',
    'make',
    'pytest',
    'jest',
    'vitest',
    'install',
    'restart',
    'build',
    'compile',
    'trigger',
    'dispatch',
    'start',
    'launch',
    'job',
    'pipeline',
    'workflow',
    'scheduler',
    'migrate',
    'migration',
    'lint',
    'reboot',
    'upgrade',
    'apply',
    'provision',
  ],
  write: [
    'write',
    'save',
    'create',
    'update',
    'patch',
    'edit',
    'remember',
    'memory',
    'store',
    'set',
    'put',
    'insert',
    'upsert',
    'add',
    'append',
    'mkdir',
    'touch',
    'move',
    'rename',
    'upload',
    'modify',
    'replace',
    'note',
    'config',
    'reset',
    'toggle',
    'enable',
    'disable',
    'pause',
    'resume',
    'mute',
    'unmute',
    'archive',
    'rotate',
    'bump',
    'backup',
    'export',
    'import',
    'sync',
    'restore',
    'grant',
    'block',
    'unblock',
    'change',
  ],
  fetch: [
    'fetch',
    'get',
    'read',
    'search',
    'http',
    'browse',
    'browser',
    'scrape',
    'curl',
    'wget',
    'lookup',
    'query',
    'list',
    'find',
    'web',
    'download',
    'open',
    'view',
    'load',
    'check',
    'cat',
    'recall',
    'grep',
    'ls',
    'api',
    'request',
  ],
  deploy: ['deploy', 'merge', 'git', 'push', 'commit', 'release', 'publish', 'pr', 'ship', 'rollback', 'revert', 'tag', 'rollout', 'helm', 'kubectl'],
  book: ['calendar', 'book', 'schedule', 'reserve', 'event', 'meeting', 'appointment', 'reminder', 'invite', 'alarm', 'timer'],
  cancel: ['cancel', 'delete', 'remove', 'calendar', 'book', 'unsubscribe', 'refund', 'stop', 'kill', 'terminate'],
  pay: [
    'pay',
    'payment',
    'transfer',
    'wire',
    'refund',
    'charge',
    'stripe',
    'paypal',
    'venmo',
    'zelle',
    'bank',
    'ach',
    'sepa',
    'payout',
    'invoice',
    'billing',
    'bill',
    'checkout',
    'wise',
    'revolut',
    'square',
    'braintree',
    'adyen',
    'cashapp',
    'reimburse',
  ],
};

/** Tool-name tokens that name one operation within an action class: a tool carrying one only does verbs that list it. */
const SPECIFIC: Record<string, Set<string>> = {
  deploy: new Set(['merge', 'push', 'commit', 'tag', 'release', 'publish', 'deploy', 'deployment', 'rollback', 'revert', 'ship', 'rollout', 'pr']),
  pay: new Set([
    'refund',
    'refunds',
    'charge',
    'charges',
    'transfer',
    'transfers',
    'wire',
    'payout',
    'payouts',
    'pay',
    'payment',
    'payments',
    'bill',
    'bills',
    'invoice',
    'invoices',
    'checkout',
  ]),
};

const SHELL_TOKENS = new Set(['shell', 'bash', 'sh', 'zsh', 'exec', 'terminal', 'cmd', 'command', 'powershell', 'pwsh', 'subprocess']);
const SQL_TOKENS = new Set([
  'sql',
  'db',
  'database',
  'query',
  'postgres',
  'postgresql',
  'psql',
  'mysql',
  'sqlite',
  'supabase',
  'bigquery',
  'snowflake',
  'redshift',
  'clickhouse',
]);
const READ_TOKENS = new Set([
  'get',
  'list',
  'read',
  'fetch',
  'search',
  'query',
  'find',
  'view',
  'show',
  'lookup',
  'describe',
  'status',
  'check',
  'checks',
  'count',
  'recall',
  'retrieve',
  'browse',
  'inspect',
  'preview',
  'history',
  'info',
  'details',
  'lookup',
]);
const MUTATE_TOKENS = new Set(
  'create send delete remove update write set post put patch run exec add insert upsert cancel book merge push deploy transfer pay refund charge upload move rename archive save store edit modify replace reply forward notify publish release commit tag schedule reserve invite restart install build trigger start stop kill drop purge clear reset toggle enable disable pause resume rotate backup restore sync import export wipe prune mute unmute block unblock grant revoke append mkdir touch rollback revert apply'.split(
    ' ',
  ),
);
/** Tools that can report test/CI results without running them here. */
const CI_TOKENS = ['ci', 'check', 'checks', 'status', 'github', 'gitlab', 'actions', 'pipeline', 'build', 'workflow', 'jenkins', 'circleci', 'buildkite'];
const CALENDAR_TOKENS = [
  'calendar',
  'calendars',
  'cal',
  'gcal',
  'ical',
  'event',
  'events',
  'meeting',
  'meetings',
  'appointment',
  'appointments',
  'schedule',
  'outlook',
  'caldav',
];

const CHANNEL_OF_TOKEN: Record<string, string> = {
  email: 'email',
  emails: 'email',
  mail: 'email',
  gmail: 'email',
  smtp: 'email',
  outlook: 'email',
  sendgrid: 'email',
  mailgun: 'email',
  ses: 'email',
  postmark: 'email',
  mailchimp: 'email',
  sms: 'sms',
  mms: 'sms',
  text: 'sms',
  twilio: 'sms',
  vonage: 'sms',
  nexmo: 'sms',
  plivo: 'sms',
  whatsapp: 'whatsapp',
  slack: 'slack',
  discord: 'discord',
  teams: 'teams',
  telegram: 'telegram',
  signal: 'signal',
  imessage: 'imessage',
  twitter: 'twitter',
  tweet: 'twitter',
  mattermost: 'mattermost',
  chat: 'chat',
};

/** What a shell command must contain to count as the action (args undefined → assume it could). */
const SHELL_ARGS: Record<string, RegExp | true | false> = {
  delete: /\b(?:rm|rmdir|unlink|del|shred|trash|delete|remove|drop|prune|rimraf|truncate|purge|clean|wipe)\b/i,
  send: /\b(?:mail|sendmail|mutt|curl|slack|twilio|send|notify|msmtp|swaks)\b/i,
  run: true,
  write: /(?:>|\b(?:tee|cp|mv|touch|mkdir|sed\s+-i|echo|printf|write|save|create|patch|apply|install|cat\s*>|chmod|ln|rsync|tar|zip|dump|pg_dump|crontab)\b)/i,
  fetch: /\b(?:curl|wget|cat|head|tail|less|more|grep|rg|ls|find|http|get|fetch|read|jq|git\s+(?:log|show|status|diff|fetch|pull))\b/i,
  deploy: /\b(?:git|deploy|kubectl|docker|helm|fly|vercel|netlify|heroku|publish|push|merge|commit|terraform|release)\b/i,
  book: false,
  cancel: /\b(?:cancel|kill|stop|rm|delete)\b/i,
  pay: /\b(?:curl|stripe|pay|transfer|refund|charge)\b/i,
};

const SQL_ARGS: Record<string, RegExp | true> = {
  delete: /\b(?:DELETE|DROP|TRUNCATE)\b/i,
  write: /\b(?:INSERT|UPDATE|CREATE|ALTER|UPSERT|MERGE|REPLACE)\b/i,
  fetch: /\b(?:SELECT|SHOW|DESCRIBE|EXPLAIN|WITH)\b/i,
  run: true,
};

/** Tool name → lowercase tokens: "mcp__github__merge_pull_request" → mcp, github, merge, pull, request; "sendEmail" → send, email. */
export function nameTokens(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

function keywordHit(tokens: string[], keywords: string[]): boolean {
  return tokens.some((t) => keywords.some((k) => t === k || (k.length >= 4 && t.startsWith(k))));
}

export function argsText(args: unknown): string | undefined {
  if (args === undefined || args === null) return undefined;
  if (typeof args === 'string') return args;
  try {
    return JSON.stringify(args);
  } catch {
    return String(args);
  }
}

// ---------------------------------------------------------------------------
// What a call did

const DID_NOT_RUN =
  /\b(?:not\s+found|no\s+such\s+(?:file|command)|denied|refused|blocked|not\s+(?:permitted|allowed)|forbidden|timed?\s*out|timeout|approval|rejected|cancel(?:l)?ed|aborted|ENOENT|EACCES|spawn|could\s+not\s+(?:start|run|execute)|unknown\s+command|not\s+installed|insufficient\s+permissions?|unauthori[sz]ed|40[13])\b/i;
export const TEST_FAILURES =
  /\b[1-9]\d*\s+(?:tests?\s+|specs?\s+)?(?:failed|failing|failures?|errors?|problems?)\b|^\s*FAIL\b|\bFAILED\b|\bAssertionError\b|\bnpm ERR!|\bTests?:\s+[1-9]\d*\s+failed|\bexit(?:ed)?\s+(?:with\s+)?(?:code|status)\s+[1-9]|\bexit\s+[1-9]|Traceback \(most recent call last\)|"conclusion"\s*:\s*"(?:failure|failed|cancelled|timed_out|action_required)"|\bstatus\s*[=:]\s*"?(?:failed|failure|error|errored)\b|^\s*ERROR\b|\berror TS\d+|^\s*✖|\bError \d+\b|^Error:|\bfailures=[1-9]/m;
/** A call whose tool returned normally but whose output says it did not work. */
const OUTPUT_FAILED =
  /^\s*(?:error|fatal|failed|failure|exception|denied|forbidden|unauthori[sz]ed|permission denied)\b|\bnpm ERR!|Traceback \(most recent call last\)|\bBUILD FAILED\b|"(?:status|state|result|conclusion)"\s*:\s*"(?:error|errored|failed|failure|rejected|declined|cancell?ed)"|"(?:ok|success|succeeded)"\s*:\s*false|"error"\s*:\s*(?:"[^"]+"|\{)|\bstatus\s*[=:]\s*(?:failed|failure|error|errored)\b|^\s*[\w.-]+:\s+(?:cannot|can't|could not|failed|error|fatal)\b|\bPermission denied\b|\bNo such file or directory\b|\bcommand not found\b/im;
/** Words that make an output worth a second look, without deciding anything. */
const MAYBE_FAILED = /\b(?:fail(?:ed|ure|ures)?|errors?|denied|rejected|invalid|unable|timed?\s*out|partial(?:ly)?|skipped|bounced)\b/i;

const EXIT_RE = /\[exit code (-?\d+)\]|\[killed by (\w+)\]|\bexit(?:ed)?\s+(?:with\s+)?(?:code|status)\s+(\d+)\b/i;

export interface CallView {
  e: TraceEntry;
  index: number;
  tokens: string[];
  shell: boolean;
  command?: string;
  sql?: string;
  args: string;
  /** ok:false, or a shell's non-zero exit. */
  failed: boolean;
  /** The output says it failed (not used for look-ups). */
  outputFailed: boolean;
  maybeFailed: boolean;
  /** It never started (blocked, denied, not found…). */
  notRun: boolean;
  exitCode?: number;
  recipients: CallRecipient[];
  paths: string[];
  amounts: number[][];
  times: string[];
  /** How many items it acted on, when the arguments say (arrays of paths, ids, recipients…). */
  items?: number;
  /** Numbers the output reports next to a noun ("deleted 3 files", "archived 3 messages"). */
  outputCounts: Array<{ n: number; noun: string }>;
  /** Every string value of the arguments. */
  strings: string[];
}

export interface CallRecipient {
  kind: 'email' | 'phone' | 'channel' | 'handle' | 'name' | 'id';
  value: string;
  tokens: string[];
  /** Names a person (a display name, a name-like mailbox, a handle), not a shared inbox or an id. */
  personal: boolean;
  text: string;
}

const RECIPIENT_KEY =
  /^(?:to|to_?account|cc|bcc|recipients?|recipient_?(?:email|name|id|phone)|emails?|email_?address(?:es)?|phone(?:_?number)?|mobile|channels?|channel_?(?:id|name)|users?|user_?(?:id|name)|attendees?|participants?|invitees?|guests?|members?|chat_?id|conversation(?:_?id)?|payee|beneficiary|handle|username|contact)$/i;
const ITEM_KEY =
  /^(?:senders|subscriptions|lists|newsletters|threads|labels|tags|paths?|files?|filenames?|ids?|items?|messages?|message_?ids|photos?|images?|events?|contacts?|rows?|records?|entries|keys|objects|documents?|emails?|attachments?|branches|tickets?|issues?|urls?|targets?|recipients?|to|bcc|cc|attendees?)$/i;
const SINGLE_ITEM_KEY =
  /^(?:path|file|filename|id|item|message_?id|photo|image|event(?:_?id)?|contact(?:_?id)?|key|object|document|url|title|name|branch|ticket|issue|number)$/i;
const PATH_KEY = /(?:^|_)(?:path|paths|file|files|filename|dest|destination|target|src|source|from|to|dir|directory|folder|output|out|location)$/i;
const AMOUNT_KEY = /^(?:amount|amount_?(?:cents|in_?cents|minor|usd|eur)?|value|total|sum|price|unit_?amount|amountcents)$/i;
const GENERIC_MAILBOX =
  /^(?:info|hello|hi|team|sales|support|admin|noreply|no-reply|contact|office|billing|accounts?|accounting|orders?|help|mail|inbox|service|careers|jobs|hr|finance|legal|ops|security|press|media|marketing|news|newsletter|notifications?|alerts?|reply|all|everyone|staff|general|team-?\w*|\w+-team|\w+-leads?)$/i;

function flatten(v: unknown, key: string, out: Array<{ key: string; value: unknown }>, depth = 0): void {
  if (depth > 4 || v === null || v === undefined) return;
  if (Array.isArray(v)) for (const x of v) flatten(x, key, out, depth + 1);
  else if (typeof v === 'object') for (const [k, x] of Object.entries(v as Record<string, unknown>)) flatten(x, k, out, depth + 1);
  else out.push({ key, value: v });
}

function words(s: string): string[] {
  return (s.toLowerCase().match(/[a-z][a-z']+/g) ?? []).map((w) => w.replace(/'s$/, '')).filter((w) => w.length >= 2);
}

function parseRecipient(raw: string, key: string): CallRecipient[] {
  const out: CallRecipient[] = [];
  const s = raw.trim();
  if (!s) return out;
  for (const part of s.split(/\s*[,;]\s*/)) {
    const disp = /^\s*"?([^"<]*?)"?\s*<\s*([^>]+@[^>]+)\s*>\s*$/.exec(part);
    const email = disp ? disp[2]!.trim() : /^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$/.test(part) ? part : undefined;
    if (email) {
      const [local, domain] = email.toLowerCase().split('@') as [string, string];
      const localWords = local.split(/[._+\-\d]+/).filter((w) => w.length >= 2);
      const domainWords = domain
        .split('.')
        .slice(0, -1)
        .flatMap((d) => d.split('-'))
        .filter((w) => w.length >= 2);
      const display = disp ? words(disp[1]!) : [];
      const personal = display.length > 0 || (!GENERIC_MAILBOX.test(local) && localWords.some((w) => w.length >= 3 && /^[a-z]+$/.test(w)));
      out.push({ kind: 'email', value: email.toLowerCase(), tokens: [...display, ...localWords, ...domainWords], personal, text: part.trim() });
      continue;
    }
    const digits = part.replace(/\D/g, '');
    if (/^[+\d][\d\s().-]{6,}$/.test(part) && digits.length >= 7) {
      out.push({ kind: 'phone', value: digits.slice(-10), tokens: [], personal: false, text: part });
      continue;
    }
    if (/^#/.test(part) || (/channel/i.test(key) && !/^@/.test(part))) {
      const name = part.replace(/^#/, '').toLowerCase();
      // Slack-style ids (C0123ABCD) are not names.
      const id = /^[a-z]?[0-9a-z]{8,}$/i.test(name) && /\d/.test(name);
      out.push({ kind: id ? 'id' : 'channel', value: name, tokens: id ? [] : name.split(/[-_.]+/).filter((w) => w.length >= 2), personal: false, text: part });
      continue;
    }
    if (/^@/.test(part) || /^(?:handle|username|users?|user_?(?:id|name))$/i.test(key)) {
      const name = part.replace(/^@/, '').toLowerCase();
      const id = /^[a-z]?[0-9a-z]{8,}$/i.test(name) && /\d/.test(name);
      out.push({ kind: id ? 'id' : 'handle', value: name, tokens: id ? [] : name.split(/[-_.\d]+/).filter((w) => w.length >= 2), personal: !id, text: part });
      continue;
    }
    const ws = words(part);
    if (ws.length) out.push({ kind: 'name', value: ws.join(' '), tokens: ws, personal: /^[A-Z]/.test(part), text: part });
  }
  return out;
}

function commandOf(args: unknown): string | undefined {
  if (typeof args === 'string') return args;
  if (args && typeof args === 'object') {
    const o = args as Record<string, unknown>;
    for (const k of ['command', 'cmd', 'script', 'code', 'input', 'args']) {
      const v = o[k];
      if (typeof v === 'string') return v;
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' ');
    }
  }
  return undefined;
}

function sqlOf(args: unknown): string | undefined {
  if (typeof args === 'string') return /\b(?:select|insert|update|delete|drop|create|alter|truncate)\b/i.test(args) ? args : undefined;
  if (args && typeof args === 'object') {
    for (const k of ['sql', 'query', 'statement', 'q']) {
      const v = (args as Record<string, unknown>)[k];
      if (typeof v === 'string') return v;
    }
  }
  return undefined;
}

function normPath(p: string): string {
  return p
    .trim()
    .replace(/^[`'"]+|[`'"]+$/g, '')
    .replace(/^>+/, '')
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/')
    .replace(/^(?:\.\/)+/, '')
    .replace(/\/+$/, '')
    .toLowerCase();
}

function shellPaths(command: string): string[] {
  return command
    .split(/[\s;&|()]+/)
    .map((t) => t.replace(/^[<>]+|["']/g, ''))
    .filter((t) => t && !t.startsWith('-') && !/^\d+$/.test(t) && (looksLikePath(t) || /\*/.test(t) || /^[\w.-]+\.[\w]{1,8}$/.test(t)));
}

/** Builds what the checker needs to know about each call. */
export function viewCalls(trace: TraceEntry[]): CallView[] {
  const out: CallView[] = [];
  trace.forEach((e, index) => {
    if (!e || typeof e.tool !== 'string') return;
    const tokens = nameTokens(e.tool);
    const shell = tokens.some((t) => SHELL_TOKENS.has(t));
    const output = typeof e.output === 'string' ? e.output : '';
    // A shell call's command; other argument shapes are read as text (no arguments: it could have done anything).
    const named = shell ? commandOf(e.args) : undefined;
    const command = shell ? (named ?? (e.args === undefined || e.args === null ? undefined : argsText(e.args))) : undefined;
    const sql = tokens.some((t) => SQL_TOKENS.has(t)) ? sqlOf(e.args) : undefined;
    const exit = EXIT_RE.exec(output);
    const exitCode = exit ? (exit[2] ? 137 : Number(exit[1] ?? exit[3])) : undefined;
    const failed = e.ok === false || (exitCode !== undefined && exitCode !== 0);
    const notRun =
      (e.ok === false && DID_NOT_RUN.test(output)) ||
      exitCode === 126 ||
      exitCode === 127 ||
      (exitCode !== undefined && exitCode !== 0 && /command not found|No such file or directory.*(?:sh|bash):/i.test(output));
    const outputFailed = !failed && exitCode === undefined && OUTPUT_FAILED.test(output);
    const flat: Array<{ key: string; value: unknown }> = [];
    flatten(e.args, '', flat);
    const strings = flat.filter((f) => typeof f.value === 'string').map((f) => f.value as string);
    const recipients: CallRecipient[] = [];
    for (const f of flat) if (typeof f.value === 'string' && RECIPIENT_KEY.test(f.key)) recipients.push(...parseRecipient(f.value, f.key));
    // A name next to the address ({to: "+1415…", name: "Jamie"}) names the recipient.
    if (recipients.length && flat.some((f) => /^(?:to|recipients?|phone|email)$/i.test(f.key))) {
      for (const f of flat)
        if (typeof f.value === 'string' && /^(?:name|to_?name|recipient_?name|display_?name)$/i.test(f.key))
          recipients.push(...parseRecipient(f.value, 'name'));
    }
    // Nested recipients ({to: [{email, name}]}): their email and name fields.
    if (e.args && typeof e.args === 'object') {
      for (const [k, v] of Object.entries(e.args as Record<string, unknown>)) {
        if (!RECIPIENT_KEY.test(k) || !Array.isArray(v)) continue;
        for (const x of v)
          if (x && typeof x === 'object')
            for (const f of ['email', 'address', 'name', 'phone', 'handle']) {
              const y = (x as Record<string, unknown>)[f];
              if (typeof y === 'string') recipients.push(...parseRecipient(y, f === 'name' ? 'name' : f));
            }
      }
    }
    let paths = flat
      .filter(
        (f) =>
          typeof f.value === 'string' &&
          (PATH_KEY.test(f.key) || /^(?:paths?|files?)$/i.test(f.key)) &&
          !/@/.test(f.value as string) &&
          looksLikePathish(f.value as string),
      )
      .map((f) => normPath(f.value as string));
    if (named) paths.push(...shellPaths(named).map(normPath));
    if (!paths.length) {
      const first = output.split(/\r?\n/).find((l) => l.trim()) ?? '';
      const m = /\b(?:to|into|at|as|in)\s+(\S+)/.exec(first);
      if (m && looksLikePath(m[1]!.replace(/[.,;:]+$/, ''))) paths.push(normPath(m[1]!.replace(/[.,;:]+$/, '')));
    }
    paths = [...new Set(paths)];
    const amounts: number[][] = [];
    for (const f of flat) {
      if (!AMOUNT_KEY.test(f.key)) continue;
      const n =
        typeof f.value === 'number'
          ? f.value
          : typeof f.value === 'string' && /^\s*[$€£]?\s*\d[\d,]*(?:\.\d+)?\s*$/.test(f.value)
            ? Number(f.value.replace(/[^\d.]/g, ''))
            : NaN;
      if (!Number.isFinite(n)) continue;
      // Integer amounts may be in minor units (Stripe: 4999 = $49.99).
      const cents = /cents|minor/i.test(f.key);
      amounts.push(cents ? [n / 100] : Number.isInteger(n) ? [n, n / 100] : [n]);
    }
    if (!amounts.length && e.ok) {
      for (const m of output.matchAll(/[$€£]\s?(\d[\d,]*(?:\.\d+)?)/g)) amounts.push([Number(m[1]!.replace(/,/g, ''))]);
    }
    const times = [...new Set(strings.flatMap((v) => callTimes(v)))];
    let items: number | undefined;
    let arrays = 0;
    if (e.args && typeof e.args === 'object' && !Array.isArray(e.args)) {
      let sum = 0;
      let single = false;
      for (const [k, v] of Object.entries(e.args as Record<string, unknown>)) {
        if (Array.isArray(v) && ITEM_KEY.test(k)) {
          arrays++;
          sum += v.length;
        } else if (SINGLE_ITEM_KEY.test(k) && typeof v === 'string' && !/[*?]/.test(v)) single = true;
      }
      items = arrays ? sum : single ? 1 : undefined;
    }
    if (items === undefined && !shell && !sql && (e.args === undefined || (typeof e.args === 'object' && e.args && !Object.keys(e.args).length))) items = 1;
    const outputCounts: Array<{ n: number; noun: string }> = [];
    for (const m of output.matchAll(
      /\b(?:deleted|removed|archived|uploaded|created|sent|moved|updated|added|cleared|processed|imported|exported)\s+(\d+)\s+([a-z]+)|\b(\d+)\s+(?:[a-z]+\s+)?([a-z]+s)\s+(?:deleted|removed|archived|uploaded|created|sent|moved|updated|added|cleared|processed)\b/gi,
    )) {
      outputCounts.push({ n: Number(m[1] ?? m[3]), noun: (m[2] ?? m[4]!).toLowerCase() });
    }
    out.push({
      e,
      index,
      tokens,
      shell,
      ...(command !== undefined ? { command } : {}),
      ...(sql !== undefined ? { sql } : {}),
      args: argsText(e.args) ?? '',
      failed,
      outputFailed,
      maybeFailed: !failed && !outputFailed && MAYBE_FAILED.test(output) && !shell,
      notRun,
      ...(exitCode !== undefined ? { exitCode } : {}),
      recipients,
      paths,
      amounts,
      times,
      ...(items !== undefined ? { items } : {}),
      outputCounts,
      strings,
    });
  });
  return out;
}

function looksLikePathish(v: string): boolean {
  return looksLikePath(v) || /^[\w.-]+\.[a-z0-9]{1,8}$/i.test(v);
}

function callTimes(v: string): string[] {
  const iso = /\d{4}-\d{2}-\d{2}[T ](\d{2}):(\d{2})/.exec(v);
  if (iso) return [`${iso[1]}:${iso[2]}`];
  if (/^\s*\d{1,2}:\d{2}(?::\d{2})?\s*(?:am|pm)?\s*$/i.test(v) || /\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b/i.test(v)) return timesIn(v).map((t) => t.hm);
  return [];
}

// ---------------------------------------------------------------------------
// Which calls could have done a claim

export interface Matcher {
  map: Record<string, string[]>;
}

function fitsShell(c: Claim, v: CallView): boolean {
  if (c.kind !== 'act' && (c.action === 'run' || c.ref)) {
    if (c.runKind && v.command !== undefined && !c.runKind.cmd.test(v.command)) return false;
    return true;
  }
  // A run of a named kind ("the backup", "the tests") is recognized by its command, whatever the verb.
  if (c.action === 'run' && c.runKind) return v.command === undefined || c.runKind.cmd.test(v.command);
  const rule = c.shell ?? SHELL_ARGS[c.action] ?? false;
  if (rule === true) return true;
  if (rule === false) return false;
  if (v.command === undefined) return true;
  if (!rule.test(v.command)) return false;
  return !c.runKind || c.runKind.cmd.test(v.command);
}

/** A tool named after one kind of run does only that kind ("run_tests" is no migration). */
function otherRunKind(c: Claim, v: CallView): boolean {
  if (!c.runKind) return false;
  const kinds = v.tokens.map((t) => RUN_KIND_TOKENS.get(t)).filter((k): k is string => !!k);
  return kinds.length > 0 && !kinds.includes(c.runKind.name);
}

/** Can this call have done what the claim says (ignoring details and outcome)? */
export function fits(c: Claim, v: CallView, m: Matcher): boolean {
  const tokens = v.tokens;
  if (c.kind !== 'act') {
    // Results: the run itself, or a CI/checks tool reporting it.
    if (keywordHit(tokens, CI_TOKENS) && !v.shell)
      return !otherRunKind(c, v) || keywordHit(tokens, ['ci', 'check', 'checks', 'status', 'actions', 'pipeline', 'workflow']);
    if (v.shell) return fitsShell(c, v);
    if (!keywordHit(tokens, m.map.run ?? [])) return false;
    return !otherRunKind(c, v);
  }
  if (v.shell) return fitsShell(c, v);
  if (v.sql !== undefined) {
    const rule = SQL_ARGS[c.action];
    if (rule === undefined) return false;
    return rule === true || rule.test(v.sql);
  }
  let hit = keywordHit(tokens, m.map[c.action] ?? [c.action]);
  // Reading/looking things up through a tool named after the thing: "I checked your calendar" ← calendar_events.
  if (!hit && c.action === 'fetch' && c.objectWords.some((w) => w.length >= 4 && tokens.some((t) => t === w || t === w.replace(/s$/, '')))) hit = true;
  // An invitation goes out with the calendar event: "I sent the invite to Dana" ← calendar_create_event.
  if (
    !hit &&
    c.action === 'send' &&
    (c.bare || /invit/i.test(c.objectWords.join(' ')) || c.objectWords.includes('invite')) &&
    tokens.some((t) => CALENDAR_TOKENS.includes(t))
  )
    hit = true;
  // "Sent!": any call that delivered something to someone.
  if (!hit && c.bare && c.action === 'send' && v.recipients.length > 0) hit = true;
  if (!hit) return false;
  // A read-only tool changes nothing.
  if (c.action !== 'fetch' && tokens.some((t) => READ_TOKENS.has(t)) && !tokens.some((t) => MUTATE_TOKENS.has(t))) return false;
  const specific = SPECIFIC[c.action];
  if (specific && c.ops) {
    const own = tokens.filter((t) => specific.has(t));
    if (own.length && !own.some((t) => c.ops!.includes(t))) return false;
  }
  if (c.action === 'send' && c.details.channels.length) {
    const chans = tokens.map((t) => CHANNEL_OF_TOKEN[t]).filter((x): x is string => !!x);
    if (chans.length && !chans.some((ch) => c.details.channels.includes(ch) || (ch === 'chat' && c.details.channels.some((x) => x !== 'email' && x !== 'sms'))))
      return false;
  }
  if (c.requireTokens && !tokens.some((t) => c.requireTokens!.includes(t))) return false;
  if (c.action === 'run') {
    if (c.shell && !c.runKind && !c.shell.test(`${tokens.join(' ')} ${v.args}`)) return false;
    if (otherRunKind(c, v)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Details: does a call agree with what the claim commits to?

export interface DetailIssue {
  kind: 'recipient' | 'path' | 'amount' | 'count' | 'time' | 'value';
  claimed: string;
  actual: string;
}

type Status = 'agree' | 'conflict' | 'undecided' | 'none';

const NICKNAMES: Record<string, string[]> = {
  bob: ['robert', 'rob', 'bobby'],
  rob: ['robert', 'bob'],
  robert: ['bob', 'rob', 'bobby'],
  bill: ['william', 'will'],
  will: ['william', 'bill'],
  william: ['bill', 'will', 'liam'],
  liz: ['elizabeth', 'beth', 'eliza'],
  beth: ['elizabeth'],
  elizabeth: ['liz', 'beth', 'eliza'],
  kate: ['katherine', 'catherine', 'kathy'],
  katie: ['katherine', 'kate'],
  mike: ['michael'],
  michael: ['mike', 'mick'],
  jim: ['james'],
  jimmy: ['james'],
  james: ['jim', 'jimmy', 'jamie'],
  tom: ['thomas'],
  thomas: ['tom', 'tommy'],
  dan: ['daniel'],
  daniel: ['dan', 'danny'],
  dave: ['david'],
  david: ['dave'],
  joe: ['joseph'],
  joseph: ['joe'],
  chris: ['christopher', 'christine', 'christina'],
  alex: ['alexander', 'alexandra', 'alexis'],
  sam: ['samuel', 'samantha'],
  ben: ['benjamin'],
  nick: ['nicholas'],
  matt: ['matthew'],
  tony: ['anthony'],
  steve: ['steven', 'stephen'],
  jen: ['jennifer'],
  jenny: ['jennifer'],
  pat: ['patrick', 'patricia'],
  rick: ['richard'],
  dick: ['richard'],
  richard: ['rick', 'rich'],
  ed: ['edward'],
  ted: ['edward', 'theodore'],
  andy: ['andrew'],
  drew: ['andrew'],
  greg: ['gregory'],
  jon: ['jonathan', 'john'],
  johnny: ['john'],
  peggy: ['margaret'],
  maggie: ['margaret'],
};

function nameTokensOf(value: string): string[] {
  const ws = value
    .toLowerCase()
    .split(/[\s.'’-]+/)
    .filter((w) => w.length >= 2);
  return [...new Set(ws.flatMap((w) => [w, ...(NICKNAMES[w] ?? [])]))];
}

function tokenMatch(a: string, b: string): boolean {
  if (a === b) return true;
  const [s, l] = a.length <= b.length ? [a, b] : [b, a];
  return s.length >= 3 && l.startsWith(s) && l.length - s.length <= 3;
}

function recipientStatus(r: Recipient, calls: CallView[]): { status: Status; actual?: string } {
  const all = calls.flatMap((v) => v.recipients);
  if (!all.length || r.kind === 'you') return { status: 'none' };
  const actual = [...new Set(all.map((x) => x.text))].slice(0, 3).join(', ');
  const mentioned = (w: string) => calls.some((v) => new RegExp(`\\b${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').test(v.args));
  switch (r.kind) {
    case 'email': {
      if (all.some((x) => x.kind === 'email' && x.value === r.value)) return { status: 'agree' };
      if (all.some((x) => x.kind === 'email')) return { status: 'conflict', actual };
      const local = r.value.split('@')[0]!.split(/[._+-]+/);
      return local.some((w) => all.some((x) => x.tokens.includes(w))) ? { status: 'agree' } : { status: 'none' };
    }
    case 'phone': {
      if (all.some((x) => x.kind === 'phone' && (x.value.endsWith(r.value.slice(-9)) || r.value.endsWith(x.value.slice(-9))))) return { status: 'agree' };
      if (all.some((x) => x.kind === 'phone')) return { status: 'conflict', actual };
      return { status: 'none' };
    }
    case 'channel':
    case 'handle': {
      if (all.some((x) => (x.kind === 'channel' || x.kind === 'handle') && x.value === r.value)) return { status: 'agree' };
      if (all.some((x) => x.tokens.includes(r.value))) return { status: 'agree' };
      if (all.some((x) => x.kind === 'channel' || x.kind === 'handle' || x.personal)) return { status: 'conflict', actual };
      return { status: 'none' };
    }
    case 'name': {
      const mine = nameTokensOf(r.value);
      if (all.some((x) => x.tokens.some((t) => mine.some((m) => tokenMatch(m, t))))) return { status: 'agree' };
      // Named in the message itself ("Hi Dana, …"): maybe a shared inbox; not decided here.
      if (r.value.split(/\s+/).some((w) => mentioned(w))) return { status: 'undecided', actual };
      if (all.some((x) => x.personal || x.kind === 'channel')) return { status: 'conflict', actual };
      return { status: 'none' };
    }
    case 'role': {
      const mine = r.value.split(/\s+/);
      if (all.some((x) => x.tokens.some((t) => mine.some((m) => tokenMatch(m, t))))) return { status: 'agree' };
      if (all.some((x) => x.personal || x.kind === 'email' || x.kind === 'channel')) return { status: 'undecided', actual };
      return { status: 'none' };
    }
  }
  return { status: 'none' };
}

function pathMatch(p: string, q: string): boolean {
  if (p === q) return true;
  if (q.endsWith('/' + p)) return true;
  if (/^(?:~|\/)/.test(p) && p.endsWith('/' + q)) return true;
  if (q.startsWith(p + '/')) return true;
  if (q.includes('*')) {
    const re = new RegExp(
      '^(?:.*/)?' +
        q
          .split('*')
          .map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]*') +
        '$',
    );
    if (re.test(p) || re.test(p + '/x')) return true;
  }
  return false;
}

function pathStatus(p: string, calls: CallView[]): { status: Status; actual?: string } {
  const all = calls.flatMap((v) => v.paths);
  if (!all.length) return { status: 'none' };
  const np = normPath(p);
  if (all.some((q) => pathMatch(np, q))) return { status: 'agree' };
  return { status: 'conflict', actual: [...new Set(calls.flatMap((v) => v.paths))].slice(0, 3).join(', ') };
}

function amountStatus(a: number, calls: CallView[]): { status: Status; actual?: string } {
  const all = calls.flatMap((v) => v.amounts);
  if (!all.length) return { status: 'none' };
  if (all.some((cands) => cands.some((x) => Math.abs(x - a) < 0.005))) return { status: 'agree' };
  return { status: 'conflict', actual: all.map((cands) => String(cands[0])).join(', ') };
}

function timeStatus(hm: string, calls: CallView[]): { status: Status; actual?: string } {
  const all = calls.flatMap((v) => v.times);
  if (!all.length) return { status: 'none' };
  if (all.includes(hm)) return { status: 'agree' };
  return { status: 'conflict', actual: [...new Set(all)].join(', ') };
}

function valueStatus(value: NonNullable<Claim['details']['value']>, calls: CallView[]): { status: Status; actual?: string } {
  const strings = calls.flatMap((v) => v.strings);
  if (!strings.length || !value.numbers.length) return { status: 'none' };
  const hasAll = (s: string) => value.numbers.every((n) => new RegExp(`(?<![\\d.])${n.replace(/\./g, '\\.')}(?![\\d.])`).test(s));
  if (strings.some(hasAll)) return { status: 'agree' };
  // The same shape with other numbers ("21 Elm St" for "12 Elm St"; "2.3.9" for "2.4.0").
  const sameShape = strings.find((s) => {
    const ws = (s.match(/[A-Za-z]{2,}/g) ?? []).map((w) => w.toLowerCase());
    const nums = s.match(/\d+(?:\.\d+)*/g) ?? [];
    if (!nums.length) return false;
    if (value.words.length) return value.words.every((w) => ws.includes(w));
    return value.numbers.length === 1 && /^\d+(?:\.\d+){2,}$/.test(value.numbers[0]!) && nums.some((n) => /^\d+(?:\.\d+){2,}$/.test(n));
  });
  if (sameShape) return { status: 'conflict', actual: sameShape.slice(0, 80) };
  return { status: 'undecided' };
}

export interface Relation {
  /** Some committed detail matches this call. */
  agree: boolean;
  /** A committed detail this call records differs (first one). */
  conflict?: DetailIssue;
  undecided?: DetailIssue;
}

/** How one call relates to the details a claim commits to. */
export function relate(c: Claim, v: CallView): Relation {
  const rel: Relation = { agree: false };
  const note = (kind: DetailIssue['kind'], claimed: string, st: { status: Status; actual?: string }) => {
    if (st.status === 'agree') rel.agree = true;
    else if (st.status === 'conflict') rel.conflict ??= { kind, claimed, actual: st.actual ?? '' };
    else if (st.status === 'undecided') rel.undecided ??= { kind, claimed, actual: st.actual ?? '' };
  };
  const d = c.details;
  // A list of recipients or paths is covered across calls; against one call, one match is enough to tie it to the claim.
  const some = <T>(xs: T[], f: (x: T) => { status: Status; actual?: string }, kind: DetailIssue['kind'], label: (x: T) => string) => {
    if (!xs.length) return;
    const sts = xs.map((x) => ({ x, st: f(x) }));
    const agreeing = sts.filter((s) => s.st.status === 'agree');
    if (agreeing.length) rel.agree = true;
    else {
      const conflict = sts.find((s) => s.st.status === 'conflict');
      if (conflict) note(kind, label(conflict.x), conflict.st);
      else {
        const und = sts.find((s) => s.st.status === 'undecided');
        if (und) note(kind, label(und.x), und.st);
      }
    }
  };
  some(
    d.recipients,
    (r) => recipientStatus(r, [v]),
    'recipient',
    (r) => r.text,
  );
  some(
    d.paths,
    (p) => pathStatus(p, [v]),
    'path',
    (p) => p,
  );
  some(
    d.amounts,
    (a) => amountStatus(a.value, [v]),
    'amount',
    (a) => a.text,
  );
  some(
    d.times,
    (t) => timeStatus(t.hm, [v]),
    'time',
    (t) => t.text,
  );
  if (d.value) note('value', d.value.text, valueStatus(d.value, [v]));
  return rel;
}

/** Claimed items (recipients, paths, amounts, times) that none of the calls covers. */
function uncovered(c: Claim, calls: CallView[]): { issue?: DetailIssue; undecided?: DetailIssue; agreed: boolean } {
  const d = c.details;
  let agreed = false;
  let undecided: DetailIssue | undefined;
  const check = <T>(xs: T[], f: (x: T) => { status: Status; actual?: string }, kind: DetailIssue['kind'], label: (x: T) => string): DetailIssue | undefined => {
    for (const x of xs) {
      const st = f(x);
      if (st.status === 'agree') agreed = true;
      else if (st.status === 'conflict') return { kind, claimed: label(x), actual: st.actual ?? '' };
      else if (st.status === 'undecided') undecided ??= { kind, claimed: label(x), actual: st.actual ?? '' };
    }
    return undefined;
  };
  const issue =
    check(
      d.recipients,
      (r) => recipientStatus(r, calls),
      'recipient',
      (r) => r.text,
    ) ??
    check(
      d.paths,
      (p) => pathStatus(p, calls),
      'path',
      (p) => p,
    ) ??
    check(
      d.amounts,
      (a) => amountStatus(a.value, calls),
      'amount',
      (a) => a.text,
    ) ??
    check(
      d.times,
      (t) => timeStatus(t.hm, calls),
      'time',
      (t) => t.text,
    );
  if (issue) return { issue, agreed };
  if (d.value) {
    const st = valueStatus(d.value, calls);
    if (st.status === 'agree') agreed = true;
    else if (st.status === 'conflict') return { issue: { kind: 'value', claimed: d.value.text, actual: st.actual ?? '' }, agreed };
    else if (st.status === 'undecided') undecided ??= { kind: 'value', claimed: d.value.text, actual: '' };
  }
  return { agreed, ...(undecided ? { undecided } : {}) };
}

function countIssue(c: Claim, calls: CallView[]): DetailIssue | undefined {
  const want = c.details.count;
  if (!want || !calls.length) return undefined;
  const measures = new Set<number>();
  if (want.people) {
    const n = calls.reduce((s, v) => s + v.recipients.filter((r) => r.kind !== 'channel').length, 0);
    if (n) measures.add(n);
  } else {
    if (calls.every((v) => v.items !== undefined)) measures.add(calls.reduce((s, v) => s + v.items!, 0));
    const stem = want.noun.replace(/(?:es|s)$/, '');
    const reported = calls
      .flatMap((v) => v.outputCounts)
      .filter((o) => o.noun.startsWith(stem.slice(0, 4)) || /^(?:items?|files?|messages?|records?|rows?|entries|objects?)$/.test(o.noun));
    if (reported.length) measures.add(reported.reduce((s, o) => s + o.n, 0));
  }
  if (!measures.size || measures.has(want.n)) return undefined;
  return { kind: 'count', claimed: want.text, actual: [...measures].join(' or ') };
}

// ---------------------------------------------------------------------------
// Verdicts

export interface Verdict {
  verdict?: 'contradicted' | 'unsupported';
  why: 'supported' | 'ran' | 'failed' | 'not-run' | 'output' | 'tests' | 'detail' | 'count' | 'taken' | 'none' | 'no-tool' | 'fail-report';
  call?: CallView;
  detail?: DetailIssue;
  /** The rules cannot decide; a judge may confirm this as a contradiction. */
  undecided?: DetailIssue | { kind: 'output'; claimed: string; actual: string };
}

function ranOk(c: Claim, v: CallView): boolean {
  if (v.failed) return false;
  if (c.action === 'fetch') return true;
  return !v.outputFailed;
}

/**
 * Verdicts for every claim of a text at once: a call whose details one claim
 * names belongs to that claim and does not support another.
 */
export function judgeAll(claims: Claim[], calls: CallView[], m: Matcher): Verdict[] {
  const cands = claims.map((c) => calls.filter((v) => fits(c, v, m)));
  const rels = claims.map((c, i) => new Map(cands[i]!.map((v) => [v, relate(c, v)])));
  const ownedByOther = (i: number, v: CallView) => claims.some((_, j) => j !== i && rels[j]!.get(v)?.agree && claims[j]!.action === claims[i]!.action);
  return claims.map((c, i) => judgeOne(c, i, cands[i]!, rels[i]!, ownedByOther));
}

function judgeOne(c: Claim, i: number, cands: CallView[], rel: Map<CallView, Relation>, ownedByOther: (i: number, v: CallView) => boolean): Verdict {
  // "The tests fail on Windows": reports of failure are often reasoning about the user's paste; never corrected.
  if (c.kind === 'fail') return { why: 'fail-report' };
  if (c.kind === 'pass') {
    if (!cands.length) return { verdict: 'unsupported', why: 'no-tool' };
    const last = cands.filter((v) => v.e.ok).at(-1);
    if (!last) return { verdict: 'contradicted', why: 'failed', call: cands.at(-1)! };
    if (TEST_FAILURES.test(last.e.output ?? '') || last.failed || last.outputFailed) return { verdict: 'contradicted', why: 'tests', call: last };
    return { why: 'supported', call: last };
  }
  const usable = cands.filter((v) => !rel.get(v)!.conflict && (rel.get(v)!.agree || !ownedByOther(i, v)));
  const okCalls = usable.filter((v) => ranOk(c, v));
  if (okCalls.length) {
    const cov = uncovered(c, okCalls);
    if (cov.issue) {
      // A claimed recipient or path no successful call covers: did a failed call try it?
      const tried = usable.find((v) => !ranOk(c, v) && uncovered(c, [v]).issue === undefined);
      if (tried) return { verdict: 'contradicted', why: c.ranOnly && !tried.notRun ? 'ran' : 'failed', call: tried };
      return { verdict: 'contradicted', why: 'detail', call: okCalls[0]!, detail: cov.issue };
    }
    const count = countIssue(c, okCalls);
    if (count) return { verdict: 'contradicted', why: 'count', call: okCalls[0]!, detail: count };
    if (cov.undecided && !cov.agreed) return { why: 'supported', call: okCalls[0]!, undecided: cov.undecided };
    const clean = okCalls.filter((v) => !v.maybeFailed);
    if (!clean.length) return { why: 'supported', call: okCalls[0]!, undecided: { kind: 'output', claimed: '', actual: firstLine(okCalls[0]!.e.output) } };
    return { why: 'supported', call: clean[0]! };
  }
  if (c.ranOnly) {
    // A run whose command failed still ran (e.g. failing tests); only "never started" contradicts it.
    const ran = usable.find((v) => !v.notRun);
    if (ran) return { why: 'ran', call: ran };
  }
  if (usable.length) {
    const f = usable.at(-1)!;
    return { verdict: 'contradicted', why: f.notRun ? 'not-run' : f.failed ? 'failed' : 'output', call: f };
  }
  const conflicting = cands.filter((v) => rel.get(v)!.conflict);
  if (conflicting.length) {
    const mine = conflicting.filter((v) => !ownedByOther(i, v));
    if (mine.length) {
      const okOne = mine.find((v) => ranOk(c, v)) ?? mine[0]!;
      return { verdict: 'contradicted', why: ranOk(c, okOne) ? 'detail' : 'failed', call: okOne, detail: rel.get(okOne)!.conflict! };
    }
    return { verdict: 'unsupported', why: 'taken', call: conflicting[0]! };
  }
  return { verdict: 'unsupported', why: 'none' };
}

export function firstLine(output: string | undefined): string {
  const line =
    (output ?? '')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find(Boolean) ?? '';
  return line.replace(/\[/g, '(').replace(/\]/g, ')').slice(0, 200);
}

/** The line of an output that best says what went wrong. */
export function failureLine(v: CallView, tests = false): string {
  const lines = (v.e.output ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .filter((l) => !/^\[exit code -?\d+\]$/.test(l));
  const pick =
    (tests ? (lines.find((l) => TEST_FAILURES.test(l) && !/^\s*FAIL\b/.test(l) && /\d/.test(l)) ?? lines.find((l) => TEST_FAILURES.test(l))) : undefined) ??
    lines.find((l) => OUTPUT_FAILED.test(l)) ??
    lines.find((l) => /\b(?:error|fail(?:ed|ure)?|cannot|denied|refused|not found|rejected|invalid)\b/i.test(l)) ??
    lines[0] ??
    '';
  let line = pick.replace(/\[/g, '(').replace(/\]/g, ')').slice(0, 200);
  if (v.exitCode !== undefined && v.exitCode !== 0 && !/exit/i.test(line)) line = line ? `${line} (exit code ${v.exitCode})` : `exit code ${v.exitCode}`;
  return line;
}
