import { z } from 'zod';
import type { ToolResultRepository } from '../../adapters/store/ports/index.js';
import { defineTool, ToolError } from '../contract.js';

/** Pages through a tool result that was too long to show whole. */
export function resultPageTool(store: Pick<ToolResultRepository, 'toolResult'>) {
  return defineTool({
    name: 'tool_result_page',
    description: 'Read more of a tool result that was cut short: give its result id and a byte offset.',
    effect: 'read',
    idempotent: true,
    schema: z.object({
      resultId: z.string(),
      offset: z.number().int().min(0).default(0),
      length: z
        .number()
        .int()
        .positive()
        .max(64 * 1024)
        .default(16 * 1024),
    }),
    async execute({ resultId, offset, length }, ctx) {
      // Scoped to the conversation: a result id from another conversation reads as unknown.
      const r = await store.toolResult(resultId, ctx.conversationId);
      if (!r) throw new ToolError(`no stored result ${resultId} in this conversation`);
      const buf = Buffer.from(r.content, 'utf8');
      const part = buf.subarray(offset, offset + length).toString('utf8');
      const end = Math.min(buf.length, offset + length);
      return `${part}\n[bytes ${offset}-${end} of ${buf.length}${end < buf.length ? `; next offset ${end}` : '; end'}]`;
    },
  });
}
