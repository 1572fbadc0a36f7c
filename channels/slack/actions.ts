import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { formatIdentity, type Identity } from '../../kernel/identity.js';
import type { ListenContext } from '../../src/channel/index.js';
import { ACTION_IDS, decidedBlocks, outcomeLabel } from './approvals.js';
import { slackError } from './client.js';

interface BlockActionBody {
  user?: { id?: string; team_id?: string };
  team?: { id?: string };
  channel?: { id?: string };
  container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
  message?: { ts?: string; thread_ts?: string; text?: string; blocks?: Array<Record<string, unknown>> };
}

interface ButtonAction {
  action_id?: string;
  value?: string;
}

/**
 * An Approve / Deny / Always allow click. The approval service decides (only
 * configured operators may; it audits refusals); the request message then
 * shows who decided and when, and anyone refused is told in a message only
 * they see (chat.postEphemeral).
 */
export class ApprovalClicks {
  constructor(
    private readonly ctx: ListenContext,
    private readonly client: WebClient,
    private readonly log: Logger,
    /** The bot's own team (auth.test), for a click whose body names none. */
    private readonly teamId?: string,
  ) {}

  async onClick(body: BlockActionBody, action: ButtonAction): Promise<void> {
    const user = body.user?.id;
    const code = action.value;
    const decision = ACTION_IDS[action.action_id ?? ''];
    const channel = body.channel?.id ?? body.container?.channel_id;
    const ts = body.message?.ts ?? body.container?.message_ts;
    const threadTs = body.message?.thread_ts ?? body.container?.thread_ts;
    if (!user || !code || !decision || !channel) return;
    try {
      // The clicker as a whole identity: the user of their team, as their messages are (channels/slack/normalize.ts).
      const team = body.user?.team_id ?? body.team?.id ?? this.teamId;
      const who: Identity = { channel: 'slack', ...(team ? { workspace: team } : {}), id: user };
      const r = await this.ctx.answerApproval(code, decision, who);
      if (r.ok) {
        const a = r.approval;
        await this.redraw(channel, ts, body, outcomeLabel(a.status, a.always), formatIdentity(who), a.decidedAt ? new Date(a.decidedAt) : new Date());
        return;
      }
      await this.client.chat
        .postEphemeral({ channel, user, text: r.message, ...(threadTs ? { thread_ts: threadTs } : {}) })
        .catch((err: unknown) => this.log.warn({ error: slackError(err) }, 'could not send the ephemeral refusal'));
      // Decided elsewhere (typed answer, CLI, another operator) or expired: the buttons go.
      if ((r.code === 'already_decided' || r.code === 'expired') && r.approval) {
        const a = r.approval;
        await this.redraw(channel, ts, body, outcomeLabel(a.status, a.always), a.decidedBy, a.decidedAt ? new Date(a.decidedAt) : null);
      }
    } catch (err) {
      this.log.error({ err, code }, 'slack approval click failed');
    }
  }

  private async redraw(
    channel: string,
    ts: string | undefined,
    body: BlockActionBody,
    outcome: { mrkdwn: string; plain: string },
    by: string | null,
    at: Date | null,
  ): Promise<void> {
    if (!ts) return;
    const blocks = decidedBlocks(body.message?.blocks, outcome.mrkdwn, by, at);
    const text = `${(body.message?.text ?? 'Approval request').split(/\. (?:Reply|An operator)/)[0]}: ${outcome.plain}${by ? ` by ${by.replace(/^slack:(?:[^:]+:)?/, '')}` : ''}.`;
    try {
      await this.client.chat.update({ channel, ts, text, blocks: blocks as never });
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'could not update the approval message');
    }
  }
}
