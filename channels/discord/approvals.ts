import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIComponentInMessageActionRow,
  type APIInteractionGuildMember,
  type ButtonInteraction,
  ButtonStyle,
  ComponentType,
  type GuildMember,
  MessageFlags,
} from 'discord.js';
import type { Logger } from 'pino';
import type { AnswerDecision, ApprovalAnswer as AnswerResult, ApprovalCard, ListenContext } from '../../src/channel/index.js';

/**
 * Approval buttons. A request gets one action row: Approve, Refuse and (when the
 * tier permits a rule) Always allow; each button's custom id carries the
 * decision and the approval code ("sb-approval:approve:K7Q4P"), so any process
 * can answer a click with nothing but the approval service.
 */
const PREFIX = 'sb-approval';
const DECISIONS: AnswerDecision[] = ['approve', 'deny', 'always'];

export function approvalCustomId(decision: AnswerDecision, code: string): string {
  return `${PREFIX}:${decision}:${code}`;
}

export function parseApprovalCustomId(id: string): { decision: AnswerDecision; code: string } | null {
  const m = /^sb-approval:(approve|deny|always):([A-Za-z0-9]{3,16})$/.exec(id);
  return m && DECISIONS.includes(m[1] as AnswerDecision) ? { decision: m[1] as AnswerDecision, code: m[2]!.toUpperCase() } : null;
}

export interface ApprovalButtonSpec {
  code: string;
  tool: string;
  alwaysPermitted: boolean;
}

/** A request in a reply: what would run, that it waits, and how to answer; the buttons come with it (cardRows). */
export function approvalContent(c: ApprovalCard): string {
  const how = c.selfApprovable === false ? c.hint : `answer with the buttons, or in words: ${c.hint}`;
  return `🔒 **${c.title}** ${c.call}\n⏳ waiting for approval (code ${c.code}) · ${how}`;
}

/** The buttons of the requests a reply carries. */
export function cardRows(cards: ApprovalCard[]): APIActionRowComponent<APIComponentInMessageActionRow>[] {
  return approvalRows(cards.map((c) => ({ code: c.code, tool: c.tool, alwaysPermitted: c.actions.some((a) => a.decision === 'always') })));
}

/** One row per request (Discord allows five rows per message). */
export function approvalRows(specs: ApprovalButtonSpec[]): APIActionRowComponent<APIComponentInMessageActionRow>[] {
  return specs.slice(0, 5).map((s) => {
    const buttons: APIButtonComponent[] = [
      { type: ComponentType.Button, style: ButtonStyle.Success, label: `Approve ${s.code}`, custom_id: approvalCustomId('approve', s.code) },
      { type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Refuse', custom_id: approvalCustomId('deny', s.code) },
    ];
    if (s.alwaysPermitted)
      buttons.push({ type: ComponentType.Button, style: ButtonStyle.Secondary, label: 'Always allow', custom_id: approvalCustomId('always', s.code) });
    return { type: ComponentType.ActionRow, components: buttons };
  });
}

/** The message's rows without the buttons of `code`. */
export function rowsWithout(rows: unknown[], code: string): unknown[] {
  return rows.filter((row) => {
    const comps = (row as { components?: Array<{ custom_id?: string }> }).components ?? [];
    return !comps.some((c) => typeof c.custom_id === 'string' && parseApprovalCustomId(c.custom_id)?.code === code);
  });
}

/** The line appended to the request message once decided. */
export function decisionLine(result: AnswerResult, code: string, userId: string, at = new Date()): string {
  const when = `<t:${Math.floor(at.getTime() / 1000)}:f>`;
  if (result.ok) {
    const a = result.approval;
    if (a.status === 'denied') return `❌ **${code}** refused by <@${userId}> · ${when}`;
    return `✅ **${code}** approved${a.always ? ' (always allowed from now on)' : ''} by <@${userId}> · ${when}`;
  }
  return `⏹️ ${result.message}`;
}

/** Appends a line to a message, keeping it within Discord's 2000 characters. */
export function withLine(content: string, line: string, limit = 2000): string {
  const sep = content ? '\n\n' : '';
  if (content.length + sep.length + line.length <= limit) return content + sep + line;
  return content.slice(0, Math.max(0, limit - line.length - sep.length - 1)) + '…' + sep + line;
}

/** Whether the member holds one of the operator roles (a cached GuildMember or the raw interaction member). */
export function hasOperatorRole(member: GuildMember | APIInteractionGuildMember | null, roles: string[]): boolean {
  if (!member || roles.length === 0) return false;
  const held: string[] = Array.isArray(member.roles) ? member.roles : [...(member as GuildMember).roles.cache.keys()];
  return held.some((r) => roles.includes(r));
}

/**
 * A click: authorize through the approval service (configured operator ids, or
 * an operator role), then update the request message to show who decided and
 * when, or refuse with an ephemeral reply. Discord wants the callback within 3
 * s: if the answer is slow the click is deferred and the message edited after.
 */
export async function handleApprovalClick(
  i: ButtonInteraction,
  deps: { ctx: Pick<ListenContext, 'answerApproval'>; operatorRoles: string[]; log: Logger },
): Promise<boolean> {
  const parsed = parseApprovalCustomId(i.customId);
  if (!parsed) return false;
  const userId = i.user.id;
  // Configured operator ids are recognized by the approvals themselves; a role is Discord's to vouch for.
  const operator = hasOperatorRole(i.member as GuildMember | APIInteractionGuildMember | null, deps.operatorRoles);
  const answering = deps.ctx.answerApproval(parsed.code, parsed.decision, { channel: 'discord', id: userId }, { operator });
  const SLOW = Symbol('slow');
  let timer: NodeJS.Timeout | undefined;
  const quick = await Promise.race([answering, new Promise<typeof SLOW>((r) => (timer = setTimeout(() => r(SLOW), 2_000)))]);
  clearTimeout(timer);
  const deferred = quick === SLOW;
  if (deferred) await i.deferUpdate();
  const result = deferred ? await answering : (quick as AnswerResult);
  deps.log.info(
    { code: parsed.code, decision: parsed.decision, user: userId, ok: result.ok, ...(result.ok ? {} : { reason: result.code }) },
    'approval button',
  );

  const settled = result.ok || result.code === 'already_decided' || result.code === 'expired';
  if (settled) {
    const rows = rowsWithout(
      i.message.components.map((c) => c.toJSON()),
      parsed.code,
    );
    const update = {
      content: withLine(i.message.content, decisionLine(result, parsed.code, userId)),
      components: rows as APIActionRowComponent<APIComponentInMessageActionRow>[],
      allowedMentions: { parse: [] },
    };
    if (deferred) await i.editReply(update);
    else await i.update(update);
    return true;
  }
  // Not an operator, "always" not permitted, unknown code: only the clicker is told.
  if (deferred) await i.followUp({ content: result.message, flags: MessageFlags.Ephemeral });
  else await i.reply({ content: result.message, flags: MessageFlags.Ephemeral });
  return true;
}
