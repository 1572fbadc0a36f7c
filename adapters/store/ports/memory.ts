export type MemoryScope = 'global' | 'conversation' | 'sender';

export interface MemoryNote {
  id: number;
  scope: string;
  body: string;
}

export interface MemoryListing extends MemoryNote {
  scopeKey: string;
  createdAt: Date;
}

/**
 * Memory notes in three scopes: global (scope key ''), one conversation (its
 * id), one sender (a canonical identity, kernel/identity.ts, compared whole).
 */
export interface MemoryRepository {
  /** Adds a note; returns its id (ids only grow). */
  addMemory(scope: MemoryScope, scopeKey: string, body: string): Promise<number>;
  /**
   * Notes visible to this conversation and sender (global ones, the
   * conversation's, the sender's), newest first, at most `limit` (default 20).
   * Words of the query longer than two letters (the first eight) filter: a
   * note matches when it contains any of them, case-insensitively; a query
   * without such words matches every visible note.
   */
  searchMemory(conversationId: string, senderId: string, query: string, limit?: number): Promise<MemoryNote[]>;
  /** Operators: every note, newest first (default 200), optionally of one scope and key. */
  listMemory(scope?: string, scopeKey?: string, limit?: number): Promise<MemoryListing[]>;
  /** Operators: deletes any note; false when there was none. */
  deleteMemory(id: number): Promise<boolean>;
  /**
   * A user's delete (memory_forget): only this sender's notes and this
   * conversation's; never a global note nor another sender's. False when
   * nothing was deleted.
   */
  forgetMemory(id: number, conversationId: string, senderId: string): Promise<boolean>;
}
