import type { ChannelPlugin } from '../../src/channel/index.js';
import { twilioSender, type MessageSender } from './client.js';
import { parseSmsConfig } from './config.js';
import { SmsDeliverer } from './deliver.js';
import { SmsListener } from './listen.js';
import { SmsStore } from './store.js';

/**
 * SMS through Twilio: inbound webhooks (signed, deduplicated by MessageSid,
 * answered with TwiML at once), buffered plain-text replies split into numbered
 * messages, delivery status callbacks, STOP/START/HELP. See README.md here.
 */
export const plugin: ChannelPlugin = {
  name: 'sms',
  configure(raw, env) {
    const cfg = parseSmsConfig(raw, env);
    const store = new SmsStore();
    let sender: MessageSender | undefined;
    return {
      name: 'sms',
      listener: new SmsListener(cfg, store),
      deliverer: new SmsDeliverer(cfg, store, () => (sender ??= twilioSender(cfg))),
    };
  },
};
