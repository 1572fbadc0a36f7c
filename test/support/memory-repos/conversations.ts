import type { ConversationRecord, ConversationRepository, ConversationStats } from '../../../adapters/store/ports/conversations.js';
import { conversationRecord, type Tables } from './tables.js';

export class MemoryConversations implements ConversationRepository {
  constructor(private readonly t: Tables) {}

  async conversationByKey(key: string): Promise<ConversationRecord | undefined> {
    const c = this.t.conversationByKey(key);
    return c && conversationRecord(c);
  }

  async conversation(id: string): Promise<ConversationRecord | undefined> {
    const c = this.t.conversations.get(id);
    return c && conversationRecord(c);
  }

  async archiveConversation(key: string): Promise<boolean> {
    const c = this.t.conversationByKey(key);
    if (!c) return false;
    c.key = `${key}#archived-${Date.now()}`;
    return true;
  }

  async conversationStats(key: string): Promise<ConversationStats | undefined> {
    const c = this.t.conversationByKey(key);
    if (!c) return undefined;
    const turns = [...this.t.turns.values()].filter((t) => t.conversationId === c.id);
    return {
      id: c.id,
      turns: turns.length,
      tokens: turns.reduce((n, t) => n + Number((t.usage as { totalTokens?: unknown } | null)?.totalTokens ?? 0), 0),
      running: turns.some((t) => t.status === 'running'),
      parked: turns.some((t) => t.status === 'parked'),
      pendingApprovals: this.t.approvals.filter((a) => a.conversationId === c.id && a.status === 'pending').length,
    };
  }

  /** No handoffs table in the fakes: never taken over. */
  async waitingCount(conversationKey: string): Promise<{ waiting: number; running: boolean; mode: string | null; handoff: null }> {
    const c = this.t.conversationByKey(conversationKey);
    if (!c) return { waiting: 0, running: false, mode: null, handoff: null };
    return {
      waiting: this.t.inbox.filter((i) => i.conversationId === c.id && i.turnId === null && !i.consumedAt).length,
      running: [...this.t.turns.values()].some((t) => t.conversationId === c.id && t.status === 'running'),
      mode: c.queueMode ?? null,
      handoff: null,
    };
  }

  async setQueueMode(conversationKey: string, mode: string): Promise<boolean> {
    const c = this.t.conversationByKey(conversationKey);
    if (!c) return false;
    c.queueMode = mode;
    return true;
  }

  async listConversations(limit = 50): Promise<Array<ConversationRecord & { updatedAt: Date; turns: number }>> {
    const turns = [...this.t.turns.values()];
    return [...this.t.conversations.values()]
      .sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      .slice(0, limit)
      .map((c) => ({ ...conversationRecord(c), updatedAt: new Date(c.updatedAt), turns: turns.filter((t) => t.conversationId === c.id).length }));
  }
}
