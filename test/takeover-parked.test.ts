/**
 * Human takeover of a conversation whose turn is parked on an approval, on both backends: the
 * takeover withdraws the approval (expired, decided by 'takeover', audited approval.withdrawn) and
 * closes the parked turn without running the model again, so an operator approving it afterwards is
 * refused (410 expired), the tool does not run, the model is not asked, and the user gets no agent
 * answer while the operator holds the conversation. After handback the agent answers again.
 * Real gateway, real store, the fake model asking for a shell command that needs approval.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { NOTICE } from '../src/handoffs/text.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { backendSetups } from './support/backends.js';
import { API_KEY, openaiClient, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

/** The fake model: run the command the user asked for; after a tool result, report it; else answer plainly. */
function agentLike(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 300)}`);
  const text = String(typeof last.content === 'string' ? last.content : JSON.stringify(last.content));
  const m = /run: (.+)$/.exec(text);
  return m ? toolCall('shell_exec', { command: m[1] }) : reply(`agent: ${text}`);
}

const setups = backendSetups();

describe.each(setups)('takeover of a turn parked on an approval: $name', (setup) => {
  let llm: FakeLlm;
  let gw: Gateway;

  const api = (method: string, path: string, body?: unknown, key = TEST_OPERATOR_KEY) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chat = async (conversation: string, text: string) =>
    (await openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: text }],
    })) as any;
  const conversationId = async (name: string) =>
    (
      await gw.infra.store.db.query<{ id: string }>(`select id from conversations where channel = 'http' and key like $1 order by created_at limit 1`, [
        `http/%/${name}/-`,
      ])
    ).rows[0]!.id;
  const userMessages = async (name: string) =>
    ((await (await api('GET', `/v1/conversations/${name}/messages`, undefined, API_KEY)).json()) as any).data as Array<{ role: string; content: string }>;

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond(agentLike);
    gw = await startGateway(testConfig(llm, await setup.backend(), { approvals: { timeoutMs: 60_000 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await llm?.close();
    await setup.cleanup();
  });

  it('withdraws the approval and closes the parked turn: approving later is refused, nothing runs, the agent says nothing; handback works', async () => {
    const first = await chat('tp1', 'run: echo hi >> out.txt');
    const code = first.switchboard.approval.code as string;
    expect(code).toMatch(/^[A-Z0-9]{5}$/);
    const id = await conversationId('tp1');
    const turnId = first.switchboard.turn as string;
    expect((await gw.infra.store.turn(turnId))!.status).toBe('parked');
    const asked = llm.requests.length;

    // The operator takes the conversation over while the turn waits for its approval.
    const taken = await api('POST', `/v1/conversations/${id}/takeover`);
    expect(taken.status).toBe(201);
    const approval = await gw.infra.approvals.byCode(code);
    expect(approval).toMatchObject({ status: 'expired', decidedBy: 'takeover' });
    expect(await gw.infra.store.turn(turnId)).toMatchObject({ status: 'done', finishReason: 'aborted' });
    expect((await gw.infra.approvals.auditTrail(code)).map((e) => e.action)).toEqual(['approval.requested', 'approval.withdrawn']);

    // Approving it now is refused as expired: the tool does not run, the model is not asked again.
    const late = await api('POST', `/v1/approvals/${code}`, { decision: 'approve' });
    expect(late.status).toBe(410);
    expect(((await late.json()) as any).error.code).toBe('expired');
    expect(await gw.infra.approvals.byCode(code)).toMatchObject({ status: 'expired', decidedBy: 'takeover' });
    expect(existsSync(join(workspaceFor(gw.config.dataDir, id), 'out.txt'))).toBe(false);
    expect(llm.requests.length).toBe(asked);
    // The user's message stays in the transcript; no agent answer reached the user.
    const seen = await userMessages('tp1');
    expect(seen.map((m) => m.content)).toContain('run: echo hi >> out.txt');
    expect(seen.filter((m) => m.role === 'assistant')).toEqual([]);
    // While taken over, a message goes to the operator, not the agent.
    expect((await chat('tp1', 'hello?')).choices[0].message.content).toBe(NOTICE.taken);
    expect(llm.requests.length).toBe(asked);

    // Handed back: the next message gets a new turn, answered by the agent.
    expect((await api('POST', `/v1/conversations/${id}/handback`, { note: 'done by hand' })).status).toBe(200);
    expect((await chat('tp1', 'thanks')).choices[0].message.content).toBe('agent: thanks');
    expect(llm.requests.length).toBe(asked + 1);
    expect(existsSync(join(workspaceFor(gw.config.dataDir, id), 'out.txt'))).toBe(false);
    const turns = await gw.infra.store.turns(id);
    expect(turns.map((t) => [t.status, t.finishReason])).toEqual([
      ['done', 'aborted'],
      ['done', 'stop'],
    ]);
  });
});
