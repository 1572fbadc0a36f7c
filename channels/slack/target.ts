import type { TurnTarget } from '../../src/channel/index.js';
import type { SlackReplyTo } from './normalize.js';

/** Where a turn's reply goes in Slack. */
export interface SlackWhere {
  channel: string;
  thread_ts?: string;
  team?: string;
  user?: string;
  dm: boolean;
}

/**
 * From the turn's inbox rows (the newest one with a reply target), else from
 * the conversation key (slack/<team>/<channel>/<thread>).
 */
export function whereFor(target: TurnTarget): SlackWhere | null {
  for (let i = target.batch.length - 1; i >= 0; i--) {
    const r = target.batch[i]!.replyTo as Partial<SlackReplyTo> | null;
    if (r && typeof r.channel === 'string') {
      return {
        channel: r.channel,
        ...(typeof r.thread_ts === 'string' ? { thread_ts: r.thread_ts } : {}),
        ...(typeof r.team === 'string' ? { team: r.team } : {}),
        ...(typeof r.user === 'string' ? { user: r.user } : {}),
        dm: r.dm === true,
      };
    }
  }
  const parts = target.conversation.key.split('/').map((p) => p.replace(/%2F/g, '/').replace(/%25/g, '%'));
  if (parts[0] !== 'slack' || !parts[2] || parts[2] === '-') return null;
  const sender = target.batch[target.batch.length - 1]?.sender.id;
  return {
    channel: parts[2],
    ...(parts[3] && parts[3] !== '-' ? { thread_ts: parts[3] } : {}),
    ...(parts[1] && parts[1] !== '-' ? { team: parts[1] } : {}),
    ...(sender ? { user: sender } : {}),
    dm: parts[2].startsWith('D'),
  };
}
