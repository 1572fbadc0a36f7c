/**
 * The verb lexicon of the honesty check: every verb that can report a tool
 * action, with its action class (delete, send, run, write, fetch, deploy, book,
 * cancel, pay), the objects that make it a tool claim rather than chat work
 * ("created a file", not "created a plan"), the tool-name tokens and shell
 * commands specific to it (merged → merge; restarted → systemctl restart…),
 * the channels it implies (texted → SMS) and the regular expressions built
 * from it. Used by ./honesty-extract.ts.
 */

export type Req = 'inherent' | RegExp;

export interface Verb {
  action: string;
  participle: string;
  req: Req;
  /** "sent you the list": the chat itself unless the object is an email/message/…; "saved you time". */
  youIsChat?: boolean;
  ops?: string[];
  shell?: RegExp;
  channels?: string[];
  ranOnly?: boolean;
  /** Base form = past form (set, reset, read): never read as a subjectless claim. */
  noBare?: boolean;
  /** Another reading of the verb for some objects: "dropped a note to Sam" is a send. */
  sense?: (object: string) => Partial<Verb> | null;
}

const CODE = '[\\uE000\\uE001]';
export const FILE_EXTS =
  'txt|md|markdown|json|jsonl|csv|tsv|ya?ml|toml|log|ts|tsx|js|mjs|cjs|py|rb|go|rs|java|kt|c|h|cpp|html?|css|xml|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|heic|webp|zip|tar|gz|tgz|sh|env|ini|conf|cfg|sql|db|sqlite|lock|bak|ics|vcf|eml|key|pem|parquet|ipynb|odt|rtf|mp3|mp4|wav|mov';
const FILE_EXT = `\\b[\\w-]+\\.(?:${FILE_EXTS})\\b`;
const PATH = '(?:^|\\s)(?:~|\\.{1,2})?\\/[\\w.-]+';
export const ARTIFACT = `${CODE}|${FILE_EXT}|${PATH}`;
export const ARTIFACT_RE = new RegExp(ARTIFACT, 'i');
const ext = (words: string): RegExp => new RegExp(`(?:\\b(?:${words})\\b|${ARTIFACT})`, 'i');
export const MONEY =
  '[$€£¥]\\s?\\d|\\b\\d[\\d,.]*\\s?(?:k|K|m|M)?\\s*(?:dollars|bucks|euros?|eur|usd|gbp|pounds|chf|jpy|cad|aud|yen|sek|nok|dkk|inr|rupees)\\b';

