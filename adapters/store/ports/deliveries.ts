/** What a turn posted to one target on a platform. */
export interface DeliveryRecord {
  id: number;
  turnId: string;
  channel: string;
  target: string;
  platformMessageId: string | null;
  state: string;
  body: string | null;
  updatedAt: Date;
}

export interface DeliveryFields {
  platformMessageId?: string | null;
  state: string;
  body?: string | null;
  /** The turn attempt that writes: a newer attempt of the turn fences this write out. */
  attempt?: number;
}

/** A turn's reply that the delivery queue gave up on: the operator's dead letter. */
export interface DeadDeliveryRecord {
  id: number;
  turnId: string;
  conversationId: string;
  channel: string;
  /** The error's stable code (`channel_delivery_failed`, `invalid_reply_target`...), with the platform's own after a colon. */
  code: string;
  error: string;
  attempts: number;
  createdAt: Date;
}

export interface DeadDelivery {
  turnId: string;
  conversationId: string;
  channel: string;
  code: string;
  error: string;
  attempts: number;
}

/**
 * What a turn posted on a platform, one row per (turn, channel, target). A
 * retried turn finds its row and edits the message it already posted instead
 * of posting a second one.
 */
export interface DeliveryRepository {
  get(turnId: string, channel: string, target: string): Promise<DeliveryRecord | undefined>;
  /** A turn's deliveries, in the order they were first recorded. */
  forTurn(turnId: string): Promise<DeliveryRecord[]>;
  /**
   * Upserts the row: the state always changes; a null or missing platform
   * message id or body keeps the one recorded before. With `attempt`, the write
   * is fenced: it happens only while the turn row is at that attempt, else
   * nothing is written and it throws LeaseLostError (kernel/lease-lost.ts).
   */
  record(turnId: string, channel: string, target: string, fields: DeliveryFields): Promise<DeliveryRecord>;
  /** Records a dead letter; a second one for the same turn and channel replaces the first. */
  deadLetter(d: DeadDelivery): Promise<void>;
  /** The newest dead letters first. */
  deadLetters(limit?: number): Promise<DeadDeliveryRecord[]>;
}
