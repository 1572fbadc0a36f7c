import { randomUUID } from 'node:crypto';
import type { ToolResultRepository } from '../../../adapters/store/ports/tool-results.js';
import type { Tables } from './tables.js';

export class MemoryToolResults implements ToolResultRepository {
  constructor(private readonly t: Tables) {}

  async saveToolResult(turnId: string, tool: string, content: string): Promise<string> {
    const id = 'tr_' + randomUUID().replace(/-/g, '').slice(0, 16);
    this.t.toolResults.set(id, { id, turnId: turnId, tool, content });
    return id;
  }

  async toolResult(id: string, conversationId: string): Promise<{ content: string; turnId: string } | undefined> {
    const r = this.t.toolResults.get(id);
    if (!r || this.t.turns.get(r.turnId)?.conversationId !== conversationId) return undefined;
    return { content: r.content, turnId: r.turnId };
  }
}
