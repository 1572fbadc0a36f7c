/** A conversation as stored (the drain's lease stays inside the store). */
export interface ConversationRecord {
  id: string;
  key: string;
  channel: string;
  owner: string | null;
  agent: string;
  queueMode?: string | null;
  createdAt: Date;
}

export interface ConversationStats {
  id: string;
  turns: number;
  tokens: number;
  running: boolean;
  parked: boolean;
  pendingApprovals: number;
}

/** Conversations by id and by key. A key names one live conversation; archived ones keep their id. */
export interface ConversationRepository {
  conversationByKey(key: string): Promise<ConversationRecord | undefined>;
  conversation(id: string): Promise<ConversationRecord | undefined>;
  /**
   * /new: sets the live conversation of this key aside (its key gets an
   * `#archived-<ms>` suffix), so the next message with the key opens a fresh
   * one; the old one stays readable by id. False when no conversation has the key.
   */
  archiveConversation(key: string): Promise<boolean>;
  /** For /status: its turns, total tokens, whether a turn runs or is parked, and its pending approvals. */
  conversationStats(key: string): Promise<ConversationStats | undefined>;
  /**
   * Messages waiting under this key (neither claimed by a turn nor consumed),
   * whether a turn is running, and the conversation's own queue mode; zeros
   * and null for an unknown key.
   */
  waitingCount(conversationKey: string): Promise<WaitingCount>;
  /** Sets the conversation's own queue mode; false when no conversation has the key. */
  setQueueMode(conversationKey: string, mode: string): Promise<boolean>;
  /** Recently active conversations (by last accepted message), newest first, with their number of turns. */
  listConversations(limit?: number): Promise<Array<ConversationRecord & { updatedAt: Date; turns: number }>>;
}

/** A conversation before a new message: what waits, whether a turn runs, its queue mode, and its open handoff (taken over, or a human asked for). */
export interface WaitingCount {
  waiting: number;
  running: boolean;
  mode: string | null;
  /** The open handoff (src/handoffs/): while it is open no turn is woken for a user's message. Absent: not known (a fake). */
  handoff?: { id: string; state: 'requested' | 'taken'; conversationId: string } | null;
}
