import type { ChannelPlugin } from '../../src/channel/index.js';
import { parseSlackConfig, type SlackConfig } from './config.js';
import { SlackDeliverer } from './deliver.js';
import { SlackListener } from './listen.js';
import { parseSlackReplyTo, type SlackReplyTo } from './reply-to.js';

/**
 * Slack: Socket Mode or the HTTP Events API (on the gateway's HTTP server), with
 * @slack/bolt. DMs, mentions (a thread per mention), replies in the bot's
 * threads; replies streamed natively in threads (else posted and edited);
 * approvals as Block Kit buttons. See README.md in this folder.
 */
export const plugin: ChannelPlugin<SlackConfig, SlackReplyTo | null> = {
  name: 'slack',
  parseConfig: parseSlackConfig,
  parseReplyTo: parseSlackReplyTo,
  listener: (cfg) => new SlackListener(cfg),
  deliverer: (cfg) => new SlackDeliverer(cfg),
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeSlack(cfg),
};
