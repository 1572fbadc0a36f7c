import type { Deliveries } from '../../src/channel/index.js';
import { type FormParams, param } from './signature.js';

/** A status callback's form (MessageSid, MessageStatus, To, ErrorCode; the older Sms* names too), with the turn from its URL (?t=), or null when it names no message or status. */
export interface StatusCallback {
  sid: string;
  status: string;
  to?: string;
  errorCode?: string;
  /** The turn the deliverer put in the callback URL, or 'status'. */
  turn: string;
}

export function parseStatusCallback(p: FormParams, url: URL): StatusCallback | null {
  const sid = param(p, 'MessageSid') ?? param(p, 'SmsSid');
  const status = param(p, 'MessageStatus') ?? param(p, 'SmsStatus');
  if (!sid || !status) return null;
  const to = param(p, 'To');
  const errorCode = param(p, 'ErrorCode');
  return { sid, status, turn: url.searchParams.get('t') || 'status', ...(to ? { to } : {}), ...(errorCode ? { errorCode } : {}) };
}

/** How far along a message is; a callback never moves a message back (callbacks may arrive out of order). */
const RANK: Record<string, number> = {
  accepted: 1,
  scheduled: 1,
  queued: 2,
  sending: 3,
  sent: 4,
  receiving: 4,
  received: 5,
  delivered: 6,
  undelivered: 6,
  failed: 6,
  read: 7,
  canceled: 6,
};

const rank = (s: string) => (Object.hasOwn(RANK, s) ? RANK[s]! : 0);

/** The message has left Twilio for the carrier, or will not (sent, delivered, undelivered, failed, read, canceled). */
export function hasLeftTwilio(status: string): boolean {
  return status !== 'receiving' && status !== 'received' && Object.hasOwn(RANK, status) && RANK[status]! >= RANK.sent!;
}

/** Twilio gave up on the message after accepting it (ErrorCode says why: 63016 outside the WhatsApp window, 30003 unreachable...). */
export const isUndelivered = (status: string) => status === 'failed' || status === 'undelivered';

/**
 * Twilio's delivery status callbacks, a small log on the deliveries table: one row per message,
 * turn id from the callback URL (or 'status'), target `status:<MessageSid>`, state the latest
 * MessageStatus, body {to, errorCode}. Shared by the sms and whatsapp channels.
 */
export async function recordStatus(
  deliveries: Deliveries,
  channel: string,
  turnId: string,
  sid: string,
  status: string,
  details: { to?: string; errorCode?: string },
): Promise<void> {
  const target = `status:${sid}`;
  const prev = await deliveries.get(turnId, channel, target);
  if (prev && rank(prev.state) > rank(status)) return;
  await deliveries.record(turnId, channel, target, {
    platformMessageId: sid,
    state: status,
    body: JSON.stringify({ ...(details.to ? { to: details.to } : {}), ...(details.errorCode ? { errorCode: details.errorCode } : {}) }),
  });
}
