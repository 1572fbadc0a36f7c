import { hasLeftTwilio } from './status.js';
import type { DeliveryLog } from './store.js';

const POLL_MS = 100;

/**
 * Waits until the status callback for `sid` (recorded by the listener, in whichever
 * process, on the row `status:<sid>` of the turn) says the message left Twilio, or
 * `timeoutMs` passed. Twilio queues a sender's messages and does not promise to hand
 * them to the carrier in the order they were created, so part n+1 waits for part n.
 * Returns the status seen, or null on timeout.
 */
export async function waitForSent(deliveries: DeliveryLog, turnId: string, sid: string, timeoutMs: number): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await deliveries.get(turnId, 'sms', `status:${sid}`);
    if (row && hasLeftTwilio(row.state)) return row.state;
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, left)));
  }
}
