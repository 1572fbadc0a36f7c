import { z } from 'zod';
import type { HandoffRecord } from '../../adapters/store/ports/handoffs.js';
import { defineTool } from '../contract.js';

/** What the tool needs: the gateway's handoff service (src/handoffs/service.ts), bound. */
export type RequestHandoff = (
  conversationId: string,
  r: { reason: string; urgency: 'low' | 'normal' | 'high'; by: string },
) => Promise<{ handoff: HandoffRecord; created: boolean }>;

/**
 * `request_handoff`: the agent asks for a human operator in this conversation. It only changes
 * the gateway's own state (a request operators see, the SLA that follows), so it runs unasked: an
 * approval for asking an operator would itself wait for an operator. Asking twice returns the
 * open request (nothing is asked again), so a retried call is harmless.
 */
export function requestHandoffTool(request: RequestHandoff, slaMinutes: number) {
  return defineTool({
    name: 'request_handoff',
    description:
      'Ask for a human operator to take over this conversation (the user wants a person, or you cannot help further). ' +
      '"reason": one line for the operator; "urgency": low, normal or high. After this call tell the user a human was asked for; ' +
      'you will not answer their next messages while they wait for or talk with the operator.',
    effect: 'read',
    // No toolset: always offered (the planner guard keeps tools of no known toolset), since the model may need a human whatever the message says.
    idempotent: true,
    schema: z.object({
      reason: z.string().min(1).max(500),
      urgency: z.enum(['low', 'normal', 'high']).default('normal'),
    }),
    async execute(args, ctx) {
      const r = await request(ctx.conversationId, { reason: args.reason, urgency: args.urgency, by: `agent:${ctx.turnId}` });
      const h = r.handoff;
      if (!r.created)
        return h.state === 'taken'
          ? `An operator (${h.operator}) has this conversation already.`
          : `A human operator was already asked for (${h.id}); the request is open.`;
      return `A human operator was asked for (${h.id}, urgency ${h.urgency}). If nobody takes it within ${slaMinutes} minutes the user is told. Tell the user now that a human will join; do not promise a time.`;
    },
  });
}
