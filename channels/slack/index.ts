import type { ChannelPlugin } from '../../src/channel/index.js';
import { parseSlackConfig } from './config.js';
import { SlackDeliverer } from './deliver.js';
import { SlackListener } from './listen.js';

/**
 * Slack: Socket Mode or the HTTP Events API (on the gateway's HTTP server), with
 * @slack/bolt. DMs, mentions (a thread per mention), replies in the bot's
 * threads; replies streamed natively in threads (else posted and edited);
 * approvals as Block Kit buttons. See README.md in this folder.
 */
export const plugin: ChannelPlugin = {
  name: 'slack',
  configure(raw, env) {
    const cfg = parseSlackConfig(raw, env);
    return { name: 'slack', listener: new SlackListener(cfg), deliverer: new SlackDeliverer(cfg) };
  },
};
