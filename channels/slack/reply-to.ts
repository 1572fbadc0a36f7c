import { optionalBoolean, optionalString, ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';
import type { SlackReplyTo } from './normalize.js';

export type { SlackReplyTo };

const ID = /^[A-Z0-9]{2,32}$/;
const TS = /^\d{1,12}\.\d{1,9}$/;

/**
 * The stored reply target of a Slack message (normalize.ts writes it), or null when the row has
 * none (the deliverer then falls back to the conversation key). Ids and timestamps must look like
 * Slack's: a value that does not is no target of ours.
 */
export function parseSlackReplyTo(raw: unknown): SlackReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('slack', raw);
  const channel = stringField('slack', o, 'channel', 32);
  if (!ID.test(channel)) throw new ReplyToError('slack', '"channel" is not a Slack channel id');
  const ts = stringField('slack', o, 'ts', 32);
  if (!TS.test(ts)) throw new ReplyToError('slack', '"ts" is not a Slack message timestamp');
  const thread = optionalString('slack', o, 'thread_ts', 32);
  if (thread !== undefined && !TS.test(thread)) throw new ReplyToError('slack', '"thread_ts" is not a Slack message timestamp');
  const user = stringField('slack', o, 'user', 32);
  if (!ID.test(user)) throw new ReplyToError('slack', '"user" is not a Slack user id');
  const team = optionalString('slack', o, 'team', 32);
  if (team !== undefined && !ID.test(team)) throw new ReplyToError('slack', '"team" is not a Slack team id');
  return { channel, ts, user, dm: optionalBoolean('slack', o, 'dm') ?? false, ...(thread ? { thread_ts: thread } : {}), ...(team ? { team } : {}) };
}
