import type { SmsStore } from './store.js';

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

/** The message has left Twilio for the carrier, or will not (sent, delivered, undelivered, failed, read, canceled). */
export function hasLeftTwilio(status: string): boolean {
  return status !== 'receiving' && status !== 'received' && Object.hasOwn(RANK, status) && RANK[status]! >= RANK.sent!;
}

/**
 * Twilio's delivery status callbacks, a small log on the deliveries table: one
 * row per message, turn id from the callback URL (or 'status'), target
 * `status:<MessageSid>`, state the latest MessageStatus, body {to, errorCode}.
 */
export class StatusLog {
  constructor(private readonly store: SmsStore) {}

  async record(turnId: string, sid: string, status: string, details: { to?: string; errorCode?: string }): Promise<void> {
    const deliveries = this.store.deliveries;
    const target = `status:${sid}`;
    const prev = await deliveries.get(turnId, 'sms', target);
    const rank = (s: string) => (Object.hasOwn(RANK, s) ? RANK[s]! : 0);
    if (prev && rank(prev.state) > rank(status)) return;
    await deliveries.record(turnId, 'sms', target, {
      platformMessageId: sid,
      state: status,
      body: JSON.stringify({ ...(details.to ? { to: details.to } : {}), ...(details.errorCode ? { errorCode: details.errorCode } : {}) }),
    });
  }
}
