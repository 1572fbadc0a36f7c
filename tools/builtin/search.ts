import { z } from 'zod';
import type { TranscriptRepository } from '../../adapters/store/ports/index.js';
import { defineTool } from '../contract.js';

/** Full-text search over this person's past conversations (Postgres FTS): those their identity, channel included, wrote in. */
export function conversationSearchTool(store: Pick<TranscriptRepository, 'searchMessages'>) {
  return defineTool({
    name: 'conversation_search',
    description: "Search this person's past conversations for words or a phrase.",
    effect: 'read',
    idempotent: true,
    toolset: 'memory',
    schema: z.object({ query: z.string().min(2).max(200), limit: z.number().int().positive().max(25).default(10) }),
    async execute({ query, limit }, ctx) {
      const hits = await store.searchMessages(query, { sender: ctx.senderId, limit });
      return hits.length
        ? hits.map((h) => `[${new Date(h.createdAt).toISOString().slice(0, 10)} ${h.conversationId} #${h.id} ${h.role}] ${h.snippet}`).join('\n')
        : 'nothing found';
    },
  });
}
