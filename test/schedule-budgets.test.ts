/**
 * Token budgets and the cheap check slot for schedules, on the embedded gateway with two fake
 * models: "main" (the agent) and "small" (schedules.checkSlot). What the recipient sees: a run
 * over its token budget sends nothing and asks no model; a check answered NO sends nothing and
 * never reaches the agent's model; a check answered YES runs as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { WebhookHook } from './support/webhook-hook.js';

describe('schedule budgets and checks', () => {
  const main = new FakeLlm();
  const small = new FakeLlm();
  const hook = new WebhookHook('ops', 'schedule-budgets-secret-0123456789', 'SB_BUDGET_SECRET');
  let gw: Gateway;
  beforeAll(async () => {
    await Promise.all([main.start(), small.start(), hook.start()]);
    process.env.SB_BUDGET_LLM = 'k';
    main.respond((req) => {
      const text = lastUserText(req.body);
      if (text.includes('Hourly digest')) return reply('Digest: all quiet.');
      if (text.includes('Water the plants')) return reply('Time to water the plants.');
      if (text.includes('Stand-up')) return reply('Stand-up in 5 minutes.');
      return reply('hello back');
    });
    // The check slot: NO when the user already said they watered the plants today.
    small.respond((req) => reply(lastUserText(req.body).includes('watered them already') ? 'NO' : 'YES'));
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [
            { id: 'main', api: 'openai-completions', model: 'm', baseUrl: main.openaiBaseUrl, apiKeyEnv: 'SB_BUDGET_LLM' },
            { id: 'small', api: 'openai-completions', model: 's', baseUrl: small.openaiBaseUrl, apiKeyEnv: 'SB_BUDGET_LLM' },
          ],
          tools: { planner: false },
          channels: { webhook: { hooks: [hook.config()] } },
          schedules: { pollMs: 100, checkSlot: 'small' },
        },
      ),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([main.close(), small.close(), hook.close()]);
    delete process.env.SB_BUDGET_LLM;
  });

  const api = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const r = await fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      ...(init.body ? { body: JSON.stringify(init.body) } : {}),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  /** A webhook conversation (its first answer received), by its key (kernel/envelope.ts conversationKey). */
  const conversation = async (name: string, text: string) => {
    const before = hook.received.length;
    const r = await hook.send(gw.url!, { text, conversation: name, sender: 'crm' });
    expect(r.status).toBe(202);
    await eventually(async () => hook.received.length > before);
    return `webhook/ops/${name}/-`;
  };
  const runsOf = async (id: string) => ((await api(`/v1/schedules/${id}`)).body.runs as Array<{ status: string }>).map((r) => r.status);
  const asked = (m: FakeLlm, text: string) => m.requests.filter((r) => lastUserText(r.body).includes(text)).length;
  const sent = (text: string) => hook.received.filter((r) => r.text === text).length;

  it('a schedule over its tokens per day runs once and then records over_budget without a model call', async () => {
    const conv = await conversation('digest', 'hi');
    const created = await api('/v1/schedules', { body: { conversation: conv, cron: '*/2 * * * * *', prompt: 'Hourly digest.', tokensPerDay: 1 } });
    expect(created.status).toBe(201);
    expect(created.body.tokensPerDay).toBe(1);
    const id = created.body.id as string;
    await eventually(async () => (await runsOf(id)).filter((s) => s === 'over_budget').length >= 2, 20_000);
    expect((await api(`/v1/schedules/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect(sent('Digest: all quiet.')).toBe(1);
    expect(asked(main, 'Hourly digest')).toBe(1);
  }, 30_000);

  it('a check answered NO by the cheap slot records nothing_to_say and never asks the agent', async () => {
    const conv = await conversation('plants', 'I watered them already this morning');
    const s = await api('/v1/schedules', {
      body: { conversation: conv, at: new Date().toISOString(), prompt: 'Water the plants reminder.', check: 'Do the plants still need watering today?' },
    });
    expect(s.status).toBe(201);
    expect(s.body.check).toBe('Do the plants still need watering today?');
    await eventually(async () => (await runsOf(s.body.id)).includes('nothing_to_say'));
    const checks = small.requests.filter((r) => lastUserText(r.body).includes('Do the plants still need watering today?'));
    expect(checks).toHaveLength(1);
    // The check saw the recipient's time and the conversation, and is told the conversation is data.
    expect(lastUserText(checks[0]!.body)).toMatch(/Recipient's local time: \w+day \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\)/);
    expect(lastUserText(checks[0]!.body)).toContain('user: I watered them already this morning');
    expect(asked(main, 'Water the plants')).toBe(0);
    expect(sent('Time to water the plants.')).toBe(0);
  });

  it('a check answered YES lets the run go ahead', async () => {
    const conv = await conversation('standup', 'hello');
    const s = await api('/v1/schedules', {
      body: { conversation: conv, at: new Date().toISOString(), prompt: 'Stand-up reminder.', check: 'Is it a weekday or weekend?' },
    });
    await eventually(async () => sent('Stand-up in 5 minutes.') === 1);
    await eventually(async () => (await runsOf(s.body.id)).includes('delivered'));
    expect(asked(main, 'Stand-up')).toBe(1);
  });

  it('refuses a bad tokensPerDay or check with a 400 naming the field', async () => {
    const conv = await conversation('bad', 'hey');
    const bad1 = await api('/v1/schedules', { body: { conversation: conv, at: new Date().toISOString(), prompt: 'x', tokensPerDay: 0 } });
    expect(bad1.status).toBe(400);
    expect(bad1.body.error.param).toBe('tokensPerDay');
    const bad2 = await api('/v1/schedules', { body: { conversation: conv, at: new Date().toISOString(), prompt: 'x', check: 42 } });
    expect(bad2.status).toBe(400);
    expect(bad2.body.error.param).toBe('check');
  });
});
