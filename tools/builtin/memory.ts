import { z } from 'zod';
import type { Store } from '../../adapters/store/store.js';
import { checkMemoryWrite, type MemoryEvidence } from '../../moat/memory-guard.js';
import { defineTool, ToolError } from '../contract.js';

const NO_EVIDENCE: MemoryEvidence = { userMessages: [], toolOutputs: [] };

export function memoryTools(store: Store, opts: { maxChars: number; findSecrets: (t: string) => boolean }) {
  const memory_remember = defineTool({
    name: 'memory_remember',
    description: 'Keep a short durable note (a fact or preference the user stated, or a tool returned) for later conversations.',
    effect: 'write',
    selfGuarded: true,
    toolset: 'memory',
    schema: z.object({
      note: z.string().min(1).max(2000),
      scope: z.enum(['sender', 'conversation', 'global']).default('sender').describe('sender: about this person; conversation: this thread only; global: everyone'),
    }),
    async execute({ note, scope }, ctx) {
      // Evidence: what the user said in this conversation and what tools returned.
      const check = checkMemoryWrite(note, ctx.evidence?.() ?? NO_EVIDENCE, opts);
      if (!check.allowed) throw new ToolError(`memory refused (${check.code}): ${check.reason}`);
      const key = scope === 'sender' ? ctx.senderId : scope === 'conversation' ? ctx.conversationId : '';
      const id = await store.addMemory(scope, key, note);
      return `remembered (#${id}, ${scope})`;
    },
  });
  const memory_recall = defineTool({
    name: 'memory_recall',
    description: 'Search the durable notes visible here (about this person, this conversation, or global).',
    effect: 'read',
    toolset: 'memory',
    schema: z.object({ query: z.string().default('') }),
    async execute({ query }, ctx) {
      const notes = await store.searchMemory(ctx.conversationId, ctx.senderId, query);
      return notes.length ? notes.map((n) => `#${n.id} (${n.scope}): ${n.body}`).join('\n') : 'no notes found';
    },
  });
  const memory_forget = defineTool({
    name: 'memory_forget',
    description: 'Delete a durable note by its number.',
    effect: 'write',
    selfGuarded: true,
    toolset: 'memory',
    schema: z.object({ id: z.number().int().positive() }),
    async execute({ id }, ctx) {
      if (!(await store.forgetMemory(id, ctx.conversationId, ctx.senderId))) throw new ToolError(`no note #${id} visible here`);
      return `forgot #${id}`;
    },
  });
  return [memory_remember, memory_recall, memory_forget];
}
