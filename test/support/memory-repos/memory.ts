import type { MemoryListing, MemoryNote, MemoryRepository, MemoryScope } from '../../../adapters/store/ports/memory.js';
import type { Tables } from './tables.js';

export class MemoryNotes implements MemoryRepository {
  constructor(private readonly t: Tables) {}

  async addMemory(scope: MemoryScope, scopeKey: string, body: string): Promise<number> {
    const id = this.t.nextId();
    this.t.memory.push({ id, scope, scopeKey: scopeKey, body, createdAt: this.t.now() });
    return id;
  }

  async searchMemory(conversationId: string, senderId: string, query: string, limit = 20): Promise<MemoryNote[]> {
    const words = query
      .toLowerCase()
      .split(/\W+/)
      .filter((w) => w.length > 2)
      .slice(0, 8);
    return this.t.memory
      .filter((n) => n.scope === 'global' || (n.scope === 'conversation' && n.scopeKey === conversationId) || (n.scope === 'sender' && n.scopeKey === senderId))
      .filter((n) => words.length === 0 || words.some((w) => n.body.toLowerCase().includes(w)))
      .sort((a, b) => b.id - a.id)
      .slice(0, limit)
      .map((n) => ({ id: n.id, scope: n.scope, body: n.body }));
  }

  async listMemory(scope?: string, scopeKey?: string, limit = 200): Promise<MemoryListing[]> {
    return this.t.memory
      .filter((n) => (scope === undefined || n.scope === scope) && (scopeKey === undefined || n.scopeKey === scopeKey))
      .sort((a, b) => b.id - a.id)
      .slice(0, limit)
      .map((n) => ({ ...n }));
  }

  async deleteMemory(id: number): Promise<boolean> {
    return this.remove((n) => n.id === id);
  }

  async forgetMemory(id: number, conversationId: string, senderId: string): Promise<boolean> {
    return this.remove(
      (n) => n.id === id && ((n.scope === 'conversation' && n.scopeKey === conversationId) || (n.scope === 'sender' && n.scopeKey === senderId)),
    );
  }

  private remove(which: (n: Tables['memory'][number]) => boolean): boolean {
    const i = this.t.memory.findIndex(which);
    if (i < 0) return false;
    this.t.memory.splice(i, 1);
    return true;
  }
}
