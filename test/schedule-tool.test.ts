/**
 * The agent's schedule_message tool: the approval engine asks an operator for every call, at every
 * autonomy level, and an approved call creates the schedule in the turn's own conversation, audited
 * as the agent's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import type { Db } from '../adapters/db/port.js';
import { migrate } from '../adapters/store/migrate.js';
import { ScheduleStore } from '../adapters/store/schedules.js';
import { Store } from '../adapters/store/store.js';
import { decide } from '../moat/approval-engine.js';
import { createSchedule } from '../src/schedules/create.js';
import { scheduleMessageTool } from '../tools/builtin/schedule.js';
import { ToolError } from '../tools/contract.js';

describe('schedule_message', () => {
  let db: Db;
  let conversationId: string;
  const tool = () => scheduleMessageTool((req, by) => createSchedule(new ScheduleStore(db), req, by, { defaultTz: 'UTC' }));
  beforeAll(async () => {
    db = await openPglite();
    await migrate(db);
    conversationId = (
      await new Store(db).accept({
        channel: 'sms',
        externalId: 's1',
        conversationKey: 'sms:+15550001',
        sender: { id: '+15550001' },
        text: 'remind me friday at 9',
        attachments: [],
        receivedAt: new Date(),
      })
    ).conversationId;
  });
  afterAll(() => db.close());

  it('is asked at every autonomy level', () => {
    const t = tool();
    for (const autonomy of ['strict', 'supervised', 'trusted'] as const) {
      const v = decide({ tool: t.name, effect: t.effect, args: { prompt: 'x', at: '2030-01-04T09:00:00+01:00' } }, { autonomy, rules: [] });
      expect(v.decision, autonomy).toBe('ask');
    }
  });

  it('once approved, schedules a message in the conversation of the turn, audited as the agent', async () => {
    const t = tool();
    const ctx = { conversationId, turnId: 't_42', senderId: 'sms:+15550001', workspace: '/tmp', signal: new AbortController().signal };
    const out = await t.execute({ prompt: 'Remind them of the dentist', at: '2030-01-04T09:00:00+01:00', tz: 'Europe/Amsterdam' }, ctx);
    expect(String(out)).toMatch(/^Scheduled sch_[0-9a-f]+: once in Europe\/Amsterdam, next at 2030-01-04T08:00:00.000Z\.$/);
    const [s] = await new ScheduleStore(db).list(conversationId);
    expect(s).toMatchObject({ prompt: 'Remind them of the dentist', createdBy: 'agent:t_42', channel: 'sms' });
    const audit = (await db.query<{ actor: string; action: string }>(`select actor, action from audit where action = 'schedule.created'`)).rows;
    expect(audit).toEqual([{ actor: 'agent:t_42', action: 'schedule.created' }]);
    await expect(t.execute({ prompt: 'x', cron: 'whenever' }, ctx)).rejects.toBeInstanceOf(ToolError);
  });
});
