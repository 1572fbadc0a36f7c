export interface ConsoleConversation {
  id: string;
  key: string;
  channel: string;
  updatedAt: Date;
  /** The status of its latest turn, null before its first. */
  status: string | null;
  turns: number;
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
  turnLatencies(limit?: number): Promise<TurnLatency[]>;
}
