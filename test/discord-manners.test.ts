/**
 * Group-chat manners on Discord, end to end: recorded-shape MESSAGE_CREATE payloads from the fake
 * Discord through the real discord.js client and a real embedded gateway. What is asserted is what
 * a guild sees (replies, typing) and what the model was asked: a message not addressed to the bot
 * gets no inbox row, no typing indicator and no model request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUser } from './fakes/discord-server.js';
import {
  ALICE,
  agentLike,
  BOB,
  BOT_ROLE,
  FENCES,
  GENERAL,
  LIMITED,
  OPEN,
  OPS_ROLE,
  OTHER_BOT,
  RETRY,
  STREAM,
  startWorld,
  type World,
} from './fakes/discord-world.js';
import { type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { eventually } from './support/gateway.js';

const FRIEND_BOT: FakeUser = { id: '600000000000000078', username: 'friendbot', bot: true };
let w: World;

/** The cheap classifier slot ("backup"): YES for a question, NO otherwise; every other request is the agent's. */
function backupModel(req: FakeRequest) {
  const system = JSON.stringify(req.body.messages?.[0] ?? '');
  const asked = /^Message:\n([\s\S]*)\n\nYES or NO\?$/.exec(lastUserText(req.body))?.[1];
  if (system.includes('You watch a group chat')) return reply(asked?.includes('?') ? 'YES' : 'NO');
  return agentLike(req);
}

beforeAll(async () => {
  w = await startWorld({
    // Only OPEN answers every message; every other channel needs the bot addressed.
    channels: { [OPEN]: { requireMention: false } },
    groups: { allowBots: [FRIEND_BOT.id], botLoopPerMinute: 2, ambientPerHour: 2, classifierSlot: 'backup' },
  });
  w.backup.respond(backupModel);
}, 240_000);
afterAll(async () => {
  await w?.close();
});

const repliesTo = (channelId: string, messageId: string) => w.fake.botMessages(channelId).filter((m) => m.message_reference?.message_id === messageId);
const modelCallsAbout = (text: string) => [...w.primary.requests, ...w.backup.requests].filter((r) => lastUserText(r.body).includes(text)).length;
const typingIn = (channelId: string) => w.fake.requestsMatching('POST', new RegExp(`^/channels/${channelId}/typing$`)).length;

