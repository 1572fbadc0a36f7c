import type { ChannelProbe } from '../../src/channel/index.js';
import { probeTwilioAccount } from '../twilio/probe.js';
import type { SmsConfig } from './config.js';

/** doctor --probe for SMS: the account SID and auth token, and the account's status (channels/twilio/probe.ts). */
export async function probeSms(c: SmsConfig): Promise<ChannelProbe[]> {
  return [await probeTwilioAccount(c)];
}
