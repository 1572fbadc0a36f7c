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
 * From the turn's reply target (the newest message's that has one), else from
 * the conversation key (slack/<team>/<channel>/<thread>).
 */
export function whereFor(target: TurnTarget<SlackReplyTo | null>): SlackWhere | null {
  const r = target.replyTo;
  if (r) {
    return {
      channel: r.channel,
      ...(r.thread_ts !== undefined ? { thread_ts: r.thread_ts } : {}),
      ...(r.team !== undefined ? { team: r.team } : {}),
      user: r.user,
      dm: r.dm,
    };
  }
  const parts = target.conversation.key.split('/').map((p) => p.replace(/%2F/g, '/').replace(/%25/g, '%'));
  if (parts[0] !== 'slack' || !parts[2] || parts[2] === '-') return null;
  const sender = target.sender?.id;
  return {
    channel: parts[2],
    ...(parts[3] && parts[3] !== '-' ? { thread_ts: parts[3] } : {}),
    ...(parts[1] && parts[1] !== '-' ? { team: parts[1] } : {}),
    ...(sender ? { user: sender } : {}),
    dm: parts[2].startsWith('D'),
  };
}