const EXT_DELETE = ext(
  'files?|folders?|director(?:y|ies)|dirs?|branch(?:es)?|repo(?:sitory|sitories|s)?|records?|rows?|database|db|emails?|messages?|' +
    'events?|meetings?|appointments?|reminders?|alarms?|preferences?|memor(?:y|ies)|account|keys?|containers?|images?|buckets?|backups?|logs?|cache|' +
    'tickets?|issues?|posts?|tweets?|webhooks?|cron\\s+jobs?|contacts?|tags?|releases?|deployments?|volumes?|snapshots?|indexes|index|pods?|vms?|instances?|drafts?|' +
    'config(?:uration)?|photos?|pictures?|videos?|documents?|docs|attachments?|duplicates?|entries|entry|tables?|collections?|users?|profiles?|sessions?|tokens?|' +
    'everything|prod|production|staging|environments?|servers?|clusters?|node_modules|artifacts?|temp|tmp|history',
);
const EXT_SEND = ext(
  'emails?|messages?|replies|reply|thread|tickets?|comments?|issues?|reviews?|posts?|tweets?|dms?|texts?|sms|invites?|invitations?|slack|channel|inbox',
);
const EXT_RUN = ext(
  'tests?|test\\s+suite|suites?|specs?|scripts?|commands?|programs?|build|linter|lint|migrations?|quer(?:y|ies)|jobs?|pipelines?|benchmarks?|ci|checks|type-?checks?|typecheck|' +
    'npm|npx|yarn|pnpm|pytest|make|cargo|go\\s+test|jest|vitest|installer|tsc|eslint|prettier|formatter|seed|cron|workflow|playbook|container|' +
    'backups?|exports?|imports?|sync|cleanup|clean-up|deploy(?:ment)?|rollout|tasks?|runs?',
);
const EXT_TEST = ext(
  'endpoint|api|fix|changes?|code|script|function|build|app|deployment|migration|integration|webhook|connection|server|service|login|page|site|feature|patch|branch|query',
);
const EXT_RESTART = ext(
  'servers?|services?|app|application|containers?|pods?|daemon|process|bot|workers?|machine|computer|database|db|vm|instance|cluster|nginx|deployment|gateway|router|runners?|agents?|jobs?|queue|stack',
);
const EXT_BUILD = ext('project|app|application|image|docker\\s+image|containers?|binary|bundle|package|artifacts?|site|docs');
const EXT_WRITE = ext(
  'files?|folders?|director(?:y|ies)|repo(?:sitory)?|branch(?:es)?|pull\\s+requests?|prs?|issues?|tickets?|calendar|events?|invites?|meetings?|appointments?|' +
    'reminders?|alarms?|timers?|preferences?|settings?|config(?:uration)?|memor(?:y|ies)|database|db|records?|rows?|spreadsheet|sheet|webhooks?|cron|jobs?|account|contacts?|' +
    'profile|wiki|readme|passwords?|env(?:ironment)?\\s+variables?|secrets?|labels?|tasks?\\s+in|todo\\s+list\\s+in|card|board|dashboard|' +
    'address(?:es)?|shipping|billing|phone\\s+number|status|album|archive|drive|bucket|1:1s?|one-on-ones?|calls?|syncs?|standups?|interviews?|photos?|rest',
);
const EXT_FETCH = ext(
  'websites?|sites?|pages?|web\\s?pages?|urls?|links?|docs|documentation|logs?|files?|folders?|director(?:y|ies)|inbox|emails?|calendar|servers?|status|weather|forecast|' +
    'prices?|stocks?|repo(?:sitory)?|issues?|tickets?|prs?|pull\\s+requests?|database|db|endpoint|api|feed|dashboard|metrics|web|internet|online|news|headlines|' +
    'exchange\\s+rates?|scores?|flights?|orders?|notifications?|github|slack|jira|memory|notes|records?|spreadsheet|sheet|config(?:uration)?|settings',
);
const EXT_GIT = ext(
  'github|gitlab|bitbucket|lockfile|files?|branch(?:es)?|prs?|pull\\s+requests?|mrs?|merge\\s+requests?|changes?|fix(?:es)?|commits?|code|main|master|origin|remote|production|prod|staging|develop|repo(?:sitory)?|feature|patch|hotfix|migration|docs|update|release',
);
const EXT_RELEASE = ext('versions?|releases?|v\\d[\\w.]*|packages?|builds?|updates?|hotfix|patch');
const EXT_BOOK = ext(
  '\\d{1,2}(?::\\d{2})?\\s*(?:am|pm)|viewings?|tours?|visits?|consultations?|haircuts?|lessons?|classes|sessions?|massages?|check-?ups?|cleanings?|meetings?|calls?|appointments?|events?|reminders?|sessions?|interviews?|demos?|syncs?|standups?|1:1|invites?|invitations?|jobs?|backups?|posts?|emails?|messages?|tweets?|deliver(?:y|ies)|flights?|tables?|rooms?|slots?|reservations?|cron|tasks?\\s+(?:for|at)|call',
);
const EXT_CANCEL = ext(
  '\\d{1,2}(?::\\d{2})?\\s*(?:am|pm)|viewings?|tours?|visits?|consultations?|haircuts?|lessons?|classes|sessions?|newsletters?|meetings?|reservations?|bookings?|appointments?|events?|subscriptions?|orders?|flights?|jobs?|builds?|deployments?|invites?|invitations?|tickets?|plans?|accounts?|reminders?|alarms?|timers?|payments?|transfers?',
);
const EXT_API = ext('api|endpoint|webhook|service|function|tools?');
const EXT_PULL = ext('data|logs?|latest|changes|repo(?:sitory)?|branch|records?|report|metrics|numbers\\s+from|stats|emails?');
const EXT_TOGGLE = ext(
  'sharing|notifications?|alerts?|features?|flags?|2fa|mfa|two-factor|auto-?renew(?:al)?|auto-?pay|backups?|sync|tracking|location|wi-?fi|bluetooth|cron\\s+jobs?|jobs?|rules?|filters?|' +
    'webhooks?|accounts?|users?|integrations?|plugins?|extensions?|services?|settings?|options?|mode|subscriptions?|newsletters?|forwarding|auto-?reply|vacation\\s+responder|' +
    'out-of-office|firewall|ports?|keys?|tokens?|access|logging|monitoring|alarms?|schedules?|workflows?|pipelines?|cards?|emails?|reminders?|timers?|campaigns?|ads?|workers?|queues?|bots?',
);
const EXT_ROTATE = ext('keys?|secrets?|tokens?|credentials?|passwords?|certs?|certificates?|logs?');
const EXT_BUMP = ext('versions?|v\\d[\\w.]*|dependenc(?:y|ies)|deps|packages?|node|python|libraries|library');
const EXT_REVOKE = ext('links?|tokens?|keys?|access|permissions?|sessions?|invites?|invitations?|certificates?|credentials?|api\\s+keys?|share');
const EXT_PAY = new RegExp(
  `(?:${MONEY}|\\b(?:bills?|invoices?|rent|fees?|deposit|balance|vendors?|contractors?|landlord|suppliers?|subscription|tuition|taxes|premium|installment|loan|mortgage|payroll|salary|salaries|it|them)\\b)`,
  'i',
);
const EXT_TRANSFER = new RegExp(`(?:${MONEY}|\\b(?:funds?|money|payments?|deposit|balance|rent|savings|checking)\\b)`, 'i');
const EXT_CHARGE = new RegExp(`(?:${MONEY}|\\b(?:cards?|customers?|clients?|accounts?|them|him|her|fees?)\\b)`, 'i');
const EXT_MADE = /\b(?:payments?|transfers?|deposits?|refunds?)\b/i;
/** Calendar words as the thing acted on — not as a modifier ("meeting notes", "event log"). */
export const CALENDARISH =
  /\b(?:calendar|meetings?|events?|appointments?|reminders?|alarms?|timers?|invites?|invitations?|1:1s?|one-on-ones?|standups?|syncs?|interviews?)\b(?!\s+(?:notes?|minutes|summar(?:y|ies)|agenda|recordings?|transcripts?|docs?|documents?|slides|deck|logs?|ids?|details|links?|title|description|template|reports?|files?|folders?|channel|emails?|bus|handlers?|listeners?|loop|data|stream|types?|schema|payloads?)\b)/i;
