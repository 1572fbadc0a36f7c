import type { ChannelSetup } from '../../src/channel/index.js';
import { DEFAULT_INBOUND_PATH, DEFAULT_STATUS_PATH } from './config.js';

/** The two URLs the Twilio number calls: inbound messages and status callbacks. */
export function twilioWebhookUrls(publicUrl: string): { inbound: string; status: string } {
  const base = publicUrl.replace(/\/+$/, '');
  return { inbound: `${base}${DEFAULT_INBOUND_PATH}`, status: `${base}${DEFAULT_STATUS_PATH}` };
}

export const setup: ChannelSetup = {
  questions: [
    {
      flag: 'public-url',
      prompt: 'SMS: the public https URL Twilio calls (the gateway behind TLS, e.g. https://bot.example.com)',
      required: true,
      validate: (v) => (/^https?:\/\/[^\s/]+(\/\S*)?$/.test(v) ? undefined : 'expected the public http(s) URL Twilio calls, e.g. https://bot.example.com'),
    },
    {
      flag: 'twilio-account-sid',
      prompt: 'SMS: the Twilio Account SID (AC…; blank to set TWILIO_ACCOUNT_SID later)',
      default: '',
      validate: (v) => (/^AC[0-9a-f]{32}$/i.test(v) ? undefined : 'expected an account SID: AC followed by 32 hex digits'),
    },
  ],
  config: (a) => ({ publicUrl: a['public-url'], ...(a['twilio-account-sid'] ? { accountSid: a['twilio-account-sid'] } : {}) }),
  secrets: (a) => [
    ...(a['twilio-account-sid'] ? [] : [{ name: 'TWILIO_ACCOUNT_SID', hint: 'SMS: the Account SID (AC…), Twilio Console > Account Info' }]),
    { name: 'TWILIO_AUTH_TOKEN', hint: 'SMS: the Auth Token, Twilio Console > Account Info (it verifies every webhook signature)' },
  ],
  guide(a) {
    const urls = twilioWebhookUrls(a['public-url'] || 'https://YOUR-PUBLIC-HOST');
    return [
      'SMS (Twilio)',
      '1. Twilio Console > Account Info: put the Auth Token in TWILIO_AUTH_TOKEN (and the Account SID in TWILIO_ACCOUNT_SID).',
      '2. Phone Numbers > Manage > Active numbers > your number > Messaging Configuration > "A message comes in":',
      `   Webhook, HTTP POST, ${urls.inbound}`,
      `   Status callback URL (optional, delivery receipts): ${urls.status}`,
      '3. Expose only these two paths: keep http.host 127.0.0.1 and put a TLS reverse proxy (or a tunnel) in front that',
      `   forwards ${new URL(urls.inbound).pathname} and ${new URL(urls.status).pathname} to the gateway. publicUrl must be exactly`,
      '   the URL Twilio calls: the signature is computed over it.',
      '4. Add your phone number (E.164, +15551234567) to access.sms.allow and approvals.operators.sms, or approve its pairing code.',
      '5. Start the gateway and text the number.',
    ].join('\n');
  },
};
