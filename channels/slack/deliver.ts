import type { WebClient } from '@slack/web-api';
import type { ApprovalInfo } from '../../kernel/turn-events.js';
import type { ChannelDeliverer, DeliverContext, TurnDelivery, TurnTarget } from '../../src/channel/index.js';
import { AppendBudgets } from './append-budget.js';
import { approvalBlocks } from './approvals.js';
import { webClient } from './client.js';
import type { SlackConfig } from './config.js';
import { SlackEditTurn } from './edit-turn.js';
import { escapeText } from './format.js';
import { type NativeSwitch, SlackNativeTurn } from './native-turn.js';
import type { SlackReplyTo } from './reply-to.js';
import { whereFor } from './target.js';

/**
 * The worker side: one delivery per turn attempt. Everywhere a SlackEditTurn
 * posts and edits through the SDK's engine (chat.postMessage + chat.update at
 * most once per updateIntervalMs per message); in a thread where Slack offers
 * native streaming, a SlackNativeTurn overrides it (chat.startStream /
 * appendStream / stopStream, with task updates) and hands the turn to a
 * SlackEditTurn when streaming cannot show what changed or a stream call fails.
 */
export class SlackDeliverer implements ChannelDeliverer<SlackReplyTo | null>, NativeSwitch {
  client?: WebClient;
  /** Slack said the streaming methods are not available: every turn edits instead. */
  nativeOff = false;
  private readonly turns = new Set<SlackNativeTurn>();
  /** chat.appendStream budgets, one per workspace, shared by this process's streams. */
  readonly appendBudgets: AppendBudgets;

  constructor(readonly cfg: SlackConfig) {
    this.appendBudgets = new AppendBudgets(cfg.appendStreamPerMinute);
  }

  async start(ctx: DeliverContext): Promise<void> {
    this.client ??= webClient(this.cfg, ctx.log);
  }

  /** approvals.operatorChannel: the request, with its buttons, in an operators' Slack channel. */
  async notifyApproval(target: string, approval: ApprovalInfo, _text: string, ctx: DeliverContext): Promise<void> {
    this.client ??= webClient(this.cfg, ctx.log);
    await this.client.chat.postMessage({ channel: target, ...approvalBlocks(approval) });
  }

  async notifyText(target: string, text: string, ctx: DeliverContext): Promise<void> {
    this.client ??= webClient(this.cfg, ctx.log);
    // Plain text: a user's words relayed to operators cannot format or mention anyone (<!channel>, <@U…> escaped as Slack asks).
    await this.client.chat.postMessage({ channel: target, text: escapeText(text), mrkdwn: false, parse: 'none' });
  }

  open(target: TurnTarget<SlackReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    this.client ??= webClient(this.cfg, ctx.log);
    const log = ctx.log.child({ channel: 'slack', turn: target.turnId, attempt: target.attempt });
    const where = whereFor(target);
    if (!where) {
      log.error({ conversation: target.conversation.key }, 'no Slack reply target for this turn; nothing will be delivered');
      return { event: () => {}, close: async () => {} };
    }
    // Native streaming is an override of the post-and-edit engine, for threads where Slack offers it.
    const native = this.cfg.streaming === 'native' && !this.nativeOff && !!where.thread_ts && (where.dm || (!!where.team && !!where.user));
    if (!native) return new SlackEditTurn(this.client, this.cfg, target, ctx, where, log);
    const t = new SlackNativeTurn(this, this.client, this.cfg, target, ctx, where, log, () => this.turns.delete(t));
    this.turns.add(t);
    return t;
  }

  async close(): Promise<void> {
    for (const t of this.turns) t.abandon();
    this.turns.clear();
  }
}
