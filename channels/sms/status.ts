import { recordStatus } from '../twilio/status.js';
import type { SmsStore } from './store.js';

export { hasLeftTwilio } from '../twilio/status.js';

/** Twilio's delivery status callbacks on the sms channel's delivery rows (channels/twilio/status.ts). */
export class StatusLog {
  constructor(private readonly store: SmsStore) {}

  record(turnId: string, sid: string, status: string, details: { to?: string; errorCode?: string }): Promise<void> {
    return recordStatus(this.store.deliveries, 'sms', turnId, sid, status, details);
  }
}
