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
}
