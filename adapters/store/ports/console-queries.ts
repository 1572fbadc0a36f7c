export interface ConsoleConversation {
  id: string;
  key: string;
  channel: string;
  updatedAt: Date;
  /** The status of its latest turn, null before its first. */
  status: string | null;
  turns: number;
  /** Its latest message's sender: the display name where the channel gave one, and the canonical identity. */
  senderName: string | null;
  senderId: string | null;
  /** The latest of its last accepted message and its last turn's start or finish. */
  lastActivity: Date;
}

/** A finished turn's duration, and how much of it the turn spent parked waiting for a human. */
export interface ConsoleTurnLatency {
  ms: number;
  parkedMs: number;
  finishedAt: Date;
}

export interface TurnLatency {
  ms: number;
  finishedAt: Date;
}

/** Read-only views for the operator console. */
export interface ConsoleQueries {
  /** Recently active conversations, newest first (default 30). */
  recentConversations(limit?: number): Promise<ConsoleConversation[]>;
  /** How long finished turns took (ms), newest first (default 60). */
  turnLatencies(limit?: number): Promise<ConsoleTurnLatency[]>;
}
