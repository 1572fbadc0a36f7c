import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { type CatchUpCursors, type CatchUpPolicy, compareSlackTs, offlineReplyText, planCatchUp } from '../../src/channel/index.js';
import { slackError } from './client.js';
import { type BotIdentity, classify, type SlackMessage, type Taken } from './normalize.js';

/** Pages fetched per place at most. */
const MAX_PAGES = 10;
/** A thread quiet for longer than this is no longer followed. */
const FORGET_THREAD_AFTER_MS = 7 * 86_400_000;

/**
 * The places the bot follows: a DM or channel (its top-level messages, conversations.history) as
 * "C1", a thread (conversations.replies) as "C1/1700000000.000100".
 */
export function placesOf(c: Pick<Taken, 'channel' | 'thread' | 'ts' | 'dm'>): string[] {
  if (!c.thread) return [c.channel];
  if (c.thread === c.ts) return c.dm ? [c.channel] : [c.channel, `${c.channel}/${c.ts}`];
  return [`${c.channel}/${c.thread}`];
}

/** Every message of a place after `oldest`, oldest first (history answers newest first, replies oldest first). */
async function messagesAfter(client: WebClient, place: string, oldest: string): Promise<SlackMessage[]> {
  const [channel, thread] = place.split('/') as [string, string | undefined];
  const out: SlackMessage[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const r = thread
      ? await client.conversations.replies({ channel, ts: thread, oldest, limit: 200, ...(cursor ? { cursor } : {}) })
      : await client.conversations.history({ channel, oldest, limit: 200, ...(cursor ? { cursor } : {}) });
    for (const m of (r.messages ?? []) as SlackMessage[]) {
      // replies always starts with the thread's parent.
      if (m.ts && compareSlackTs(m.ts, oldest) > 0 && m.ts !== thread)
        out.push({ ...m, type: 'message', channel, ...(channel.startsWith('D') ? { channel_type: 'im' } : {}) });
    }
    cursor = r.response_metadata?.next_cursor || undefined;
    if (!r.has_more || !cursor) break;
  }
  return out.sort((a, b) => compareSlackTs(a.ts!, b.ts!));
}

export interface SlackCatchUpDeps {
  client: WebClient;
  bot: BotIdentity;
  cursors: CatchUpCursors;
  policy: CatchUpPolicy;
  log: Logger;
  /** The live path (classify, thread membership, the ingress). */
  handle(event: SlackMessage, body: { team_id?: string }): Promise<void>;
  dropped(reason: string): void;
}

/**
 * After a start: the messages sent while the gateway was down in each DM, channel and thread the bot
 * follows, after the last one seen there, handed to the ingress in order (it drops what was taken
 * already), or skipped by the policy (too old, too many) with one offline reply per place.
 */
export async function catchUp(d: SlackCatchUpDeps): Promise<void> {
  const cursors = await d.cursors.load();
  const now = new Date();
  for (const [place, last] of Object.entries(cursors)) {
    if (place.includes('/') && now.getTime() - Number(last) * 1000 > FORGET_THREAD_AFTER_MS) {
      d.cursors.forget(place);
      continue;
    }
    let missed: SlackMessage[];
    try {
      missed = await messagesAfter(d.client, place, last);
    } catch (err) {
      d.log.warn({ place, error: slackError(err) }, 'slack catch-up: history could not be read; skipped');
      continue;
    }
    if (!missed.length) continue;
    const candidates: Array<{ event: SlackMessage; taken: Taken; at: Date; place: string }> = [];
    for (const event of missed) {
      const c = classify(event, d.bot.teamId, d.bot);
      if (c.kind === 'take') candidates.push({ event, taken: c, at: new Date(Number(event.ts) * 1000), place });
    }
    const plan = planCatchUp(candidates, d.policy, now);
    if (candidates.length) d.log.info({ place, missed: candidates.length, answered: plan.answer.length, skipped: plan.skipped.length }, 'slack catch-up');
    for (const s of plan.skipped) d.dropped(s.reason);
    const sorry = offlineReplyText(d.policy);
    for (const a of plan.apologize) {
      const thread = a.taken.replyTo.thread_ts;
      await d.client.chat
        .postMessage({ channel: a.taken.channel, text: sorry!, ...(thread ? { thread_ts: thread } : {}) })
        .catch((err: unknown) => d.log.warn({ place, error: slackError(err) }, 'slack catch-up: the offline reply failed'));
    }
    for (const a of plan.answer) await d.handle(a.event, { ...(d.bot.teamId ? { team_id: d.bot.teamId } : {}) });
    d.cursors.seen(place, missed[missed.length - 1]!.ts!);
  }
}
