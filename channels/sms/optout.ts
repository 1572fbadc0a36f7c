import type { SmsStore } from './store.js';

/**
 * Opt-outs (STOP … START), kept in the deliveries table: one row per number
 * under the sentinel turn id 'optout' (channel 'sms', target the number, state
 * 'opted_out' or 'opted_in', body what set it). The listener writes it on the
 * keywords (and the deliverer on Twilio's error 21610); the deliverer reads it
 * before every message, so nothing is sent to a number between STOP and START,
 * even from a turn that was already running.
 */
export const OPTOUT_TURN = 'optout';

export class OptOuts {
  constructor(private readonly store: SmsStore) {}

  async isOptedOut(number: string): Promise<boolean> {
    return (await this.store.deliveries.get(OPTOUT_TURN, 'sms', number))?.state === 'opted_out';
  }

  async set(number: string, optedOut: boolean, source: string): Promise<void> {
    await this.store.deliveries.record(OPTOUT_TURN, 'sms', number, {
      state: optedOut ? 'opted_out' : 'opted_in',
      body: `${source} at ${new Date().toISOString()}`,
    });
  }
}