async function ignored(reason: string): Promise<number> {
  const text = await (await fetch(`${w.gw.url}/metrics`)).text();
  const m = new RegExp(`switchboard_room_messages_ignored_total\\{channel="discord",reason="${reason}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : 0;
}

/** Posts a message that must be left alone, waits until the gateway decided so, and checks nothing happened. */
async function silent(reason: string, post: () => string, text: string, channelId: string): Promise<void> {
  const before = await ignored(reason);
  const typing = typingIn(channelId);
  const id = post();
  await eventually(async () => (await ignored(reason)) > before, 20_000);
  expect(await w.inboxRows(id)).toHaveLength(0);
  expect(repliesTo(channelId, id)).toEqual([]);
  expect(typingIn(channelId)).toBe(typing);
  expect(modelCallsAbout(text)).toBe(0);
}

describe('discord manners: addressed or not', () => {
  it('a mention, the managed role, a reply to the bot (not pinged) and the name at a line start are answered', async () => {
    const { fake } = w;
    const asked = fake.userMessage({ channelId: GENERAL, author: ALICE, content: 'first question', mentionBot: true });
    await w.answered(asked);
    const botReply = repliesTo(GENERAL, asked)[0]!;
    const viaRole = fake.userMessage({ channelId: GENERAL, author: BOB, content: `<@&${BOT_ROLE}> role question` });
    const viaReply = fake.userMessage({
      channelId: GENERAL,
      author: BOB,
      content: 'follow-up without a ping',
      replyTo: { messageId: botReply.id, ping: false },
    });
    const viaName = fake.userMessage({ channelId: GENERAL, author: ALICE, content: 'thanks all.\nSwitchboard, name question' });
    for (const id of [viaRole, viaReply, viaName]) await w.answered(id);
    expect(repliesTo(GENERAL, viaRole).map((m) => m.content)).toEqual(['echo: role question']);
    expect(repliesTo(GENERAL, viaReply).map((m) => m.content)).toEqual(['echo: follow-up without a ping']);
    expect(repliesTo(GENERAL, viaName)[0]!.content).toContain('name question');
  });

  it('someone else mentioned, a reply to someone else, another role: silence, no typing, no model call', async () => {
    const { fake } = w;
    await silent(
      'someone_else',
      () => fake.userMessage({ channelId: RETRY, author: ALICE, content: 'can you check the deploy', mentions: [BOB] }),
      'can you check the deploy',
      RETRY,
    );
    const declined = await ignored('ambient_declined');
    const bobs = fake.userMessage({ channelId: RETRY, author: BOB, content: 'I wrote the deploy script' });
    await eventually(async () => (await ignored('ambient_declined')) > declined, 20_000);
    await silent(
      'someone_else',
      () => fake.userMessage({ channelId: RETRY, author: ALICE, content: 'nice one bob', replyTo: { messageId: bobs } }),
      'nice one bob',
      RETRY,
    );
    await silent(
      'someone_else',
      () => fake.userMessage({ channelId: RETRY, author: ALICE, content: `<@&${OPS_ROLE}> ops please look` }),
      'ops please look',
      RETRY,
    );
    // Even where every message is answered (requireMention: false), a message to someone else is not.
    await silent(
      'someone_else',
      () => fake.userMessage({ channelId: OPEN, author: ALICE, content: 'bob, lunch today', mentions: [BOB] }),
      'bob, lunch today',
      OPEN,
    );
  });

  it('another bot: silence unless allowed; an allowed bot is answered at most botLoopPerMinute times a minute', async () => {
    const { fake } = w;
    await silent(
      'bot',
      () => fake.userMessage({ channelId: FENCES, author: OTHER_BOT, content: 'beep from a stranger', mentionBot: true }),
      'beep from a stranger',
      FENCES,
    );
    const first = fake.userMessage({ channelId: FENCES, author: FRIEND_BOT, content: 'friend ping one', mentionBot: true });
    await w.answered(first);
    const second = fake.userMessage({ channelId: FENCES, author: FRIEND_BOT, content: 'friend ping two', mentionBot: true });
    await w.answered(second);
    expect(repliesTo(FENCES, first).map((m) => m.content)).toEqual(['echo: friend ping one']);
    const before = await ignored('bot_loop');
    const third = fake.userMessage({ channelId: FENCES, author: FRIEND_BOT, content: 'friend ping three', mentionBot: true });
    await eventually(async () => (await ignored('bot_loop')) > before, 20_000);
    expect(await w.inboxRows(third)).toHaveLength(0);
    expect(modelCallsAbout('friend ping three')).toBe(0);
    // A person is still answered in that room.
    const human = fake.userMessage({ channelId: FENCES, author: ALICE, content: 'human after the bots', mentionBot: true });
    await w.answered(human);
  });
});

describe('discord manners: ambient mode', () => {
  it('the classifier picks what to chime in on, never twice in a row, within the budget per hour', async () => {
    const { fake } = w;
    const post = (content: string) => fake.userMessage({ channelId: STREAM, author: BOB, content });
    // The classifier says NO: silence (it was asked, nothing else).
    const before = await ignored('ambient_declined');
    const chatter = post('good morning everyone');
    await eventually(async () => (await ignored('ambient_declined')) > before, 20_000);
    expect(await w.inboxRows(chatter)).toHaveLength(0);
    expect(w.primary.requests.filter((r) => lastUserText(r.body).includes('good morning everyone'))).toHaveLength(0);

    const q1 = post('how do I rotate the api key?');
    await w.answered(q1);
    expect(repliesTo(STREAM, q1)).toHaveLength(1);
    // Right after an unprompted reply: no second one, and the classifier is not asked.
    await silent('ambient_in_a_row', () => post('and where is the config file?'), 'and where is the config file?', STREAM);
    // Addressed once: the next unprompted reply may come.
    await w.answered(fake.userMessage({ channelId: STREAM, author: ALICE, content: 'thanks bot', mentionBot: true }));
    const q2 = post('does it work on windows?');
    await w.answered(q2);
    expect(repliesTo(STREAM, q2)).toHaveLength(1);
    await w.answered(fake.userMessage({ channelId: STREAM, author: ALICE, content: 'thanks again', mentionBot: true }));
    // Two this hour (ambientPerHour: 2): the budget is spent.
    await silent('ambient_budget', () => post('what about linux?'), 'what about linux?', STREAM);
  });

  it('ambient never answers another bot, even an allowed one that does not address it', async () => {
    await silent(
      'not_addressed',
      () => w.fake.userMessage({ channelId: LIMITED, author: FRIEND_BOT, content: 'is anyone there?' }),
      'is anyone there?',
      LIMITED,
    );
  });
});
