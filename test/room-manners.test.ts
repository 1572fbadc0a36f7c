/**
 * RoomManners over shared state: the bot-to-bot loop guard, the ambient budget, never two
 * unprompted replies in a row, and two ingresses (two RoomManners over one store and one lock
 * service) agreeing on a budget of one.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryLocks } from '../adapters/lock/memory.js';
import type { ChannelStateRepository } from '../adapters/store/ports/channel-state.js';
import { type AddressFacts, groupsSchema } from '../src/channel/addressed.js';
import { RoomManners, roomKey } from '../src/ingress/room-manners.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT_TOKEN } from './fakes/slack-api.js';
import { startGateway, testConfig } from './support/gateway.js';
import { MemoryChannelState } from './support/memory-repos/channel-repos.js';
import { Tables } from './support/memory-repos/tables.js';

const log = pino({ level: 'silent' });
const policy = (p: Record<string, unknown> = {}) => groupsSchema({ respondIn: 'threads' }).parse(p);
const room: AddressFacts = { isDirect: false, mentionsBot: false };

/** A store slow enough that two deciders overlap between read and write. */
function slowState(): ChannelStateRepository {
  const s = new MemoryChannelState(new Tables());
  const pause = () => new Promise((r) => setTimeout(r, 5));
  return {
    get: async (c, k) => (await pause(), s.get(c, k)),
    set: async (c, k, v) => (await pause(), s.set(c, k, v)),
    delete: (c, k) => s.delete(c, k),
  };
}

function manners(over: { state?: ChannelStateRepository; locks?: MemoryLocks; chime?: boolean; now?: () => number } = {}) {
  const ignored: string[] = [];
  const asked: string[] = [];
  const m = new RoomManners({
    state: over.state ?? new MemoryChannelState(new Tables()),
    locks: over.locks ?? new MemoryLocks(),
    chimeIn: async (_slot, text) => (asked.push(text), over.chime ?? true),
    ignored: (_c, why) => ignored.push(why),
    log,
    ...(over.now ? { now: over.now } : {}),
  });
  return { m, ignored, asked };
}

