/** What happens to messages that arrive while a turn runs: followup, collect, steer, interrupt, and the cap. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { ConversationCommands } from '../src/commands.js';
import { Ingress, type IngressOutcome } from '../src/ingress.js';
import { FakeLlm, type FakeRequest, type FakeScript, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { eventually, startGateway, testConfig } from './support/gateway.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('queue modes', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let ingress: Ingress;
  let script: (req: FakeRequest) => FakeScript = (req) => reply(`re: ${lastUserText(req.body)}`, 20);
  let n = 0;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => script(req));
    gw = await startGateway(testConfig(fake, {}, { conversations: { collectQuietMs: 400, maxWaiting: 3 }, tools: { planner: false } }));
    ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log, {
      commands: new ConversationCommands(gw.infra.store, gw.infra.bus, gw.provider),
      conversations: { config: gw.config, bus: gw.infra.bus },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  const send = (conv: string, text: string): Promise<IngressOutcome> =>
    ingress.receive({
      channel: 'test',
      externalId: `m${++n}`,
      conversationKey: `test/-/${conv}/-`,
      sender: { id: 'u' },
      text,
      attachments: [],
      receivedAt: new Date(),
    });
  const turnsOf = async (conv: string) => {
    const c = await gw.infra.store.conversationByKey(`test/-/${conv}/-`);
    return c ? gw.infra.store.turns(c.id) : [];
  };
  const userTexts = (req: FakeRequest) =>
    (req.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === 'user').map((m) => String(m.content));

  it('followup (default): each message gets its own turn, in order', async () => {
    await send('fu', 'one');
    await sleep(50);
    await send('fu', 'two');
    await send('fu', 'three');
    const turns = await eventually(async () => {
      const t = await turnsOf('fu');
      return t.length === 3 && t.every((x) => x.status === 'done') ? t : null;
    });
    expect(turns.map((t) => t.seq)).toEqual([1, 2, 3]);
  });

  it('collect: a burst is answered together after a pause', async () => {
    expect((await send('co', 'hello')).kind).toBe('accepted');
    await eventually(async () => (await turnsOf('co')).every((t) => t.status === 'done') && (await turnsOf('co')).length === 1);
    expect(await send('co', '/mode collect')).toMatchObject({ kind: 'answered', reply: expect.stringMatching(/answered together/) });
    const before = fake.requests.length;
    await send('co', 'first part');
    await sleep(100);
    await send('co', 'second part');
    await sleep(100);
    await send('co', 'third part');
    await eventually(async () => (await turnsOf('co')).length === 2 && (await turnsOf('co')).every((t) => t.status === 'done'));
    const sent = fake.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(userTexts(sent[0]!).slice(-3)).toEqual(['first part', 'second part', 'third part']);
  });

  it('interrupt: a new message aborts the running turn; the next answers what is waiting', async () => {
    await send('in', 'warm up');
    await eventually(async () => (await turnsOf('in'))[0]?.status === 'done');
    await send('in', '/mode interrupt');
    script = (req) =>
      lastUserText(req.body).includes('long') ? reply(Array.from({ length: 300 }, (_, i) => `w${i}`).join(' '), 20) : reply(`re: ${lastUserText(req.body)}`);
    await send('in', 'tell me something long');
    await eventually(async () => (await turnsOf('in')).some((t) => t.status === 'running'));
    await sleep(200);
    await send('in', 'actually, just say hi');
    const turns = await eventually(async () => {
      const t = await turnsOf('in');
      return t.length === 3 && t.every((x) => x.status === 'done') ? t : null;
    }, 20_000);
    expect(turns[1]!.finishReason).toBe('aborted');
    expect(turns[2]!.finishReason).toBe('stop');
    expect(await gw.infra.store.turnReply(turns[2]!.id)).toBe('re: actually, just say hi');
    script = (req) => reply(`re: ${lastUserText(req.body)}`, 20);
  });

  it('steer: a message sent during a tool call joins the running turn; unstarted calls are skipped', async () => {
    await send('st', 'warm up');
    await eventually(async () => (await turnsOf('st'))[0]?.status === 'done');
    await send('st', '/mode steer');
    let calls = 0;
    script = (req) => {
      const last = (req.body.messages as Array<{ role: string }>).at(-1)!;
      // Two calls: the second has not started when the new message arrives.
      if (last.role === 'user' && lastUserText(req.body) === 'start the job')
        return [...toolCall('shell_exec', { command: 'sleep 1' }), ...toolCall('shell_exec', { command: 'echo second' })];
      calls++;
      return reply(`final answer after: ${lastUserText(req.body)}`);
    };
    const before = fake.requests.length;
    await send('st', 'start the job');
    await sleep(400); // the first sleep is running
    await send('st', 'also mention the weather');
    const turns = await eventually(async () => {
      const t = await turnsOf('st');
      return t.length === 2 && t.every((x) => x.status === 'done') ? t : null;
    }, 20_000);
    const sent = fake.requests.slice(before);
    const last = sent[sent.length - 1]!;
    expect(userTexts(last)).toContain('also mention the weather');
    const toolResults = (last.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(toolResults.some((t) => /exit code 0/.test(t))).toBe(true); // the running call finished
    expect(toolResults.some((t) => /Skipped: the user sent a new message/.test(t))).toBe(true); // the next one did not start
    expect(calls).toBe(1);
    expect(await gw.infra.store.turnReply(turns[1]!.id)).toMatch(/final answer after: also mention the weather/);
    const inbox = (
      await gw.infra.store.db.query<{ text: string; turn_id: string }>('select text, turn_id from inbox where text in ($1, $2)', [
        'start the job',
        'also mention the weather',
      ])
    ).rows;
    expect(new Set(inbox.map((r) => r.turn_id)).size).toBe(1); // one turn answered both
    script = (req) => reply(`re: ${lastUserText(req.body)}`, 20);
  });

  it('caps the messages waiting in a conversation and tells the sender', async () => {
    script = (req) => reply(Array.from({ length: 100 }, (_, i) => `w${i}`).join(' '), 20);
    await send('cap', 'busy now');
    await eventually(async () => (await turnsOf('cap')).some((t) => t.status === 'running'));
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(await send('cap', `queued ${i}`));
    expect(outcomes.slice(0, 3).every((o) => o.kind === 'accepted')).toBe(true);
    expect(outcomes[3]).toMatchObject({ kind: 'refused', reply: expect.stringMatching(/Too many messages .* dropped/) });
    script = (req) => reply(`re: ${lastUserText(req.body)}`, 20);
  });
});
