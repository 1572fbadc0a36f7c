import { z } from 'zod';
import type { ScheduleRecord } from '../../adapters/store/ports/schedules.js';
import { defineTool, ToolError } from '../contract.js';

/** What the tool needs: the gateway's validated create (src/schedules/create.ts), bound to the store. */
export type CreateSchedule = (req: { conversationId: string; cron?: string; at?: string; tz?: string; prompt: string }, by: string) => Promise<ScheduleRecord>;

/**
 * `schedule_message`: the agent schedules a message in this conversation ("remind me Friday at 9").
 * Its effect is external_send, so every call waits for an operator's approval before it runs
 * (moat/approval-engine.ts); the schedule is then created like an operator's, audited.
 */
export function scheduleMessageTool(create: CreateSchedule) {
  return defineTool({
    name: 'schedule_message',
    description:
      'Schedule a message to this conversation: at a one-off time ("at", ISO 8601 with offset) or repeating ("cron", 5 fields), in the recipient\'s IANA time zone ("tz"). "prompt" says what to do then. Needs an operator\'s approval.',
    effect: 'external_send',
    toolset: 'schedule',
    schema: z.object({
      prompt: z.string().min(1).max(2000),
      at: z.string().max(40).optional(),
      cron: z.string().max(100).optional(),
      tz: z.string().max(64).optional(),
    }),
    async execute(args, ctx) {
      try {
        const s = await create({ conversationId: ctx.conversationId, ...args }, `agent:${ctx.turnId}`);
        return `Scheduled ${s.id}: ${s.kind === 'cron' ? `"${s.cron}"` : 'once'} in ${s.tz}, next at ${s.nextAt}.`;
      } catch (e) {
        throw new ToolError(`Could not schedule: ${(e as Error).message}`);
      }
    },
  });
}
