import { ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';

/** Where a WhatsApp answer goes: to the sender's whatsapp: address, from the one they wrote to. */
export interface WhatsAppReplyTo {
  to: string;
  from: string;
}

const ADDRESS = /^whatsapp:\+[1-9]\d{1,14}$/;

function address(o: Record<string, unknown>, key: 'to' | 'from'): string {
  const v = stringField('whatsapp', o, key, 40);
  if (!ADDRESS.test(v)) throw new ReplyToError('whatsapp', `"${key}" is not a whatsapp:+E.164 address`);
  return v;
}

export function parseWhatsAppReplyTo(raw: unknown): WhatsAppReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('whatsapp', raw);
  return { to: address(o, 'to'), from: address(o, 'from') };
}
