import type { Logger } from 'pino';
import type { ChannelState as ChannelStateStore } from '../../src/channel/index.js';

const KEY = 'answered-recent';
const KEEP_MS = 3_600_000;
const KEEP_N = 500;

/**
 * Messages answered without going to the inbox (approval answers, commands,
 * refusals) have no unique inbox row to make Slack's retries no-ops across
 * processes. Their ids go to a short rolling list in the durable channel state,
 * read only when Slack says an event is a retry. Best effort: two processes
 * writing at the same instant may drop an entry.
 */
export class AnsweredLog {
  constructor(
    private readonly state: ChannelStateStore | undefined,
    private readonly log: Logger,
  ) {}

  async has(id: string): Promise<boolean> {
    if (!this.state) return false;
    try {
      return ((await this.state.get<Array<[string, number]>>('slack', KEY)) ?? []).some(([x]) => x === id);
    } catch (err) {
      this.log.debug({ err }, 'could not read the answered-message log');
      return false;
    }
  }

  async add(id: string): Promise<void> {
    if (!this.state) return;
    try {
      const now = Date.now();
      const list = ((await this.state.get<Array<[string, number]>>('slack', KEY)) ?? []).filter(([x, t]) => x !== id && now - t < KEEP_MS).slice(-(KEEP_N - 1));
      list.push([id, now]);
      await this.state.set('slack', KEY, list);
    } catch (err) {
      this.log.debug({ err }, 'could not write the answered-message log');
    }
  }
}
