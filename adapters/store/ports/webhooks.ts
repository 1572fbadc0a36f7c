/** An event webhook subscriber: where events go and which env var holds the signing secret. */
export interface WebhookSubscriber {
  id: string;
  url: string;
  secretEnv: string;
  events: string[];
}

/** An event delivery to a subscriber that failed for good. */
export interface WebhookDeadLetter {
  id: number;
  subscriber: string;
  event: unknown;
  error: string;
  attempts: number;
  createdAt: Date;
}

/** Event webhook subscribers and the deliveries that failed for good. */
export interface WebhookRepository {
  /** Every subscriber, oldest first. */
  subscribers(): Promise<WebhookSubscriber[]>;
  /** Adds a subscriber or replaces the one with the same id. */
  addSubscriber(s: WebhookSubscriber): Promise<void>;
  deadLetter(subscriber: string, event: unknown, error: string, attempts: number): Promise<void>;
  /** The newest dead letters first, at most `limit` (default 100). */
  deadLetters(limit?: number): Promise<WebhookDeadLetter[]>;
}
