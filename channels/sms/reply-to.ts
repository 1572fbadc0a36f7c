import { ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';

/** Where an SMS answer goes: to the sender, from the number they wrote to (listen.ts writes it). */
export interface SmsReplyTo {
  to: string;
  from: string;
}

/**
 * The sender we answer, as Twilio signed it: a phone number (E.164), or an address of another
 * Twilio channel (`whatsapp:+1555…`). Checked for shape only: nothing that could reach a header or a URL.
 */
const PHONE = /^(?:[a-z]{2,16}:)?\+?[A-Za-z0-9._-]{1,64}$/;
/** Our number: E.164, a short code, or an alphanumeric sender id, as Twilio passes them. */
const OURS = /^(?:(?:[a-z]{2,16}:)?\+[1-9]\d{1,14}|\d{3,8}|[A-Za-z0-9 ]{1,11})$/;

function number(o: Record<string, unknown>, key: 'to' | 'from'): string {
  const v = stringField('sms', o, key, 80);
  if (!(key === 'to' ? PHONE : OURS).test(v)) throw new ReplyToError('sms', `"${key}" is not a phone number`);
  return v;
}

/** The stored reply target of an SMS, or null when the row has none (the deliverer falls back to the conversation key). */
export function parseSmsReplyTo(raw: unknown): SmsReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('sms', raw);
  return { to: number(o, 'to'), from: number(o, 'from') };
}
