import type { ConversationRepository, ConversationRow, ConversationStats } from '../../../adapters/store/ports/conversations.js';
import { copy, type Tables } from './tables.js';

export class MemoryConversations implements ConversationRepository {
  constructor(private readonly t: Tables) {}

  async conversationByKey(key: string): Promise<ConversationRow | undefined> {
    const c = this.t.conversationByKey(key);
    return c && copy(c);
  }

  async conversation(id: string): Promise<ConversationRow | undefined> {
    const c = this.t.conversations.get(id);
    return c && copy(c);
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
    const turns = [...this.t.turns.values()].filter((t) => t.conversation_id === c.id);
    return {
      id: c.id,
      turns: turns.length,
      tokens: turns.reduce((n, t) => n + Number((t.usage as { totalTokens?: unknown } | null)?.totalTokens ?? 0), 0),
      running: turns.some((t) => t.status === 'running'),
      parked: turns.some((t) => t.status === 'parked'),
      pendingApprovals: this.t.approvals.filter((a) => a.conversation_id === c.id && a.status === 'pending').length,
    };
  }

  async waitingCount(conversationKey: string): Promise<{ waiting: number; running: boolean; mode: string | null }> {
    const c = this.t.conversationByKey(conversationKey);
    if (!c) return { waiting: 0, running: false, mode: null };
    return {
      waiting: this.t.inbox.filter((i) => i.conversation_id === c.id && i.turn_id === null && !i.consumed_at).length,
      running: [...this.t.turns.values()].some((t) => t.conversation_id === c.id && t.status === 'running'),
      mode: c.queue_mode ?? null,
    };
  }

  async setQueueMode(conversationKey: string, mode: string): Promise<boolean> {
    const c = this.t.conversationByKey(conversationKey);
    if (!c) return false;
    c.queue_mode = mode;
    return true;
  }

  async listConversations(limit = 50): Promise<Array<ConversationRow & { updated_at: Date; turns: number }>> {
    const turns = [...this.t.turns.values()];
    return [...this.t.conversations.values()]
      .sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime())
      .slice(0, limit)
      .map((c) => ({ ...copy(c), turns: turns.filter((t) => t.conversation_id === c.id).length }));
  }
}
