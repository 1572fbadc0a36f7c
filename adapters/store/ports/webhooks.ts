export interface SubscriberRow {
  id: string;
  url: string;
  secret_env: string;
  events: string[];
}

export interface DeadLetterRow {
  id: number;
  subscriber: string;
  event: unknown;
  error: string;
  attempts: number;
  created_at: Date;
}

/** Event webhook subscribers and the deliveries that failed for good. */
export interface WebhookRepository {
  /** Every subscriber, oldest first. */
  subscribers(): Promise<SubscriberRow[]>;
  /** Adds a subscriber or replaces the one with the same id. */
  addSubscriber(s: SubscriberRow): Promise<void>;
  deadLetter(subscriber: string, event: unknown, error: string, attempts: number): Promise<void>;
  /** The newest dead letters first, at most `limit` (default 100). */
  deadLetters(limit?: number): Promise<DeadLetterRow[]>;
}
