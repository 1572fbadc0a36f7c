import type { MessagesApi } from './client.js';

/**
 * How far Twilio's date_created may lag our clock (it has whole seconds, and the two
 * clocks differ a little). Wider catches more clock skew; narrower keeps an identical
 * text sent to the same number just before (another turn's "OK") from being taken for ours.
 */
const CLOCK_SKEW_MS = 10_000;
/** Messages read per look-up (one page, newest first). */
const LOOKUP_LIMIT = 50;

export interface SendIntent {
  to: string;
  from?: string;
  messagingServiceSid?: string;
  /**
   * The Body sent. Undefined for a Content API template: Twilio lists the text it rendered,
   * which the gateway does not know, so any outbound message to the address matches.
   */
  body?: string;
  /** When the intent was recorded, before the first create. */
  since: Date;
  /** SIDs already accounted for (the turn's other messages): never taken for this one. */
  known?: ReadonlySet<string>;
}

/**
 * Did Twilio create this message after all? A create whose answer was lost (timeout,
 * reset connection, 5xx) may have been accepted: Twilio has no idempotency key, so before
 * sending it again we read the newest messages to the address (To, and From unless a
 * Messaging Service picks the sender) and look for an outbound one with the same body,
 * created since the intent was recorded. No DateSent filter: a message still queued has
 * no date_sent yet, and it is exactly the one a lost answer leaves behind.
 */
export async function findCreated(sender: MessagesApi, intent: SendIntent): Promise<{ sid: string; status: string } | null> {
  const listed = await sender.recent({ to: intent.to, ...(intent.from && !intent.messagingServiceSid ? { from: intent.from } : {}), limit: LOOKUP_LIMIT });
  const after = intent.since.getTime() - CLOCK_SKEW_MS;
  const m = listed.find(
    (x) =>
      x.direction.startsWith('outbound') &&
      x.to === intent.to &&
      (intent.body === undefined || x.body === intent.body) &&
      !intent.known?.has(x.sid) &&
      (intent.messagingServiceSid ? x.messagingServiceSid === intent.messagingServiceSid : x.from === intent.from) &&
      (x.dateCreated === null || x.dateCreated.getTime() >= after),
  );
  return m ? { sid: m.sid, status: m.status } : null;
}
