import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { type Attachment, conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import { type AddressFacts, botNames, type GroupsPolicy, type ListenContext, nameAtLineStart } from '../../src/channel/index.js';
import { slackError } from './client.js';
import type { NameResolver } from './names.js';
import { type BotIdentity, classify, type SlackMessage, type Taken } from './normalize.js';
import type { EventOutcome } from './receiver.js';
import type { ThreadMembership } from './threads.js';

/** The event_callback envelope: the team the event is delivered for. */
interface EventBody {
  team_id?: string;
  event_id?: string;
  authorizations?: Array<{ team_id?: string | null; enterprise_id?: string | null }>;
}

/**
 * The workspace a channel is seen from, the same for every event of one channel whoever sends:
 * the installation the event is delivered to (authorizations[0]: its team, or its enterprise for an
 * org-wide Enterprise Grid install, which has no team), else the envelope's team_id.
 */
export function workspaceOfEnvelope(body: EventBody): string | undefined {
  const auth = body.authorizations?.[0];
  return auth?.team_id ?? auth?.enterprise_id ?? body.team_id ?? undefined;
}

/**
 * message and app_mention events → InboundMessage → ctx.receive. Each
 * message is handled once: Slack's retries, the app_mention + message pair of
 * one mention, and edits of a message already taken carry its external id, and
 * the ingress replays their first outcome (marked `replayed`: the sender is not
 * told twice). A failure marks the event failed, so it is not acknowledged and
 * Slack delivers it again.
 */
export class InboundHandler {
  constructor(
    private readonly ctx: ListenContext,
    private readonly client: WebClient,
    private readonly bot: BotIdentity,
    private readonly names: NameResolver,
    private readonly threads: ThreadMembership,
    private readonly log: Logger,
    private readonly groups: GroupsPolicy,
    /** The message's image files downloaded for the model (./files.ts). */
    private readonly files: (atts: Attachment[], maxBytes?: number) => Promise<Attachment[]>,
    /** A message handed to the ingress (the catch-up cursors move past it). */
    private readonly onTaken?: (c: Taken) => void,
  ) {}

  async onEvent(event: SlackMessage, body: EventBody, outcome: EventOutcome | undefined, retryNum?: number): Promise<void> {
    try {
      const c = classify(event, workspaceOfEnvelope(body), this.bot);
      if (c.kind === 'ignore') {
        this.log.debug({ reason: c.reason, event: body.event_id }, 'slack event ignored');
        return;
      }
      // Before anything the user could see or a model call: is this addressed to the bot?
      const decision = await this.ctx.shouldAnswer({
        room: `${c.team ?? '-'}:${c.channel}`,
        facts: await this.facts(c),
        policy: this.groups,
        text: c.text,
        messageId: c.externalId,
      });
      if (!decision.answer) {
        this.log.debug({ reason: decision.why, channel: c.channel, event: body.event_id }, 'slack room message not answered');
        this.onTaken?.(c); // decided: a catch-up need not read it again
        return;
      }
      if (c.mention && !c.dm && c.thread) this.threads.mark(c.channel, c.thread);
      const name = await this.names.name(c.user);
      const attachments = c.attachments.length ? await this.files(c.attachments, this.ctx.maxImageBytes) : c.attachments;
      const r = await this.ctx.receive(this.toInbound({ ...c, attachments }, name, await this.keyOf(c)));
      this.onTaken?.(c);
      if (r.replayed) {
        this.log.debug({ externalId: c.externalId, event: body.event_id, retry: retryNum, kind: r.kind }, 'slack message handled already; its outcome stands');
      } else if (r.kind === 'accepted') {
        this.log.debug({ externalId: c.externalId, duplicate: r.duplicate, conversation: r.conversationId, edited: c.edited }, 'slack message accepted');
        // Its conversation waits for an approval: said at once (only to the sender in a channel), the answer follows.
        if (r.notice) void this.tell(c, r.notice, !c.dm);
      } else if (r.kind === 'refused') {
        // Refusals (allowlist, pairing) go to the sender only where Slack allows it.
        if (r.reply) void this.tell(c, r.reply, !c.dm);
      } else if (r.reply) {
        // An operator's takeover command is answered to them alone; a message passed on to the operator has an empty reply.
        void this.tell(c, r.reply, r.handoff?.operator === true && !c.dm);
      }
    } catch (err) {
      this.log.error({ err }, 'slack message could not be taken; Slack will deliver it again');
      if (outcome) outcome.failed = err;
    }
  }

  /** What addresses the bot in this message; the thread is looked up only when it decides (respondIn threads). */
  private async facts(c: Taken): Promise<AddressFacts> {
    const inBotThread = c.needsThread && this.groups.respondIn === 'threads' && !c.mentionsOthers ? await this.threads.isIn(c.channel, c.thread!) : false;
    return {
      isDirect: c.dm,
      mentionsBot: c.mention,
      inBotThread,
      mentionsOthers: c.mentionsOthers,
      startsWithBotName: nameAtLineStart(c.text, botNames(this.groups, [this.bot.name])),
      ...(c.fromBot ? { fromBot: { ids: c.fromBot } } : {}),
    };
  }

  /**
   * The conversation: keyed by the workspace the channel is seen from (the envelope's team), so
   * everyone in a shared channel's thread is in one conversation. Until this change the sender's
   * team keyed it: in a shared channel, a thread that already has a conversation under the
   * sender's team keeps it (one lookup, only when the two teams differ), so none is cut in two.
   */
  private async keyOf(c: Taken): Promise<string> {
    const key = (team: string | undefined) =>
      conversationKey({ channel: 'slack', ...(team ? { workspace: team } : {}), chat: c.channel, ...(c.thread ? { thread: c.thread } : {}) });
    const owner = key(c.team);
    if (!c.senderTeam || c.senderTeam === c.team) return owner;
    const legacy = key(c.senderTeam);
    return (await this.ctx.conversationExists(legacy)) ? legacy : owner;
  }

  private toInbound(c: Taken, name: string | undefined, key: string): InboundMessage {
    return {
      channel: 'slack',
      externalId: c.externalId,
      conversationKey: key,
      // A Slack user id is the team's: the sender's own team is part of who they are (kernel/identity.ts).
      sender: { id: c.user, ...(c.senderTeam ? { workspace: c.senderTeam } : {}), ...(name ? { name } : {}) },
      text: c.text,
      attachments: c.attachments,
      replyTo: { ...c.replyTo },
      receivedAt: new Date(),
    };
  }

  private async tell(c: Taken, text: string, ephemeral: boolean): Promise<void> {
    try {
      const thread = c.replyTo.thread_ts ? { thread_ts: c.replyTo.thread_ts } : {};
      if (ephemeral) await this.client.chat.postEphemeral({ channel: c.channel, user: c.user, text, ...thread });
      else await this.client.chat.postMessage({ channel: c.channel, text, ...thread });
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'could not answer the sender on Slack');
    }
  }
}
