import type { ChannelPlugin } from '../../src/channel/index.js';
import { type MessageSender, twilioSender } from './client.js';
import { parseSmsConfig, type SmsConfig } from './config.js';
import { SmsDeliverer } from './deliver.js';
import { SmsListener } from './listen.js';
import { parseSmsReplyTo, type SmsReplyTo } from './reply-to.js';
import { SmsStore } from './store.js';

/** The listener and the deliverer of one configuration share a store (opt-outs, status callbacks). */
const stores = new WeakMap<SmsConfig, SmsStore>();
const storeFor = (cfg: SmsConfig): SmsStore => {
  let s = stores.get(cfg);
  if (!s) stores.set(cfg, (s = new SmsStore()));
  return s;
};

/**
 * SMS through Twilio: inbound webhooks (signed, deduplicated by MessageSid,
 * answered with TwiML at once), buffered plain-text replies split into numbered
 * messages, delivery status callbacks, STOP/START/HELP. See README.md here.
 */
export const plugin: ChannelPlugin<SmsConfig, SmsReplyTo | null> = {
  name: 'sms',
  parseConfig: parseSmsConfig,
  parseReplyTo: parseSmsReplyTo,
  listener: (cfg) => new SmsListener(cfg, storeFor(cfg)),
  deliverer: (cfg) => {
    let sender: MessageSender | undefined;
    return new SmsDeliverer(cfg, storeFor(cfg), () => (sender ??= twilioSender(cfg)));
  },
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeSms(cfg),
};
