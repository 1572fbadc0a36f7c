/** One conversation as its owner takes it out: who said what, the tools, the approvals, the usage. */
export interface ConversationExport {
  conversation: { id: string; key: string; channel: string; agent: string; createdAt: string };
  /** Everyone whose messages are in it (canonical identities, kernel/identity.ts). */
  senders: string[];
  messages: ExportedMessage[];
  approvals: ExportedApproval[];
  turns: Array<{ id: string; seq: number; status: string; finishReason: string | null; startedAt: string; finishedAt: string | null; usage: unknown }>;
  usage: { input: number; output: number; totalTokens: number; costUsd: number };
}

export interface ExportedMessage {
  id: number;
  at: string;
  turn: string | null;
  /** operator, note: a message of a taken-over time (src/handoffs/), an operator's to the user or the gateway's note for the agent. */
  role: 'user' | 'assistant' | 'tool' | 'operator' | 'note';
  /** Who said it: the sender's identity (user), the agent (assistant), the tool's name (tool). */
  author: string;
  text: string;
  toolCalls?: Array<{ id: string; name: string; arguments: unknown }>;
  toolCallId?: string;
  isError?: boolean;
}

export interface ExportedApproval {
  code: string;
  tool: string;
  arguments: unknown;
  tier: string;
  status: string;
  requester: string | null;
  decidedBy: string | null;
  decidedVia: string | null;
  decidedAt: string | null;
  createdAt: string;
}

/** How much an erasure removed, by table (and whether a workspace folder went too: the caller removes it). */
export interface ErasureReport {
  conversations: string[];
  rows: Record<string, number>;
}

/** Data subject rights: export and erasure, per conversation and per sender. */
export interface DataRightsRepository {
  exportConversation(conversationId: string): Promise<ConversationExport | undefined>;
  /** Every conversation with a message from this sender (a canonical identity), oldest first. */
  conversationsOf(sender: string): Promise<string[]>;
  /** Every conversation id, oldest first. */
  allConversations(): Promise<string[]>;
  /** Deletes the conversation and everything of it; audited as `erasure.conversation` in the same transaction. */
  eraseConversation(conversationId: string, by: string): Promise<ErasureReport>;
  /**
   * Deletes the sender's data: every conversation only they wrote in, whole; in shared ones their
   * inbox rows, and their messages in the transcript replaced by a marker; their notes, access
   * rows, sender-scoped rules; their name as an approval's requester. Audited as `erasure.sender`
   * with a hash of the identity, not the identity.
   */
  eraseSender(sender: string, by: string): Promise<ErasureReport>;
}