describe('RoomManners', () => {
  it('the loop guard: an allowed bot is answered at most botLoopPerMinute times a minute per room', async () => {
    let now = 1_000_000;
    const { m, ignored } = manners({ now: () => now });
    const p = policy({ allowBots: ['B1'], botLoopPerMinute: 2 });
    const q = (r: string) => ({ room: r, facts: { ...room, mentionsBot: true, fromBot: { ids: ['B1'] } }, policy: p, text: 'ping' });
    expect((await m.decide('slack', q('C1'))).answer).toBe(true);
    expect((await m.decide('slack', q('C1'))).answer).toBe(true);
    expect(await m.decide('slack', q('C1'))).toEqual({ answer: false, why: 'bot_loop' });
    // Another room has its own count; a minute later the room may go on.
    expect((await m.decide('slack', q('C2'))).answer).toBe(true);
    now += 61_000;
    expect((await m.decide('slack', q('C1'))).answer).toBe(true);
    // An unlisted bot never gets that far.
    expect(await m.decide('slack', { ...q('C1'), facts: { ...room, mentionsBot: true, fromBot: { ids: ['B9'] } } })).toEqual({ answer: false, why: 'bot' });
    expect(ignored).toEqual(['bot_loop', 'bot']);
    // The same message asked again (a retry, Slack's app_mention + message pair) counts once.
    now += 61_000;
    const once = { ...q('C3'), messageId: 'M1' };
    for (let i = 0; i < 4; i++) expect((await m.decide('slack', once)).answer).toBe(true);
    expect((await m.decide('slack', q('C3'))).answer).toBe(true);
    expect((await m.decide('slack', q('C3'))).answer).toBe(false);
  });

  it('ambient: the classifier decides, within the hourly budget, never twice in a row', async () => {
    let now = 5_000_000;
    const { m, asked } = manners({ now: () => now });
    const p = policy({ ambientPerHour: 2, classifierSlot: 'cheap' });
    const chatter = (text: string) => ({ room: 'C1', facts: room, policy: p, text });
    const addressed = { room: 'C1', facts: { ...room, mentionsBot: true }, policy: p, text: 'hi bot' };
    expect(await m.decide('discord', chatter('how do I reset the router?'))).toEqual({ answer: true, why: 'ambient' });
    // The bot's last reply was unprompted: no second one, and the classifier is not even asked.
    expect(await m.decide('discord', chatter('and the modem?'))).toEqual({ answer: false, why: 'ambient_in_a_row' });
    expect(asked).toEqual(['how do I reset the router?']);
    expect((await m.decide('discord', addressed)).answer).toBe(true);
    expect((await m.decide('discord', chatter('what about wifi?'))).answer).toBe(true);
    await m.decide('discord', addressed);
    // Two this hour: the budget is spent.
    expect(await m.decide('discord', chatter('and dns?'))).toEqual({ answer: false, why: 'ambient_budget' });
    now += 3_601_000;
    expect((await m.decide('discord', chatter('an hour later'))).answer).toBe(true);
  });

  it('ambient: a NO from the classifier is silence; someone else mentioned, a bot or ambient off never ask it', async () => {
    const { m, asked } = manners({ chime: false });
    const p = policy({ ambientPerHour: 5, classifierSlot: 'cheap' });
    expect(await m.decide('slack', { room: 'C1', facts: room, policy: p, text: 'lunch?' })).toEqual({ answer: false, why: 'ambient_declined' });
    expect(await m.decide('slack', { room: 'C1', facts: { ...room, mentionsOthers: true }, policy: p, text: '@bob lunch?' })).toEqual({
      answer: false,
      why: 'someone_else',
    });
    expect(await m.decide('slack', { room: 'C1', facts: { ...room, fromBot: { ids: ['B1'] } }, policy: p, text: 'beep' })).toEqual({
      answer: false,
      why: 'bot',
    });
    // An allowed bot that does not address the bot is not chimed in on either.
    expect(await m.decide('slack', { room: 'C1', facts: { ...room, fromBot: { ids: ['B1'] } }, policy: { ...p, allowBots: ['B1'] }, text: 'beep?' })).toEqual({
      answer: false,
      why: 'not_addressed',
    });
    expect(await m.decide('slack', { room: 'C1', facts: room, policy: policy(), text: 'no ambient' })).toEqual({ answer: false, why: 'not_addressed' });
    expect(asked).toEqual(['lunch?']);
  });

  it('two ingresses on one store agree: a budget of one is spent once however they race', async () => {
    const state = slowState();
    const locks = new MemoryLocks();
    const a = manners({ state, locks });
    const b = manners({ state, locks });
    const p = policy({ ambientPerHour: 1, classifierSlot: 'cheap' });
    const q = (i: number) => ({ room: 'G1', facts: room, policy: p, text: `question ${i}?` });
    const out = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? a.m : b.m).decide('discord', q(i))));
    expect(out.filter((d) => d.answer)).toHaveLength(1);
  });

  it('room keys: hostile or long room ids are hashed, never used raw', () => {
    expect(roomKey('T1:C1')).toBe('room:T1:C1');
    expect(roomKey('<a@b>\n"; drop')).toMatch(/^room#[0-9a-f]{32}$/);
    expect(roomKey('x'.repeat(5_000))).toMatch(/^room#[0-9a-f]{32}$/);
  });
});

describe('groups.classifierSlot at start', () => {
  it('refuses a classifier slot that names no provider slot, naming the key', async () => {
    const fake = new FakeLlm();
    await fake.start();
    process.env.SB_TEST_MANNERS_BOT = BOT_TOKEN;
    process.env.SB_TEST_MANNERS_APP = APP_TOKEN;
    try {
      const slack = { botTokenEnv: 'SB_TEST_MANNERS_BOT', appTokenEnv: 'SB_TEST_MANNERS_APP', groups: { ambientPerHour: 2, classifierSlot: 'no-such-slot' } };
      const err = await startGateway(testConfig(fake, {}, { channels: { slack } })).catch((e: unknown) => e);
      expect((err as Error).name).toBe('ConfigError');
      expect((err as Error).message).toMatch(/"channels\.slack\.groups\.classifierSlot": no provider slot "no-such-slot"/);
    } finally {
      await fake.close();
    }
  });
});
