export interface DeliveryRow {
  id: number;
  turn_id: string;
  channel: string;
  target: string;
  platform_message_id: string | null;
  state: string;
  body: string | null;
  updated_at: Date;
}

/** A turn's reply that the delivery queue gave up on: the operator's dead letter. */
export interface DeadDeliveryRow {
  id: number;
  turn_id: string;
  conversation_id: string;
  channel: string;
  /** The error's stable code (`channel_delivery_failed`, `invalid_reply_target`...), with the platform's own after a colon. */
  code: string;
  error: string;
  attempts: number;
  created_at: Date;
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
  get(turnId: string, channel: string, target: string): Promise<DeliveryRow | undefined>;
  /** A turn's deliveries, in the order they were first recorded. */
  forTurn(turnId: string): Promise<DeliveryRow[]>;
  /**
   * Upserts the row: the state always changes; a null or missing platform
   * message id or body keeps the one recorded before.
   */
  record(
    turnId: string,
    channel: string,
    target: string,
    fields: { platformMessageId?: string | null; state: string; body?: string | null },
  ): Promise<DeliveryRow>;
  /** Records a dead letter; a second one for the same turn and channel replaces the first. */
  deadLetter(d: DeadDelivery): Promise<void>;
  /** The newest dead letters first. */
  deadLetters(limit?: number): Promise<DeadDeliveryRow[]>;
}
