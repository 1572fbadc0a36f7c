import type { ChannelPlugin } from '../../src/channel/index.js';
import { type EmailConfig, parseEmailConfig } from './config.js';
import { EmailDeliverer } from './deliver.js';
import { EmailListener } from './listen.js';
import { type EmailReplyTo, parseEmailReplyTo } from './reply-to.js';

/**
 * Email: IMAP in (imapflow, IDLE), SMTP out (nodemailer), one conversation
 * per sender and thread. See config.ts for the keys.
 */
export const plugin: ChannelPlugin<EmailConfig, EmailReplyTo | null> = {
  name: 'email',
  parseConfig: parseEmailConfig,
  parseReplyTo: parseEmailReplyTo,
  // poll: false sends only (another system reads the mailbox).
  listener: (cfg) => (cfg.poll ? new EmailListener(cfg) : undefined),
  deliverer: (cfg) => new EmailDeliverer(cfg),
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeEmail(cfg),
};
