import type { ChannelSetup } from '../../src/channel/index.js';
import { DEFAULT_INBOUND_PATH, DEFAULT_STATUS_PATH } from './config.js';

/** The URLs the WhatsApp sender calls: inbound messages, and delivery status callbacks. */
export function whatsappWebhookUrls(publicUrl: string): { inbound: string; status: string } {
  const base = publicUrl.replace(/\/+$/, '');
  return { inbound: `${base}${DEFAULT_INBOUND_PATH}`, status: `${base}${DEFAULT_STATUS_PATH}` };
}

const SANDBOX = 'whatsapp:+14155238886';
/** whatsapp:+E.164, or a bare +E.164 (the prefix is added). */
const sender = (v: string) => (v.startsWith('whatsapp:') ? v : `whatsapp:${v}`);

/**
 * What `switchboard init` asks for WhatsApp through Twilio. The public URL and the account SID are
 * the same questions (and flags) as SMS's: asked once when both channels are chosen.
 */
export const setup: ChannelSetup = {
  questions: [
    {
      flag: 'public-url',
      prompt: 'WhatsApp/SMS: the public https URL Twilio calls (the gateway behind TLS, e.g. https://bot.example.com)',
      required: true,
      validate: (v) => (/^https?:\/\/[^\s/]+(\/\S*)?$/.test(v) ? undefined : 'expected the public http(s) URL Twilio calls, e.g. https://bot.example.com'),
    },
    {
      flag: 'twilio-account-sid',
      prompt: 'Twilio Account SID (AC…; blank to set TWILIO_ACCOUNT_SID later)',
      default: '',
      validate: (v) => (/^AC[0-9a-f]{32}$/i.test(v) ? undefined : 'expected an account SID: AC followed by 32 hex digits'),
    },
    {
      flag: 'whatsapp-from',
      prompt: `WhatsApp: the sender replies go from (whatsapp:+E.164, ${SANDBOX} for the Sandbox; blank: the address each person wrote to)`,
      default: '',
      validate: (v) => (/^(?:whatsapp:)?\+[1-9]\d{1,14}$/.test(v) ? undefined : 'expected a WhatsApp sender: whatsapp:+E.164, e.g. whatsapp:+15551234567'),
    },
    {
      flag: 'whatsapp-template-sid',
      prompt: 'WhatsApp: the Content SID (HX…) of an approved template sent outside the 24-hour window (blank: such replies fail, logged)',
      default: '',
      validate: (v) => (/^HX[0-9a-fA-F]{32}$/.test(v) ? undefined : 'expected a Content SID: HX followed by 32 hex digits'),
    },
  ],
  config: (a) => ({
    publicUrl: a['public-url'],
    ...(a['twilio-account-sid'] ? { accountSid: a['twilio-account-sid'] } : {}),
    ...(a['whatsapp-from'] ? { from: sender(a['whatsapp-from']) } : {}),
    ...(a['whatsapp-template-sid'] ? { outsideWindowTemplate: { contentSid: a['whatsapp-template-sid'], variables: {} } } : {}),
  }),
  secrets: (a) => [
    ...(a['twilio-account-sid'] ? [] : [{ name: 'TWILIO_ACCOUNT_SID', hint: 'Twilio: the Account SID (AC…), Twilio Console > Account Info' }]),
    { name: 'TWILIO_AUTH_TOKEN', hint: 'Twilio: the Auth Token, Twilio Console > Account Info (it verifies every webhook signature)' },
  ],
  // --operator whatsapp:+15551234567 (or the full address): the sender id is the whatsapp: address.
  operatorId: (typed) => sender(typed.trim()),
  guide(a) {
    const urls = whatsappWebhookUrls(a['public-url'] || 'https://YOUR-PUBLIC-HOST');
    const from = a['whatsapp-from'] ? sender(a['whatsapp-from']) : '';
    return [
      'WhatsApp (through Twilio)',
      '1. Twilio Console > Account Info: put the Auth Token in TWILIO_AUTH_TOKEN (and the Account SID in TWILIO_ACCOUNT_SID).',
      from === SANDBOX || !from
        ? `2. To try it: Messaging > Try it out > Send a WhatsApp message (the Sandbox, ${SANDBOX}); each person first sends it "join <code>".`
        : `2. Messaging > Senders > WhatsApp senders: ${from} must be ONLINE (\`switchboard doctor --probe\` checks it).`,
      '   In the sender\'s (or the Sandbox\'s) settings, "When a message comes in":',
      `   Webhook, HTTP POST, ${urls.inbound}`,
      `   Status callback URL: ${urls.status} (the gateway also asks for it on each message it sends)`,
      '3. Expose only these two paths: a TLS reverse proxy (or a tunnel) in front of the gateway; publicUrl must be exactly the URL',
      '   Twilio calls (the signature is computed over it).',
      '4. Outside the 24-hour customer-service window WhatsApp takes only an approved template: create one in Messaging > Content',
      '   Template Builder, get it approved for WhatsApp, and set channels.whatsapp.outsideWindowTemplate.contentSid',
      a['whatsapp-template-sid']
        ? `   (set to ${a['whatsapp-template-sid']}; add its variables under outsideWindowTemplate.variables).`
        : '   (none set: such replies fail, logged and dead-lettered).',
      '5. Add your WhatsApp address (whatsapp:+15551234567) to access.whatsapp.allow and approvals.operators.whatsapp, or approve its pairing code.',
      '6. Start the gateway and send the number a WhatsApp message.',
    ].join('\n');
  },
};
