/** channels.whatsapp as the configuration file states it: defaults, secrets from the environment, errors naming the key. */
import { describe, expect, it } from 'vitest';
import { parseWhatsAppConfig } from '../channels/whatsapp/config.js';
import { fillVariables } from '../channels/whatsapp/deliver.js';

const AC = `AC${'0'.repeat(32)}`;
const env = { TWILIO_AUTH_TOKEN: 'tok' };

describe('channels.whatsapp configuration', () => {
  it('has the documented defaults', () => {
    const c = parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://bot.example.com/' }, env);
    expect(c).toMatchObject({
      publicUrl: 'https://bot.example.com',
      inboundPath: '/v1/channels/whatsapp/inbound',
      maxMessageChars: 1600,
      sessionWindowMs: 24 * 3_600_000,
      fetchMedia: true,
      maxMediaBytes: 4 * 1024 * 1024,
    });
    expect(c.outsideWindowTemplate).toBeUndefined();
  });

  it('names the key that is wrong', () => {
    expect(() => parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://x.test' }, {})).toThrow(/channels\.whatsapp\.authTokenEnv/);
    expect(() => parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://x.test', from: '+15550100000' }, env)).toThrow(/from/);
    expect(() => parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://x.test', maxMessageChars: 4096 }, env)).toThrow(/maxMessageChars/);
    expect(() => parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://x.test', outsideWindowTemplate: { contentSid: 'HXnope' } }, env)).toThrow(
      /outsideWindowTemplate\.contentSid/,
    );
    expect(() => parseWhatsAppConfig({ accountSid: AC, publicUrl: 'https://x.test', webhookSigningKeyEnv: 'NOPE_KEY' }, env)).toThrow(/webhookSigningKeyEnv/);
  });

  it('fills template variables on one line, as WhatsApp takes them', () => {
    const t = { contentSid: `HX${'1'.repeat(32)}`, variables: { '1': 'Asked:\n{{text}}', '2': '{{code}}' } };
    expect(JSON.parse(fillVariables(t, { text: 'run\tthis     now\n\nplease', code: 'K7Q4P' }))).toEqual({ '1': 'Asked: run this now please', '2': 'K7Q4P' });
  });
});
