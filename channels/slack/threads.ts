import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { TtlCache } from './cache.js';
import { slackError } from './client.js';
import type { BotIdentity } from './normalize.js';

/**
 * Is the bot in this channel thread? Known when a mention was taken in it (this
 * process); otherwise conversations.replies tells (the bot posted in it, or was
 * mentioned), cached: yes for a day, no for a few minutes (a later mention in
 * the thread marks it at once).
 */
export class ThreadMembership {
  private readonly known = new TtlCache<boolean>(20_000);

  constructor(
    private readonly client: WebClient,
    private readonly bot: () => BotIdentity,
    private readonly log: Logger,
  ) {}

  mark(channel: string, threadTs: string): void {
    this.known.set(`${channel}:${threadTs}`, true, 24 * 3_600_000);
  }

  async isIn(channel: string, threadTs: string): Promise<boolean> {
    const key = `${channel}:${threadTs}`;
    const hit = this.known.get(key);
    if (hit !== undefined) return hit;
    const bot = this.bot();
    try {
      const r = await this.client.conversations.replies({ channel, ts: threadTs, limit: 200 });
      const inThread = (r.messages ?? []).some(
        (m) => (m.user && m.user === bot.userId) || (bot.botId && m.bot_id === bot.botId) || (m.text ?? '').includes(`<@${bot.userId}`),
      );
      this.known.set(key, inThread, inThread ? 24 * 3_600_000 : 5 * 60_000);
      return inThread;
    } catch (err) {
      this.log.debug({ channel, thread: threadTs, error: slackError(err) }, 'conversations.replies failed; treating the thread as not ours');
      this.known.set(key, false, 60_000);
      return false;
    }
  }
}
