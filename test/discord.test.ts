/**
 * The Discord channel end to end: the real discord.js client and REST client
 * against a fake Discord (REST + gateway websocket) on localhost, a real
 * embedded gateway, and fake LLMs. Everything asserted is what a Discord user
 * would see: the messages in the fake.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryStore } from '../adapters/store/deliveries.js';
import { splitMessage } from '../channels/discord/split.js';
import type { TurnEvent } from '../kernel/turn-events.js';
import type { DeliverContext, TurnTarget } from '../src/channel/index.js';
import { checkSplit } from './fakes/discord-checks.js';
import { BOT_ID, type FakeMessage } from './fakes/discord-server.js';
import {
  ALICE,
  BOB,
  BOT_ROLE,
  DM,
  FENCED,
  FENCES,
  GENERAL,
  GUILD,
  LIMITED,
  LONG_500,
  OPEN,
  OPS_ROLE,
  OTHER_BOT,
  RESET,
  RESUME,
  RETRY,
  STREAM,
  startWorld,
  THREAD,
  type World,
} from './fakes/discord-world.js';
import { lastUserText } from './fakes/fake-llm.js';
import { eventually } from './support/gateway.js';

let w: World;

beforeAll(async () => {
  w = await startWorld();
});
afterAll(async () => {
  await w?.close();
});

const repliesTo = (channelId: string, messageId: string): FakeMessage[] =>
  w.fake.botMessages(channelId).filter((m) => m.message_reference?.message_id === messageId);
const modelCallsAbout = (text: string) =>
  [...w.primary.requests, ...w.backup.requests].filter(
    (r) => lastUserText(r.body).includes(text) && (r.body.messages as Array<{ role: string }>).at(-1)!.role === 'user',
  ).length;

describe('discord: who is answered, where', () => {
  it('a guild channel needs a mention; other bots are ignored; the answer replies to the message', async () => {
    const { fake } = w;
    const quiet = fake.userMessage({ channelId: GENERAL, author: ALICE, content: 'nobody asked the bot' });
    const fromBot = fake.userMessage({ channelId: GENERAL, author: OTHER_BOT, content: 'hello fellow bot', mentionBot: true });
    const asked = fake.userMessage({ channelId: GENERAL, author: ALICE, content: 'hello there', mentionBot: true });
    await w.answered(asked);
    const replies = fake.botMessages(GENERAL);
    expect(replies.map((m) => m.content)).toEqual(['echo: hello there']);
    expect(replies[0]!.message_reference?.message_id).toBe(asked);
    expect(await w.inboxRows(quiet)).toHaveLength(0);
    expect(await w.inboxRows(fromBot)).toHaveLength(0);
    expect(await w.conversationKey(asked)).toBe(`discord/${GUILD}/${GENERAL}/-`);
    // The typing indicator ran while the agent thought.
    expect(fake.requestsMatching('POST', new RegExp(`^/channels/${GENERAL}/typing$`)).length).toBeGreaterThan(0);
    // A channel configured without the mention rule answers plain messages.
    const plain = fake.userMessage({ channelId: OPEN, author: BOB, content: 'no mention needed here' });
    await w.answered(plain);
    expect(repliesTo(OPEN, plain).map((m) => m.content)).toEqual(['echo: no mention needed here']);
  });

  it("a mention of the bot's managed role counts as a mention (what autocomplete inserts); another role's does not", async () => {
    const { fake } = w;
    const viaRole = fake.userMessage({ channelId: GENERAL, author: BOB, content: `<@&${BOT_ROLE}> what about roles` });
    const otherRole = fake.userMessage({ channelId: GENERAL, author: BOB, content: `<@&${OPS_ROLE}> ops, anyone?` });
    await w.answered(viaRole);
    expect(repliesTo(GENERAL, viaRole).map((m) => m.content)).toEqual(['echo: what about roles']);
    expect((await w.inboxRows(viaRole))[0]!.text).toBe('what about roles');
    await new Promise((r) => setTimeout(r, 300));
    expect(await w.inboxRows(otherRole)).toHaveLength(0);
    expect(repliesTo(GENERAL, otherRole)).toEqual([]);
  });

  it('a DM needs no mention; attachments arrive as metadata', async () => {
    const id = w.fake.userMessage({
      channelId: DM,
      author: BOB,
      content: 'see the file',
      attachments: [{ filename: 'report.pdf', size: 1234, content_type: 'application/pdf' }],
    });
    await w.answered(id);
    const [row] = await w.inboxRows(id);
    expect(row!.attachments).toEqual([{ name: 'report.pdf', contentType: 'application/pdf', size: 1234, url: 'https://cdn.example/report.pdf' }]);
    expect(await w.conversationKey(id)).toBe(`discord/@dm/${DM}/-`);
    const replies = repliesTo(DM, id);
    expect(replies).toHaveLength(1);
    expect(replies[0]!.content).toContain('echo: see the file');
    expect(replies[0]!.content).toContain('report.pdf');
  });

  it('a thread is its own conversation, answered in the thread', async () => {
    const inChannel = w.fake.userMessage({ channelId: GENERAL, author: ALICE, content: 'channel talk', mentionBot: true });
    const inThread = w.fake.userMessage({ channelId: THREAD, author: ALICE, content: 'thread talk', mentionBot: true });
    await w.answered(inChannel);
    await w.answered(inThread);
    expect(await w.conversationKey(inThread)).toBe(`discord/${GUILD}/${GENERAL}/${THREAD}`);
    expect(await w.conversationKey(inThread)).not.toBe(await w.conversationKey(inChannel));
    expect(repliesTo(THREAD, inThread).map((m) => m.content)).toEqual(['echo: thread talk']);
  });
});

describe('discord: streaming delivery', () => {
  it('a 500-token reply is posted, then edited at most about once a second per message', async () => {
    const { fake } = w;
    const started = Date.now();
    const id = fake.userMessage({ channelId: STREAM, author: ALICE, content: 'long500 please' });
    await w.answered(id, 30_000);
    const seconds = (Date.now() - started) / 1000;
    const msgs = fake.botMessages(STREAM);
    expect(msgs.map((m) => m.content)).toEqual(splitMessage(LONG_500));
    expect(msgs.map((m) => m.content).join('')).toBe(LONG_500);
    expect(msgs[0]!.message_reference?.message_id).toBe(id);
    // It streamed: the first message was shown growing.
    expect(msgs[0]!.history.length).toBeGreaterThanOrEqual(3);
    const patches = fake.requestsMatching('PATCH', new RegExp(`^/channels/${STREAM}/messages/`));
    expect(patches.length).toBeGreaterThanOrEqual(2);
    expect(patches.length).toBeLessThanOrEqual(msgs.length * (Math.ceil(seconds) + 1));
    // Never two edits of one message within the interval.
    for (const m of msgs) {
      const times = patches.filter((p) => p.path.endsWith(`/${m.id}`)).map((p) => p.at);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(950);
    }
  });

  it('a 5,000-character reply with code fences arrives split, every fence balanced', async () => {
    const id = w.fake.userMessage({ channelId: FENCES, author: ALICE, content: 'fences please' });
    await w.answered(id);
    expect(FENCED.length).toBeGreaterThan(4_500);
    const parts = w.fake.botMessages(FENCES).map((m) => m.content);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    checkSplit(parts, FENCED);
    expect(parts.some((p) => p.startsWith('```typescript\n'))).toBe(true);
    expect(repliesTo(FENCES, id)).toHaveLength(1); // only the first part replies; the rest continue
  });

  it('429s are waited out: nothing lost, nothing out of order', async () => {
    const { fake } = w;
    const before = fake.rateLimited;
    fake.rateLimit(2, { method: 'POST', path: new RegExp(`^/channels/${LIMITED}/messages$`), retryAfter: 0.5 });
    fake.rateLimit(3, { method: 'PATCH', path: new RegExp(`^/channels/${LIMITED}/messages/`), retryAfter: 0.7 });
    fake.rateLimit(1, { method: 'PATCH', path: new RegExp(`^/channels/${LIMITED}/messages/`), retryAfter: 0.4, global: true });
    const id = fake.userMessage({ channelId: LIMITED, author: ALICE, content: 'long500quick under pressure' });
    await w.answered(id, 40_000);
    expect(fake.rateLimited - before).toBe(6);
    const msgs = fake.botMessages(LIMITED);
    expect(msgs.map((m) => m.content)).toEqual(splitMessage(LONG_500));
    expect(msgs[0]!.message_reference?.message_id).toBe(id);
    // Posted in order (snowflakes grow), each once.
    expect([...msgs].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1)).map((m) => m.id)).toEqual(msgs.map((m) => m.id));
  });

  it("a provider failing mid-answer: the same message is edited to the fallback's answer", async () => {
    w.primary.enqueue([
      { kind: 'text', text: 'half0 half1 half2 half3 half4 half5 half6 ', tokenDelayMs: 120 },
      { kind: 'disconnect', afterTokens: 0, text: '' },
    ]);
    const id = w.fake.userMessage({ channelId: RESET, author: ALICE, content: 'tell me something' });
    await w.answered(id);
    const msgs = w.fake.botMessages(RESET);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]!.content).toBe('echo: tell me something');
    expect(msgs[0]!.history.some((h) => h.includes('half0'))).toBe(true);
    await w.gw.infra.cooldowns.clear('primary');
  });
});

describe('discord: a retried turn', () => {
  const ctx = (): DeliverContext => ({ deliveries: w.gw.infra.deliveries, state: w.gw.infra.channelState, log: w.gw.log });
  const target = (turnId: string, attempt: number, messageId: string, channelId = RETRY): TurnTarget => ({
    turnId,
    attempt,
    conversation: { id: 'c-retry', key: 'discord/x/y/-', channel: 'discord', agent: 'default' },
    replyTo: { channelId, messageId, guildId: GUILD },
  });
  const deliverer = () => w.gw.channels.find((c) => c.name === 'discord')!.deliverer!;
  const delta = (turnId: string, text: string): TurnEvent => ({ type: 'text_delta', turnId, delta: text });

  it('edits the message the crashed attempt posted instead of posting again', async () => {
    const asked = w.fake.userMessage({ channelId: RETRY, author: ALICE, content: 'not for the listener' });
    const first = deliverer().open(target('t_retry_1', 1, asked), ctx());
    first.event(delta('t_retry_1', 'the first attempt started to'));
    await eventually(async () => w.fake.botMessages(RETRY).length === 1);
    // The worker dies here: the first attempt is never closed. The second runs the turn again.
    const second = deliverer().open(target('t_retry_1', 2, asked), ctx());
    second.event(delta('t_retry_1', 'the second attempt answers in full'));
    await second.close();
    const msgs = w.fake.botMessages(RETRY);
    expect(msgs.map((m) => m.content)).toEqual(['the second attempt answers in full']);
    expect(msgs[0]!.history[0]).toBe('the first attempt started to');
    expect(msgs[0]!.message_reference?.message_id).toBe(asked);
  });

  it("without the delivery record, Discord's nonce still keeps it to one message", async () => {
    const asked = w.fake.userMessage({ channelId: RETRY, author: ALICE, content: 'not for the listener either' });
    const forgetful: DeliverContext = {
      ...ctx(),
      deliveries: {
        get: async () => undefined,
        forTurn: async () => [],
        record: async () => {
          throw new Error('database away');
        },
      } as unknown as DeliveryStore,
    };
    const before = w.fake.botMessages(RETRY).length;
    const first = deliverer().open(target('t_retry_2', 1, asked), forgetful);
    first.event(delta('t_retry_2', 'partial'));
    await eventually(async () => w.fake.botMessages(RETRY).length === before + 1);
    const second = deliverer().open(target('t_retry_2', 2, asked), forgetful);
    second.event(delta('t_retry_2', 'complete answer'));
    await second.close();
    expect(
      w.fake
        .botMessages(RETRY)
        .slice(before)
        .map((m) => m.content),
    ).toEqual(['complete answer']);
  });

  it('a channel Discord refuses (unknown, no access) does not wedge the turn: close() says so at once, not retryable (a dead letter)', async () => {
    const d = deliverer().open(target('t_retry_3', 1, '1', '799999999999999999'), ctx());
    d.event(delta('t_retry_3', 'into the void'));
    await expect(d.close()).rejects.toMatchObject({ code: 'channel_delivery_refused', retryable: false, platformCode: '10003' });
  });
});

describe('discord: gateway', () => {
  it('a dropped connection resumes the session; nothing is lost or answered twice', async () => {
    const { fake } = w;
    const before = fake.userMessage({ channelId: RESUME, author: ALICE, content: 'before the drop' });
    await w.answered(before);
    const identifies = fake.identifies;
    // Discord may replay what the client had already seen: the inbox dedups it.
    fake.replayOverlap = 1;
    fake.drop(4000);
    const during = fake.userMessage({ channelId: RESUME, author: ALICE, content: 'sent while down' });
    await eventually(async () => fake.resumes === 1 && fake.connected, 15_000);
    const after = fake.userMessage({ channelId: RESUME, author: BOB, content: 'after the resume' });
    await w.answered(during);
    await w.answered(after);
    expect(fake.identifies).toBe(identifies); // resumed, not a new session
    await new Promise((r) => setTimeout(r, 500));
    for (const [id, text] of [
      [before, 'before the drop'],
      [during, 'sent while down'],
      [after, 'after the resume'],
    ] as const) {
      expect(repliesTo(RESUME, id).map((m) => m.content)).toEqual([`echo: ${text}`]);
      expect(modelCallsAbout(text)).toBe(1);
    }
    expect(w.fake.botMessages(RESUME).every((m) => m.author.id === BOT_ID)).toBe(true);
    await eventually(async () => w.gw.channels.find((c) => c.name === 'discord')!.listener!.health().ok);
  });
});
