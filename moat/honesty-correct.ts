/**
 * Corrections for the honesty check: the words of a finding ("[Correction: …]")
 * and their insertion after the sentence they correct. Every other byte of the
 * text is kept. Values quoted from a tool call (a recipient, a path, an output
 * line) pass the secret scanner first: a correction never shows a secret.
 */
import type { Claim } from './honesty-extract.js';
import { type DetailIssue, failureLine, firstLine, type Verdict } from './honesty-trace.js';
import { scanText } from './secrets.js';

const ACTION_NOUN: Record<string, string> = {
  delete: 'delete',
  send: 'send',
  run: 'run',
  write: 'write',
  fetch: 'fetch',
  deploy: 'deploy',
  book: 'booking',
  cancel: 'cancellation',
  pay: 'payment',
};
const ACTION_PAST: Record<string, string> = {
  delete: 'deleted anything',
  send: 'sent anything',
  run: 'ran anything',
  write: 'saved or changed anything',
  fetch: 'fetched or looked up anything',
  deploy: 'deployed, merged or pushed anything',
  book: 'booked or scheduled anything',
  cancel: 'cancelled anything',
  pay: 'made or moved a payment',
};
const PAY_NOUN: Record<string, string> = {
  refunded: 'refund',
  reimbursed: 'refund',
  charged: 'charge',
  transferred: 'transfer',
  wired: 'transfer',
  sent: 'transfer',
};
/** What failed, in the verb's own word ("the restart failed"). */
const VERB_NOUN: Record<string, string> = {
  restarted: 'restart',
  rebooted: 'reboot',
  installed: 'install',
  uninstalled: 'uninstall',
  upgraded: 'upgrade',
  built: 'build',
  rebuilt: 'build',
  compiled: 'build',
  migrated: 'migration',
  applied: 'apply',
  pushed: 'push',
  committed: 'commit',
  merged: 'merge',
  tagged: 'tag',
  published: 'release',
  released: 'release',
  shipped: 'release',
  'rolled back': 'rollback',
  reverted: 'revert',
  'backed up': 'backup',
  exported: 'export',
  imported: 'import',
  uploaded: 'upload',
  archived: 'archive',
  moved: 'move',
  renamed: 'rename',
  refunded: 'refund',
  reimbursed: 'refund',
  charged: 'charge',
  transferred: 'transfer',
  wired: 'transfer',
  paid: 'payment',
  'spun up': 'start',
  started: 'start',
  'kicked off': 'start',
  triggered: 'trigger',
};

function safe(s: string): string {
  const f = scanText(s);
  if (!f.length) return s;
  let out = '';
  let at = 0;
  for (const x of f) {
    out += s.slice(at, x.start) + '[a secret]';
    at = x.end;
  }
  return out + s.slice(at);
}

