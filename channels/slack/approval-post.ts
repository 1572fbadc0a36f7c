import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { LeaseLostError } from '../../kernel/lease-lost.js';
import type { ApprovalInfo } from '../../kernel/turn-events.js';
import type { DeliverContext } from '../../src/channel/index.js';
import { approvalBlocks } from './approvals.js';
import type { SlackWhere } from './target.js';

/**
 * A turn's approval requests, each its own Slack message with buttons, once per code across the
 * turn's attempts (the `approval:<code>` delivery row says it was asked). Shared by the streaming
 * and the post-and-edit turn, so a turn that falls back from one to the other never asks twice.
 */
export class SlackApprovalPoster {
  /** Codes this turn has asked (here, or by an earlier attempt once read). */
  readonly posted = new Set<string>();

  constructor(
    private readonly client: WebClient,
    private readonly where: SlackWhere,
    private readonly ctx: DeliverContext,
    private readonly turnId: string,
    private readonly log: Logger,
  ) {}

  /** Posts the request unless this turn asked it already. Throws what chat.postMessage throws. */
  async post(a: ApprovalInfo): Promise<void> {
    if (this.posted.has(a.code)) return;
    const prior = await this.ctx.deliveries.get(this.turnId, 'slack', `approval:${a.code}`).catch((err: unknown) => {
      this.log.warn({ err, code: a.code }, 'could not read whether an earlier attempt posted this approval request; posting it');
      return undefined;
    });
    if (prior) {
      this.posted.add(a.code); // asked already by an earlier attempt of this turn
      return;
    }
    if (this.ctx.fence && !this.ctx.fence()) throw new LeaseLostError(`not posting approval request ${a.code}: this attempt's lease is lost`);
    const { text, blocks } = approvalBlocks(a);
    const r = await this.client.chat.postMessage({
      channel: this.where.channel,
      text,
      blocks: blocks as never,
      ...(this.where.thread_ts ? { thread_ts: this.where.thread_ts } : {}),
    });
    this.posted.add(a.code);
    await this.ctx.deliveries
      .record(this.turnId, 'slack', `approval:${a.code}`, { platformMessageId: r.ts ?? null, state: 'posted', body: text })
      .catch((err: unknown) => this.log.warn({ err }, 'could not record the approval message'));
  }
}
