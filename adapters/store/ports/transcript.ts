/** A stored transcript message, in pi-ai's message shape (user, assistant or toolResult). */
export type StoredMessage = { role: string };

export interface TranscriptEntry {
  id: number;
  turnId: string | null;
  role: string;
  content: StoredMessage;
  createdAt: Date;
}

export interface MessageHit {
  conversationId: string;
  id: number;
  role: string;
  snippet: string;
  createdAt: Date;
}

/**
 * The transcript: a conversation's messages, appended only when a turn closes
 * (TurnRepository.finishTurn), in ascending id order, and the running summary
 * that compaction keeps.
 */
export interface TranscriptRepository {
  /** The newest `limit` messages (default 200), oldest first. */
  transcript(conversationId: string, limit?: number): Promise<StoredMessage[]>;
  /** Messages with an id above afterId, oldest first, at most `limit` (default 200): clients catching up. */
  messagesAfter(conversationId: string, afterId: number, limit?: number): Promise<TranscriptEntry[]>;
  /** All assistant text of one turn, in order, its messages separated by a blank line; '' when there is none. */
  turnReply(turnId: string): Promise<string>;
  /**
   * Word search over messages of the conversations in which `sender` (a
   * canonical identity, compared whole) wrote, newest first (default 10).
   */
  searchMessages(query: string, opts: { sender: string; limit?: number }): Promise<MessageHit[]>;
  /**
   * Records a compaction: the summary now covers the messages up to uptoId.
   * Only moves forward: false (nothing written) when the stored summary
   * already covers uptoId or further.
   */
  saveSummary(conversationId: string, uptoId: number, summary: string): Promise<boolean>;
}