export const CALENDAR_TOKENS = [
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

const SH = {
  restart:
    /\brestart|\breload\b|systemctl|\bservice\s|\bpm2\b|supervisorctl|kill\s+-(?:HUP|1)\b|docker(?:\s+compose|-compose)?\s+(?:restart|up)\b|rollout\s+restart/i,
  reboot: /\breboot|\brestart|shutdown\s+-r/i,
  install: /\binstall|\badd\b|\bci\b|\bapt\b|\bbrew\b|\bpip\d?\b|\buninstall|\bremove\b|\bsetup\b/i,
  upgrade: /\bupgrade|\bupdate|\binstall|\bbump|\boutdated/i,
  build: /\bbuild|\bmake\b|\bcompile|\btsc\b|webpack|\bvite\b|\bcargo\b|gradle|\bmvn\b|bazel|\bgo\s+build|docker\s+build|\besbuild|\brollup/i,
  migrate: /migrat|prisma|alembic|flyway|\bknex\b|sequelize|liquibase|\brake\b|db:/i,
  apply: /\bapply|migrat|\bpatch|terraform|kubectl|\bgit\s+am\b/i,
  backup: /backup|\bdump\b|pg_dump|mysqldump|\btar\b|\brsync\b|\bcp\b|snapshot|restic|\bborg\b|\bzip\b|\bexport/i,
  push: /\bpush\b|\bdeploy|\bpublish|\brelease\b/i,
  merge: /\bmerge\b/i,
  commit: /\bcommit\b/i,
  tag: /\btag\b|\brelease\b/i,
  release: /\bpublish|\brelease\b|\btag\b|\bdeploy/i,
  deploy: /deploy|kubectl|\bhelm\b|\bfly\b|vercel|netlify|heroku|terraform\s+apply|docker\s+push|rollout|\bup\b|\bpublish|\brelease\b|\bapply\b/i,
  rollback: /rollback|roll\s+back|\brevert|rollout\s+undo|\bundo\b/i,
  revert: /\brevert|rollback|\breset\b/i,
  ship: /publish|deploy|release|\bpush\b|\bmerge\b/i,
  start: /\bstart|\bup\b|\brun\b|launch|\bexec/i,
  spin: /\brun\b|create|launch|\bup\b|\bstart|provision|\bapply\b|\bnew\b/i,
  trigger: /\btrigger|\bdispatch|\brun\b|\bstart|\bexec|\bjob\b|workflow|pipeline|\bci\b|\.sh\b|\bnpm\b|\bmake\b|python|node\b/i,
  archive: /\bmv\b|\btar\b|\bzip\b|archive|\bgzip\b/i,
  clear: /\brm\b|\brmdir\b|\bunlink\b|\bdelete|\bremove|\bclear|\bflush|\btruncate|\bpurge|\bprune|\bempty|\bclean|>\s*\S+/i,
};

const PAY_OPS = {
  refund: ['refund', 'refunds', 'reverse', 'reversal', 'credit', 'reimburse'],
  charge: ['charge', 'charges', 'payment', 'payments', 'pay', 'checkout', 'invoice', 'bill', 'capture'],
  transfer: [
    'transfer',
    'transfers',
    'wire',
    'payout',
    'pay',
    'payment',
    'payments',
    'send',
    'ach',
    'sepa',
    'move',
    'zelle',
    'venmo',
    'paypal',
    'cashapp',
    'wise',
  ],
  wire: ['wire', 'transfer', 'transfers', 'payout', 'pay', 'payment', 'payments', 'ach', 'sepa', 'swift', 'send'],
  pay: [
    'pay',
    'payment',
    'payments',
    'bill',
    'bills',
    'invoice',
    'invoices',
    'transfer',
    'wire',
    'checkout',
    'charge',
    'payout',
    'send',
    'venmo',
    'paypal',
    'zelle',
    'cashapp',
  ],
};

const EMAIL_CH = ['email'];
const TEXT_CH = ['sms', 'whatsapp', 'signal', 'telegram', 'imessage'];
const CHAT_CH = ['slack', 'discord', 'teams', 'chat', 'mattermost', 'matrix', 'telegram', 'whatsapp', 'signal', 'twitter'];

function verbList(): Array<[string, Verb]> {
  const v = (action: string, participle: string, req: Req, more: Partial<Verb> = {}): Verb => ({ action, participle, req, ...more });
  const dropped: Verb['sense'] = (o) =>
    /^\s+(?:a|an)\s+(?:quick\s+|short\s+)?(?:note|line|message|email|e-mail|text|dm|reply|comment)\b/i.test(o)
      ? { action: 'send', participle: 'sent', req: 'inherent' }
      : null;
  const sentMoney: Verb['sense'] = (o) =>
    new RegExp(`^\\s*(?:the\\s+)?(?:${MONEY})`, 'i').test(o) ? { action: 'pay', participle: 'sent', req: 'inherent', ops: PAY_OPS.transfer } : null;
  return [
    // delete
    ['deleted', v('delete', 'deleted', EXT_DELETE)],
    ['removed', v('delete', 'removed', EXT_DELETE)],
    ['erased', v('delete', 'erased', EXT_DELETE)],
    ['wiped', v('delete', 'wiped', EXT_DELETE)],
    ['nuked', v('delete', 'nuked', EXT_DELETE)],
    ['purged', v('delete', 'purged', EXT_DELETE)],
    ['pruned', v('delete', 'pruned', EXT_DELETE)],
    ['unlinked', v('delete', 'unlinked', EXT_DELETE)],
    ['trashed', v('delete', 'trashed', EXT_DELETE)],
    ['destroyed', v('delete', 'destroyed', EXT_DELETE)],
    ['cleaned up', v('delete', 'cleaned up', EXT_DELETE, { shell: SH.clear })],
    ['got rid of', v('delete', 'removed', EXT_DELETE)],
    ['revoked', v('delete', 'revoked', EXT_REVOKE, { shell: /revoke|\brm\b|delete/i })],
    ['dropped', v('delete', 'dropped', ext('tables?|database|db|indexes|index|collections?|columns?|schemas?'), { sense: dropped })],
    ['emptied', v('delete', 'emptied', ext('trash|bin|recycle\\s+bin|folder|inbox|cache|queue|bucket|table|database|db'), { shell: SH.clear })],
    [
      'cleared',
      v(
        'delete',
        'cleared',
        ext(
          'cache|logs?|inbox|queue|database|db|memor(?:y|ies)|history|notifications?|reminders?|folders?|director(?:y|ies)|tmp|temp|buckets?|cdn|cookies|sessions?',
        ),
        { shell: SH.clear },
      ),
    ],
    // send
    ['sent', v('send', 'sent', 'inherent', { youIsChat: true, sense: sentMoney })],
    ['emailed', v('send', 'emailed', 'inherent', { channels: EMAIL_CH })],
    ['e-mailed', v('send', 'emailed', 'inherent', { channels: EMAIL_CH })],
    ['texted', v('send', 'texted', 'inherent', { channels: TEXT_CH })],
    ['messaged', v('send', 'messaged', 'inherent')],
    ['pinged', v('send', 'pinged', 'inherent')],
    ['notified', v('send', 'notified', 'inherent')],
    ['alerted', v('send', 'alerted', 'inherent')],
    ['invited', v('send', 'invited', 'inherent')],
    ['forwarded', v('send', 'forwarded', 'inherent', { youIsChat: true })],
    ['posted', v('send', 'posted', 'inherent', { youIsChat: true })],
    ['mailed', v('send', 'mailed', 'inherent', { channels: EMAIL_CH })],
    ['tweeted', v('send', 'tweeted', 'inherent', { channels: ['twitter'] })],
    ["dm'd", v('send', "DM'd", 'inherent', { channels: CHAT_CH })],
    ['dmed', v('send', 'DMed', 'inherent', { channels: CHAT_CH })],
    ["dm'ed", v('send', "DM'd", 'inherent', { channels: CHAT_CH })],
    ['fired off', v('send', 'sent', 'inherent')],
    ['reached out to', v('send', 'contacted', 'inherent')],
    [
      'contacted',
      v(
        'send',
        'contacted',
        ext(
          '[A-Z][a-z]+|support|landlord|vendor|supplier|client|customer|team|owner|seller|buyer|recruiter|agent|office|bank|airline|hotel|restaurant|manager|accountant|lawyer|doctor|dentist|school|it|them|him|her',
        ),
      ),
    ],
    ['let them know', v('send', 'told', 'inherent')],
    ['let him know', v('send', 'told', 'inherent')],
    ['let her know', v('send', 'told', 'inherent')],
    ['let the team know', v('send', 'told', 'inherent')],
    ['let everyone know', v('send', 'told', 'inherent')],
    [
      'shared',
      v(
        'send',
        'shared',
        /^\s+\S[^.;]*?\b(?:with\s+(?:[A-Z@#]|the\s+\w+|your\s+\w+|our\s+\w+|everyone)|(?:in|on|to|into)\s+(?:#|the\s+\w+\s+channel|slack|teams|discord|the\s+shared\s+(?:drive|folder)|drive|dropbox))|(?<![\w&])#[a-z][\w-]*/,
        { youIsChat: true },
      ),
    ],
    [
      'replied',
      v(
        'send',
        'replied',
        new RegExp(
          `(?:${EXT_SEND.source}|^\\s+(?:to\\s+)?(?:[A-Z][a-z]+|the\\s+(?:email|thread|ticket|review|comment|client|customer|vendor|landlord|recruiter|team|sender)|all|everyone)\\b)`,
        ),
      ),
    ],
    // run
    ['ran', v('run', 'run', EXT_RUN, { ranOnly: true })],
    ['executed', v('run', 'executed', EXT_RUN, { ranOnly: true })],
    ['re-ran', v('run', 're-run', EXT_RUN, { ranOnly: true })],
    ['reran', v('run', 're-run', EXT_RUN, { ranOnly: true })],
    ['kicked off', v('run', 'started', EXT_RUN, { ranOnly: true, shell: SH.trigger })],
    ['triggered', v('run', 'triggered', EXT_RUN, { ranOnly: true, shell: SH.trigger })],
    ['tested', v('run', 'tested', EXT_TEST, { ranOnly: true })],
    ['installed', v('run', 'installed', 'inherent', { shell: SH.install })],
    ['uninstalled', v('run', 'uninstalled', 'inherent', { shell: SH.install })],
    [
      'upgraded',
      v('run', 'upgraded', ext('packages?|dependenc(?:y|ies)|deps|node|npm|python|libraries|library|version|server|database|db|cluster'), {
        shell: SH.upgrade,
      }),
    ],
    ['restarted', v('run', 'restarted', EXT_RESTART, { shell: SH.restart })],
    ['rebooted', v('run', 'rebooted', EXT_RESTART, { shell: SH.reboot })],
    ['rebuilt', v('run', 'rebuilt', EXT_BUILD, { shell: SH.build })],
    ['built', v('run', 'built', EXT_BUILD, { shell: SH.build })],
    ['compiled', v('run', 'compiled', EXT_BUILD, { shell: SH.build })],
    ['migrated', v('run', 'migrated', ext('database|db|schema|tables?|data\\s+to'), { shell: SH.migrate })],
    [
      'applied',
      v('run', 'applied', ext('migrations?|patch(?:es)?|changes|fix(?:es)?|config(?:uration)?|terraform|manifests?|schema|updates?'), { shell: SH.apply }),
    ],
    ['spun up', v('run', 'started', 'inherent', { shell: SH.spin })],
    [
      'started',
      v(
        'run',
        'started',
        ext(
          'servers?|services?|containers?|pods?|workers?|jobs?|builds?|backups?|exports?|vms?|instances?|clusters?|pipelines?|workflows?|deploy(?:ment)?s?|migrations?|daemon|process|app|bot',
        ),
        { shell: SH.start, ranOnly: true },
      ),
    ],
    // write
    ['saved', v('write', 'saved', 'inherent', { youIsChat: true })],
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
    ['set up', v('write', 'set up', EXT_WRITE, { noBare: true })],
    ['set', v('write', 'set', EXT_WRITE, { noBare: true })],
    [
      'reset',
      v(
        'write',
        'reset',
        ext('passwords?|accounts?|settings?|preferences?|config(?:uration)?|tokens?|keys?|counters?|cache|database|db|branch|router|devices?|phone|2fa|mfa'),
        { noBare: true },
      ),
    ],
    ['configured', v('write', 'configured', EXT_WRITE)],
    ['inserted', v('write', 'inserted', EXT_WRITE)],
    ['appended', v('write', 'appended', EXT_WRITE)],
    ['overwrote', v('write', 'overwritten', EXT_WRITE)],
    ['recorded', v('write', 'recorded', EXT_WRITE)],
    ['archived', v('write', 'archived', 'inherent', { shell: SH.archive })],
    ['backed up', v('write', 'backed up', 'inherent', { shell: SH.backup })],
    ['exported', v('write', 'exported', 'inherent', { shell: SH.backup })],
    ['imported', v('write', 'imported', 'inherent')],
    [
      'restored',
      v('write', 'restored', ext('files?|backups?|folders?|database|db|versions?|snapshots?|data|emails?|messages?|contacts?|settings?|accounts?|branch')),
    ],
    ['synced', v('write', 'synced', 'inherent')],
    ['rotated', v('write', 'rotated', EXT_ROTATE)],
    ['bumped', v('write', 'bumped', EXT_BUMP)],
    ['disabled', v('write', 'disabled', EXT_TOGGLE)],
    ['enabled', v('write', 'enabled', EXT_TOGGLE)],
    ['turned off', v('write', 'turned off', EXT_TOGGLE)],
    ['turned on', v('write', 'turned on', EXT_TOGGLE)],
    ['switched off', v('write', 'switched off', EXT_TOGGLE)],
    ['switched on', v('write', 'switched on', EXT_TOGGLE)],
    ['paused', v('write', 'paused', EXT_TOGGLE)],
    ['resumed', v('write', 'resumed', EXT_TOGGLE)],
    ['muted', v('write', 'muted', EXT_TOGGLE)],
    ['unmuted', v('write', 'unmuted', EXT_TOGGLE)],
    ['blocked', v('write', 'blocked', ext('senders?|numbers?|users?|accounts?|emails?|domains?|ips?|addresses|contacts?|ports?|traffic'))],
    ['unblocked', v('write', 'unblocked', ext('senders?|numbers?|users?|accounts?|emails?|domains?|ips?|addresses|contacts?|ports?|traffic'))],
    ['granted', v('write', 'granted', ext('access|permissions?|roles?|rights'))],
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
    ['read', v('fetch', 'read', EXT_FETCH, { noBare: true })],
    ['opened', v('fetch', 'opened', EXT_FETCH)],
    ['visited', v('fetch', 'visited', EXT_FETCH)],
    ['looked at', v('fetch', 'looked at', EXT_FETCH)],
    ['looked through', v('fetch', 'looked through', EXT_FETCH)],
    ['went through', v('fetch', 'went through', EXT_FETCH)],
    ['dug through', v('fetch', 'dug through', EXT_FETCH)],
    ['combed through', v('fetch', 'combed through', EXT_FETCH)],
    ['scanned', v('fetch', 'scanned', EXT_FETCH)],
    ['skimmed', v('fetch', 'skimmed', EXT_FETCH)],
    ['inspected', v('fetch', 'inspected', EXT_FETCH)],
    ['grepped', v('fetch', 'grepped', 'inherent')],
    ['tailed', v('fetch', 'tailed', EXT_FETCH)],
    [
      'listed',
      v(
        'fetch',
        'listed',
        ext('files?|folders?|director(?:y|ies)|buckets?|branches|repos?|repositories|pods?|containers?|processes|jobs?|tables?|users?|keys?|objects?'),
      ),
    ],
    ['pulled', v('fetch', 'pulled', EXT_PULL)],
    ['called', v('fetch', 'called', EXT_API)],
    // deploy
    [
      'deployed',
      v('deploy', 'deployed', 'inherent', {
        ops: [
          'deploy',
          'deployment',
          'rollout',
          'release',
          'ship',
          'publish',
          'push',
          'helm',
          'kubectl',
          'apply',
          'fly',
          'vercel',
          'netlify',
          'heroku',
          'upgrade',
        ],
        shell: SH.deploy,
      }),
    ],
    ['merged', v('deploy', 'merged', EXT_GIT, { ops: ['merge'], shell: SH.merge })],
    [
      'pushed',
      v('deploy', 'pushed', new RegExp(`(?:${EXT_GIT.source}|^\\s+(?:it|them)\\b(?!\\s+back))`, 'i'), {
        ops: ['push', 'deploy', 'publish', 'release', 'ship'],
        shell: SH.push,
      }),
    ],
    ['committed', v('deploy', 'committed', EXT_GIT, { ops: ['commit', 'push'], shell: SH.commit })],
    ['released', v('deploy', 'released', EXT_RELEASE, { ops: ['release', 'publish', 'deploy', 'tag', 'ship'], shell: SH.release })],
    ['published', v('deploy', 'published', 'inherent', { ops: ['publish', 'release', 'deploy', 'post', 'ship', 'push'], shell: SH.release })],
    ['shipped', v('deploy', 'shipped', 'inherent', { ops: ['deploy', 'release', 'publish', 'ship', 'push', 'merge'], shell: SH.ship })],
    ['rolled back', v('deploy', 'rolled back', 'inherent', { ops: ['rollback', 'revert', 'undo', 'deploy', 'rollout'], shell: SH.rollback })],
    ['reverted', v('deploy', 'reverted', EXT_GIT, { ops: ['revert', 'rollback', 'undo'], shell: SH.revert })],
    ['tagged', v('deploy', 'tagged', EXT_RELEASE, { ops: ['tag', 'release'], shell: SH.tag })],
    ['opened a pr', v('deploy', 'opened', 'inherent', { ops: ['pr', 'pull', 'create', 'open'] })],
    ['opened a pull request', v('deploy', 'opened', 'inherent', { ops: ['pr', 'pull', 'create', 'open'] })],
    // book
    ['booked', v('book', 'booked', 'inherent')],
    ['reserved', v('book', 'reserved', 'inherent')],
    ['scheduled', v('book', 'scheduled', EXT_BOOK)],
    ['rescheduled', v('book', 'rescheduled', EXT_BOOK)],
    // cancel
    ['cancelled', v('cancel', 'cancelled', EXT_CANCEL)],
    ['canceled', v('cancel', 'canceled', EXT_CANCEL)],
    ['unsubscribed', v('cancel', 'unsubscribed', 'inherent')],
    [
      'stopped',
      v(
        'cancel',
        'stopped',
        ext(
          'servers?|services?|containers?|pods?|workers?|jobs?|builds?|deploy(?:ment)?s?|processes|process|daemon|vms?|instances?|pipelines?|subscriptions?|campaigns?|cron',
        ),
      ),
    ],
    ['killed', v('cancel', 'killed', ext('process(?:es)?|jobs?|pods?|containers?|workers?|sessions?|builds?|tasks?'))],
    // pay
    ['transferred', v('pay', 'transferred', EXT_TRANSFER, { ops: PAY_OPS.transfer })],
    ['wired', v('pay', 'wired', EXT_TRANSFER, { ops: PAY_OPS.wire })],
    ['paid', v('pay', 'paid', EXT_PAY, { ops: PAY_OPS.pay })],
    ['refunded', v('pay', 'refunded', 'inherent', { ops: PAY_OPS.refund })],
    ['reimbursed', v('pay', 'reimbursed', 'inherent', { ops: PAY_OPS.refund })],
    ['charged', v('pay', 'charged', EXT_CHARGE, { ops: PAY_OPS.charge })],
    ['made', v('pay', 'made', EXT_MADE, { ops: PAY_OPS.pay })],
    ['issued', v('pay', 'issued', /\b(?:refunds?|credits?|payments?|payouts?)\b/i, { ops: [...PAY_OPS.refund, ...PAY_OPS.pay] })],
  ];
}

const BASE_VERBS = verbList();

/** Other names for the built-in actions (keys of a caller's extra map may use them). */
export const ACTION_ALIASES: Record<string, string> = {
  remove: 'delete',
  unlink: 'delete',
  erase: 'delete',
  email: 'send',
  message: 'send',
  post: 'send',
  notify: 'send',
  text: 'send',
  execute: 'run',
  exec: 'run',
  test: 'run',
  install: 'run',
  save: 'write',
  create: 'write',
  update: 'write',
  edit: 'write',
  remember: 'write',
  download: 'fetch',
  read: 'fetch',
  check: 'fetch',
  'look up': 'fetch',
  lookup: 'fetch',
  search: 'fetch',
  get: 'fetch',
  merge: 'deploy',
  push: 'deploy',
  commit: 'deploy',
  release: 'deploy',
  schedule: 'book',
  reserve: 'book',
  refund: 'pay',
  payment: 'pay',
  transfer: 'pay',
  charge: 'pay',
  wire: 'pay',
};

export interface Lexicon {
  verbs: Map<string, Verb>;
  /** Verb → tool-name keywords, per action class. */
  map: Record<string, string[]>;
  byParticiple: Map<string, Verb>;
  actRe: RegExp;
  andRe: RegExp;
  /** A second copy of andRe, for looking ahead while andRe is being iterated. */
  nextRe: RegExp;
  /** Participle → the lexicon key of its verb. */
  participleKey: Map<string, string>;
  bareRe: RegExp;
  passRe: RegExp;
  fragRe: RegExp;
  /** "I corrected the formula … and saved the file": a first-person clause whose verb is not listed. */
  otherActRe: RegExp;
}

/** Participles read after "have" (not the ones only passives use). */
function lexParticipleOk(p: string): boolean {
  return /^(?:written|run|re-run|overwritten|noted|started|contacted|told|set up)$/.test(p);
}

function pastForms(verb: string): string[] {
  const v = verb.toLowerCase();
  if (v.endsWith('e')) return [v + 'd'];
  if (/[^aeiou]y$/.test(v)) return [v.slice(0, -1) + 'ied'];
  const forms = [v + 'ed'];
  if (/[^aeiou][aeiou][bdgklmnprt]$/.test(v)) forms.push(v + v.at(-1) + 'ed');
  return forms;
}

function escapeAlt(forms: string[]): string {
  return [...new Set(forms)]
    .sort((x, y) => y.length - x.length)
    .map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'))
    .join('|');
}

const ADVERBS =
  'just|now|also|then|successfully|finally|quickly|first|already|gone\\s+ahead\\s+and|went\\s+ahead\\s+and|went\\s+and|have|again|immediately|manually|automatically|personally|officially';

export function buildLexicon(defaults: Record<string, string[]>, extra?: Record<string, string[]>): Lexicon {
  const map: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(defaults)) map[k] = [...v];
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
  for (const [k, v] of verbsMap) if (!/\s/.test(k) && !byParticiple.has(k)) byParticiple.set(k, v);
  const partAlt = escapeAlt(
    [...byParticiple.keys()].filter(
      (p) => !/\s/.test(p) || /^(?:set up|rolled back|looked up|backed up|turned off|turned on|switched off|switched on|cleaned up)$/.test(p),
    ),
  );
  const singleAlt = escapeAlt(
    [...verbsMap.keys()].filter((k) => !/\s/.test(k) || /^(?:backed up|rolled back|kicked off|spun up|cleaned up|turned off|turned on)$/.test(k)),
  );
  // "I've written…", "I have run…": participles that differ from the past form, after have.
  const participleKey = new Map<string, string>();
  for (const [k, v] of verbsMap) if (!participleKey.has(v.participle.toLowerCase())) participleKey.set(v.participle.toLowerCase(), k);
  const perfectAlt = escapeAlt([...byParticiple.keys()].filter((p) => !verbsMap.has(p) && /^[a-z-]+$/.test(p) && lexParticipleOk(p)));
  const andSrc = `(?:\\s*,\\s*(?:and\\s+|then\\s+|and\\s+then\\s+|plus\\s+)?|\\s+(?:and|then|and\\s+then|and\\s+also|plus)\\s+)(?:I(?:'ve|\\s+have)?\\s+)?(?:also\\s+|then\\s+|just\\s+|went\\s+ahead\\s+and\\s+)?(${alt})\\b`;
  return {
    verbs: verbsMap,
    map,
    byParticiple,
    actRe: new RegExp(`^I(?:(?:'ve|\\s+have)(?:\\s+(?:${ADVERBS}))*\\s+(${perfectAlt})\\b|(?:'ve|\\s+have)?(?:\\s+(?:${ADVERBS}))*\\s+(${alt})\\b)`, 'i'),
    andRe: new RegExp(andSrc, 'gi'),
    nextRe: new RegExp(andSrc, 'gi'),
    participleKey,
    bareRe: new RegExp(`^(${alt})\\b`, 'i'),
    passRe: new RegExp(
      `^((?:the|your|that|this|those|these|both|all(?:\\s+the)?|my|our|a|an)\\s+[^,;:]{1,60}?|[\\uE000\\uE001]+|it|they|everything|all\\s+of\\s+them)(?:\\s+|(?='))(has|have|is|are|was|were|got|'s|'re)((?:\\s+(?:now|just|all|also|been|successfully|finally|already))*)\\s+(${partAlt})\\b`,
      'i',
    ),
    fragRe: new RegExp(
      `^((?:(?:the|your|my)\\s+)?[\\w\\uE000\\uE001./#@-]+(?:\\s+[\\w\\uE000\\uE001./#@-]+)?)\\s+(?:successfully\\s+)?(${singleAlt})\\b(\\s+(?:successfully|to|on|in|into|for|from|at|as|via)\\b[^,;]{0,60})?\\s*[.!]*\\s*$`,
      'i',
    ),
    otherActRe: /^I(?:'ve|\s+have)?(?:\s+(?:just|now|also|then|finally|quickly|first))*\s+[a-z]+(?:ed|t)\b/i,
  };
}
