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
   * message id or body keeps the one recorded before.
   */
  record(
    turnId: string,
    channel: string,
    target: string,
    fields: { platformMessageId?: string | null; state: string; body?: string | null },
  ): Promise<DeliveryRecord>;
}
