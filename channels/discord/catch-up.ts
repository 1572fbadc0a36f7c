import type { Client, Message } from 'discord.js';
import type { Logger } from 'pino';
import { type CatchUpCursors, type CatchUpPolicy, offlineReplyText, planCatchUp } from '../../src/channel/index.js';

/** Pages of 100 fetched per channel at most (Discord's largest page). */
const MAX_PAGES = 10;

export interface CatchUpDeps {
  client: Client;
  cursors: CatchUpCursors;
  policy: CatchUpPolicy;
  log: Logger;
  /** Whether a message is one the channel answers (addressed to the bot, not a bot's own…). */
  addressed(message: Message): Promise<boolean>;
  /** The live path: the message handed to the ingress. */
  handle(message: Message): Promise<void>;
  dropped(reason: string): void;
}

/** Every message after `after` in a channel, oldest first (Discord answers each page newest first). */
async function messagesAfter(client: Client, channelId: string, after: string, log: Logger): Promise<Message[]> {
  const channel = await client.channels.fetch(channelId).catch((err: unknown) => {
    log.info({ channelId, err: (err as Error).message }, 'discord catch-up: channel not reachable; skipped');
    return null;
  });
  if (!channel?.isTextBased() || !('messages' in channel)) return [];
  const out: Message[] = [];
  let cursor = after;
  for (let page = 0; page < MAX_PAGES; page++) {
    const batch = [...(await channel.messages.fetch({ after: cursor, limit: 100, cache: false })).values()];
    if (!batch.length) break;
    batch.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    out.push(...batch);
    cursor = batch[batch.length - 1]!.id;
    if (batch.length < 100) break;
  }
  return out;
}

/**
 * After a (re)connect: the messages sent while the gateway was down, from each channel's history after
 * the last message seen there, handed to the ingress in order (it drops what was taken already), or
 * skipped by the policy (too old, too many) with one offline reply per channel.
 */
export async function catchUp(d: CatchUpDeps): Promise<void> {
  const cursors = await d.cursors.load();
  const now = new Date();
  for (const [channelId, after] of Object.entries(cursors)) {
    let missed: Message[];
    try {
      missed = await messagesAfter(d.client, channelId, after, d.log);
    } catch (err) {
      d.log.warn({ channelId, err }, 'discord catch-up: history could not be read; skipped');
      continue;
    }
    const candidates: Array<{ message: Message; at: Date; place: string }> = [];
    for (const m of missed) {
      if (await d.addressed(m)) candidates.push({ message: m, at: m.createdAt, place: channelId });
      else d.cursors.seen(channelId, m.id);
    }
    if (!candidates.length) continue;
    const plan = planCatchUp(candidates, d.policy, now);
    d.log.info({ channelId, missed: candidates.length, answered: plan.answer.length, skipped: plan.skipped.length }, 'discord catch-up');
    for (const s of plan.skipped) {
      d.dropped(s.reason);
      d.cursors.seen(channelId, s.message.message.id);
    }
    const sorry = offlineReplyText(d.policy);
    for (const c of plan.apologize) {
      await c.message
        .reply({ content: sorry!, allowedMentions: { parse: [], repliedUser: false } })
        .catch((err: unknown) => d.log.warn({ err, message: c.message.id }, 'discord catch-up: the offline reply failed'));
    }
    for (const c of plan.answer) await d.handle(c.message);
  }
}