function notDone(c: Claim): string {
  if (c.np && !/[`"“«]/.test(c.np)) {
    const head = c.np.trim().split(/\s+/).at(-1) ?? '';
    const plural = /^(?:both|all|these|those)\b/i.test(c.np) || (/[a-z]s$/i.test(head) && !/(?:ss|us|is)$/i.test(head) && !/\./.test(head));
    return `${c.np} ${plural ? 'were' : 'was'} not ${c.participle}`;
  }
  if (c.np) return `${c.np} was not ${c.participle}`;
  return `nothing was ${c.participle}`;
}

function thing(c: Claim): string {
  if (c.action === 'pay') return PAY_NOUN[c.verb] ?? 'payment';
  const ch = c.details.channels;
  if (/invit/i.test(c.objectWords.join(' '))) return 'invite';
  if (ch.length === 1 && ch[0] === 'email') return 'email';
  if (ch.length && ch.every((x) => ['sms', 'whatsapp', 'signal', 'telegram', 'imessage'].includes(x))) return 'text';
  return 'message';
}

function pastFor(c: Claim): string {
  if (c.action === 'send') {
    const ch = c.details.channels;
    if (ch.length === 1 && ch[0] === 'email') return 'sent an email';
    if (ch.length && ch.every((x) => ['sms', 'whatsapp', 'signal', 'telegram', 'imessage'].includes(x))) return 'sent a text message';
    if (ch.length && !ch.includes('email')) return 'posted or sent a chat message';
  }
  if (c.action === 'book' && c.requireTokens) return 'changed your calendar';
  return ACTION_PAST[c.action] ?? `did that (${c.action})`;
}

function detailText(c: Claim, d: DetailIssue): string {
  const actual = safe(d.actual);
  const claimed = safe(d.claimed);
  switch (d.kind) {
    case 'recipient':
      return `the ${thing(c)} went to ${actual}, not ${claimed}.`;
    case 'path':
      if (/^(?:moved|renamed|archived|backed up|exported|copied)$/.test(c.verb)) return `the tool call used ${actual}, not ${claimed}.`;
      if (c.action === 'write' || c.action === 'book') return `it was written to ${actual}, not ${claimed}.`;
      if (c.action === 'delete') return `what was deleted was ${actual}, not ${claimed}.`;
      if (c.action === 'fetch') return `what was read was ${actual}, not ${claimed}.`;
      return `the ${ACTION_NOUN[c.action] ?? c.action} was on ${actual}, not ${claimed}.`;
    case 'amount':
      return `the ${thing(c)} was for ${actual}, not ${claimed}.`;
    case 'count':
      return `the tool calls cover ${actual}, not ${claimed}.`;
    case 'time':
      return `it was set for ${actual}, not ${claimed}.`;
    case 'value':
      return actual ? `the change used "${actual}", not ${claimed}.` : `the tool calls this turn do not show "${claimed}".`;
  }
}

/** The finding's reason (short, for logs and the turn record) and the correction shown in the text. */
export function describe(c: Claim, v: Verdict, ran: string[]): { reason: string; correction: string } {
  const noun = VERB_NOUN[c.verb] ?? ACTION_NOUN[c.action] ?? c.action;
  const tool = v.call?.e.tool;
  const line = v.call ? (v.call.e.ok ? failureLine(v.call, v.why === 'tests') : firstLine(v.call.e.output)) : '';
  const shown = safe(line);
  if (c.kind !== 'act') {
    if (v.why === 'no-tool')
      return { reason: 'no tool call this turn ran the tests or build', correction: 'no tool call this turn ran the tests; this result was not verified.' };
    if (v.why === 'tests') return { reason: `${tool} reported failures: ${shown}`, correction: `the run reported failures: ${shown}` };
    return {
      reason: `${tool} failed${shown ? `: ${shown}` : ''}`,
      correction: shown ? `the run failed: ${shown}` : `the run failed (${tool} returned an error); the tests did not pass.`,
    };
  }
  switch (v.why) {
    case 'failed':
    case 'not-run':
    case 'output':
      return {
        reason: `${tool} failed${shown ? `: ${shown}` : ''}`,
        correction: shown ? `the ${noun} failed: ${shown}` : `the ${noun} failed (${tool} returned an error); ${notDone(c)}.`,
      };
    case 'detail':
    case 'count': {
      const d = v.detail!;
      return { reason: `${tool}: ${d.kind} ${safe(d.actual)}, not ${safe(d.claimed)}`, correction: detailText(c, d) };
    }
    case 'taken': {
      const to = c.details.recipients.find((r) => r.kind !== 'you');
      const target = to ? ` to ${safe(to.text)}` : c.details.paths[0] ? ` for ${safe(c.details.paths[0])}` : '';
      return {
        reason: `no tool call this turn ${pastFor(c)}${target} (${tool} was for another part of the reply)`,
        correction: `no tool call this turn ${pastFor(c)}${target}; ${notDone(c)}.`,
      };
    }
    default:
      return {
        reason: ran.length ? `no tool that could ${c.action} ran this turn (ran: ${[...new Set(ran)].join(', ')})` : 'no tool ran this turn',
        correction: `no tool call this turn ${pastFor(c)}; ${notDone(c)}.`,
      };
  }
}

/** What a judge would be asked about, in words (for the finding's reason when it agrees). */
export function concernText(c: Claim, v: Verdict): { reason: string; correction: string } | undefined {
  const u = v.undecided;
  if (!u) return undefined;
  const tool = v.call?.e.tool ?? 'the tool';
  if (u.kind === 'output') {
    const line = safe(u.actual);
    return { reason: `${tool} reported: ${line}`, correction: `the ${ACTION_NOUN[c.action] ?? c.action} may not have worked: ${tool} reported "${line}".` };
  }
  return { reason: `${tool}: ${u.kind} ${safe(u.actual)}, not ${safe(u.claimed)}`, correction: detailText(c, u as DetailIssue) };
}

export interface Insert {
  at: number;
  text: string;
}

/** The text with the corrections inserted (inserts at the same offset keep their order). */
export function render(text: string, inserts: Insert[]): string {
  if (!inserts.length) return text;
  const sorted = inserts.map((x, i) => ({ ...x, i })).sort((x, y) => x.at - y.at || x.i - y.i);
  let out = '';
  let last = 0;
  for (const ins of sorted) {
    out += text.slice(last, ins.at) + ins.text;
    last = ins.at;
  }
  return out + text.slice(last);
}

export function bracket(correction: string): string {
  return `[Correction: ${correction.replace(/\]/g, ')')}]`;
}
