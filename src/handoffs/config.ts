import { z } from 'zod';

/** Human takeover's slice of the configuration: `takeover.*` (see src/handoffs/service.ts). */
export const takeoverSchema = z
  .object({
    /** A request for a human (request_handoff) that no operator takes within this many minutes: the agent tells the user (onSlaExpiry). */
    slaMinutes: z.number().positive().max(10_080).default(15),
    /** At the SLA: `resume` closes the request and the agent answers again; `wait` keeps the conversation waiting for an operator. */
    onSlaExpiry: z.enum(['resume', 'wait']).default('resume'),
    /** How often each worker looks for requests past their SLA. */
    pollMs: z.number().int().positive().default(15_000),
    /** Where requests and the user's messages are posted for operators (slack, discord: a channel id; sms: "+to|+from"); unset: approvals.operatorChannel (when set). */
    operatorChannel: z.object({ channel: z.string(), target: z.string() }).strict().optional(),
  })
  .strict()
  .prefault({});

export type TakeoverConfig = z.infer<typeof takeoverSchema>;
