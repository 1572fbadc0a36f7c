import type { ChannelPlugin } from '../../src/channel/index.js';
import { twilioWhatsAppSender, type WhatsAppSender } from './client.js';
import { parseWhatsAppConfig, type WhatsAppConfig } from './config.js';
import { WhatsAppDeliverer } from './deliver.js';
import { WhatsAppListener } from './listen.js';
import { parseWhatsAppReplyTo, type WhatsAppReplyTo } from './reply-to.js';

/**
 * WhatsApp through Twilio (the Messages API with whatsapp: addresses): signed webhooks,
 * deduplicated by MessageSid, images fetched for the model, buffered replies, the 24-hour
 * customer-service window with a template outside it, approvals by code or quick-reply button.
 */
export const plugin: ChannelPlugin<WhatsAppConfig, WhatsAppReplyTo | null> = {
  name: 'whatsapp',
  parseConfig: parseWhatsAppConfig,
  parseReplyTo: parseWhatsAppReplyTo,
  listener: (cfg) => new WhatsAppListener(cfg),
  deliverer: (cfg) => {
    let sender: WhatsAppSender | undefined;
    return new WhatsAppDeliverer(cfg, () => (sender ??= twilioWhatsAppSender(cfg)));
  },
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeWhatsApp(cfg),
};
