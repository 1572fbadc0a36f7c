import type { ChannelPlugin } from '../../src/channel/index.js';
import { parseEmailConfig } from './config.js';
import { EmailDeliverer } from './deliver.js';
import { EmailListener } from './listen.js';

/**
 * Email: IMAP in (imapflow, IDLE), SMTP out (nodemailer), one conversation
 * per sender and thread. See config.ts for the keys.
 */
export const plugin: ChannelPlugin = {
  name: 'email',
  configure(raw, env) {
    const cfg = parseEmailConfig(raw, env);
    return {
      name: 'email',
      ...(cfg.poll ? { listener: new EmailListener(cfg) } : {}),
      deliverer: new EmailDeliverer(cfg),
    };
  },
};
