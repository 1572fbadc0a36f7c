/**
 * The Telegram channel end to end: the real grammY client against a fake Bot API speaking the
 * real HTTP protocol, a real embedded gateway and a fake LLM. What is asserted is what a Telegram
 * user sees: the messages in the fake, their edits, the alerts on button taps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LONG_500 } from './fakes/discord-world.js';
import { lastUserText } from './fakes/fake-llm.js';
import { BOT, type SentMessage } from './fakes/telegram-server.js';
import {
  ALICE,
  BOB,
  DM_ALICE,
  DM_BOB,
  DM_OPERATOR,
  FORUM,
  GROUP,
  OPEN_GROUP,
  OPERATOR,
  OTHER_BOT,
  startTelegramWorld,
  type TelegramWorld,
} from './fakes/telegram-world.js';
import { eventually } from './support/gateway.js';

let w: TelegramWorld;

beforeAll(async () => {
  w = await startTelegramWorld({ catchUp: { maxAgeMinutes: 60, maxMessages: 2 } });
}, 240_000);
afterAll(async () => {
  await w?.close();
});

const repliesTo = (chatId: number, messageId: number): SentMessage[] => w.fake.botMessages(chatId).filter((m) => m.replyToMessageId === messageId);
const modelCallsAbout = (text: string) => w.llm.requests.filter((r) => lastUserText(r.body).includes(text)).length;

describe('telegram: private chats and streaming', () => {
  it('a private message is answered by a reply that streams in by edits, at most one write per second per chat', async () => {
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'long500 please' });
    await w.answered(updateId, 40_000);
    const [reply] = repliesTo(DM_ALICE.id, messageId);
    expect(reply).toBeDefined();
    expect(reply!.text).toBe(LONG_500);
    expect(reply!.parseMode).toBe('HTML');
    // It streamed: the message was shown growing.
    expect(reply!.history.length).toBeGreaterThanOrEqual(3);
    const writes = w.fake.calls
      .filter((c) => ['sendMessage', 'editMessageText'].includes(c.method) && String(c.body.chat_id) === String(DM_ALICE.id))
      .map((c) => c.at);
    for (let i = 1; i < writes.length; i++) expect(writes[i]! - writes[i - 1]!).toBeGreaterThanOrEqual(950);
    expect(await w.conversationKey(updateId)).toBe(`telegram/-/${DM_ALICE.id}/-`);
    // "typing…" while the agent thought.
    expect(w.fake.callsOf('sendChatAction').some((c) => String(c.body.chat_id) === String(DM_ALICE.id) && c.body.action === 'typing')).toBe(true);
  }, 60_000);
});

describe('telegram: groups and forum topics', () => {
  it('a group answers only when addressed: an @mention, a text mention, a reply to the bot, or its command', async () => {
    const { fake } = w;
    const quiet = fake.userMessage({ chat: GROUP, from: ALICE, text: 'nobody asked the bot' });
    const fromBot = fake.userMessage({ chat: GROUP, from: OTHER_BOT, text: `@${BOT.username} hello fellow bot` });
    const otherCommand = fake.userMessage({ chat: GROUP, from: ALICE, text: '/status@other_bot' });
    const otherMention = fake.userMessage({ chat: GROUP, from: ALICE, text: '@somebody_else what do you think' });
    const asked = fake.userMessage({ chat: GROUP, from: ALICE, text: `@${BOT.username} hello there` });
    await w.answered(asked.updateId);
    const [answer] = repliesTo(GROUP.id, asked.messageId);
    expect(answer!.text).toBe('echo: hello there');
    for (const u of [quiet, fromBot, otherCommand, otherMention]) expect(await w.inboxRows(u.updateId)).toHaveLength(0);
    expect(repliesTo(GROUP.id, otherCommand.messageId)).toEqual([]);

    const viaReply = fake.userMessage({ chat: GROUP, from: BOB, text: 'and one more thing', replyTo: answer! });
    await w.answered(viaReply.updateId);
    expect(repliesTo(GROUP.id, viaReply.messageId).map((m) => m.text)).toEqual(['echo: and one more thing']);

    const viaTextMention = fake.userMessage({ chat: GROUP, from: BOB, text: 'Switchboard, what now', textMention: 'Switchboard' });
    await w.answered(viaTextMention.updateId);
    expect(repliesTo(GROUP.id, viaTextMention.messageId).map((m) => m.text)).toEqual(['echo: Switchboard, what now']);

    // The gateway's manners (as on Slack and Discord): the bot's name at a line start addresses it;
    // a reply to someone else, or the bot's name mid-sentence, does not.
    const byName = fake.userMessage({ chat: GROUP, from: BOB, text: 'switchboard: summarize please' });
    await w.answered(byName.updateId);
    expect(repliesTo(GROUP.id, byName.messageId).map((m) => m.text)).toEqual(['echo: switchboard: summarize please']);
    const toAlice = fake.userMessage({ chat: GROUP, from: BOB, text: 'thanks switchboard', replyTo: { message_id: quiet.messageId, from: ALICE } });
    const named = fake.userMessage({ chat: GROUP, from: BOB, text: 'I asked switchboard yesterday' });

    const command = fake.userMessage({ chat: GROUP, from: ALICE, text: `/status@${BOT.username}` });
    const status = await eventually(async () => repliesTo(GROUP.id, command.messageId)[0]);
    expect(status.text).toMatch(/^Model: /);
    expect(modelCallsAbout('/status')).toBe(0);
    for (const u of [toAlice, named]) expect(await w.inboxRows(u.updateId)).toHaveLength(0);
  }, 60_000);

  it('forum topics are threads: each its own conversation, answered in its topic; a topic message is no reply to the bot', async () => {
    const { fake } = w;
    const unaddressed = fake.userMessage({ chat: FORUM, from: ALICE, text: 'chatting in the topic', threadId: 77 });
    const inTopic = fake.userMessage({ chat: FORUM, from: ALICE, text: `@${BOT.username} topic question`, threadId: 77 });
    const otherTopic = fake.userMessage({ chat: FORUM, from: ALICE, text: `@${BOT.username} other topic`, threadId: 78 });
    await w.answered(inTopic.updateId);
    await w.answered(otherTopic.updateId);
    expect(await w.inboxRows(unaddressed.updateId)).toHaveLength(0);
    expect(await w.conversationKey(inTopic.updateId)).toBe(`telegram/-/${FORUM.id}/77`);
    expect(await w.conversationKey(otherTopic.updateId)).toBe(`telegram/-/${FORUM.id}/78`);
    const [reply] = repliesTo(FORUM.id, inTopic.messageId);
    expect(reply!.text).toBe('echo: topic question');
    expect(reply!.threadId).toBe(77);
    expect(repliesTo(FORUM.id, otherTopic.messageId)[0]!.threadId).toBe(78);
  }, 60_000);
});

describe('telegram: formatting', () => {
  it('markdown becomes HTML and what is not markup stays text (unbalanced tags, &, <)', async () => {
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'a <b>unclosed & **bold** and `x<y` *open' });
    await w.answered(updateId);
    const [reply] = repliesTo(DM_ALICE.id, messageId);
    expect(reply!.parseMode).toBe('HTML');
    expect(reply!.text).toBe('echo: a <b>unclosed & bold and x<y *open');
    expect(reply!.history.at(-1)!.raw).toContain('<b>bold</b>');
    expect(reply!.history.at(-1)!.raw).toContain('<code>x&lt;y</code>');
  }, 60_000);

  it('a message Telegram cannot parse ("can\'t parse entities") goes out as plain text', async () => {
    w.fake.refuseEntitiesOnce(DM_ALICE.id);
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'fallback **please**' });
    await w.answered(updateId);
    const [reply] = repliesTo(DM_ALICE.id, messageId);
    expect(reply).toBeDefined();
    expect(reply!.history[0]!.parseMode).toBeUndefined();
    expect(reply!.text).toBe('echo: fallback please');
    expect(w.fake.calls.some((c) => c.method === 'sendMessage' && c.body.parse_mode === 'HTML' && String(c.body.chat_id) === String(DM_ALICE.id))).toBe(true);
  }, 60_000);
});

describe('telegram: rate limits', () => {
  it('a 429 is waited out as its retry_after says, and the reply arrives whole', async () => {
    w.fake.floodOnce(DM_ALICE.id, 2, 2);
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'flooded chat' });
    await w.answered(updateId, 40_000);
    expect(repliesTo(DM_ALICE.id, messageId).map((m) => m.text)).toEqual(['echo: flooded chat']);
    expect(w.fake.retryAfterViolations).toEqual([]);
  }, 60_000);
});

describe('telegram: commands', () => {
  it('/new starts afresh, /status reports, /stop says when nothing runs; none reaches the model', async () => {
    const { fake } = w;
    const first = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'remember me' });
    await w.answered(first.updateId);
    const before = await w.conversationKey(first.updateId);
    const fresh = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: '/new' });
    expect((await eventually(async () => repliesTo(DM_ALICE.id, fresh.messageId)[0])).text).toMatch(/new conversation/i);
    const stop = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: '/stop' });
    expect((await eventually(async () => repliesTo(DM_ALICE.id, stop.messageId)[0])).text).toMatch(/Nothing is running/);
    const after = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'a new start' });
    await w.answered(after.updateId);
    const [row] = await w.inboxRows(after.updateId);
    const [old] = await w.inboxRows(first.updateId);
    expect(row!.conversation_id).not.toBe(old!.conversation_id);
    expect(await w.conversationKey(after.updateId)).toBe(before);
    expect(modelCallsAbout('/new') + modelCallsAbout('/stop')).toBe(0);
    expect(fake.callsOf('setMyCommands')[0]!.body.commands).toEqual(expect.arrayContaining([expect.objectContaining({ command: 'new' })]));
  }, 60_000);
});

describe('telegram: approvals', () => {
  const keyboardOf = (m: SentMessage) => m.replyMarkup?.inline_keyboard.flat() ?? [];

  async function requestApproval(chat = OPEN_GROUP, command = 'echo hi >> out.txt') {
    const user = w.fake.userMessage({ chat, from: ALICE, text: `run: ${command}` });
    const request = await eventually(async () =>
      w.fake.botMessages(chat.id).find((m) => keyboardOf(m).some((b) => b.callback_data?.startsWith('sb:approve:'))),
    );
    const code = keyboardOf(request)
      .find((b) => b.callback_data?.startsWith('sb:approve:'))!
      .callback_data!.split(':')[2]!;
    await eventually(async () => (await w.gw.infra.approvals.byCode(code))?.status === 'pending');
    return { user, request, code };
  }

  it('buttons only for operators: anyone else gets an alert; an operator decides and the turn resumes', async () => {
    const { fake } = w;
    const { user, request, code } = await requestApproval();
    expect(request.text).toContain(code);
    expect(request.text).toMatch(/waiting for approval/);

    const refused = fake.clickButton(request, BOB, `sb:approve:${code}`);
    const alert = await eventually(async () => fake.callsOf('answerCallbackQuery').find((c) => c.body.callback_query_id === refused.queryId));
    expect(alert.body.show_alert).toBe(true);
    expect(String(alert.body.text)).toMatch(/operator/i);
    expect((await w.gw.infra.approvals.byCode(code))!.status).toBe('pending');
    expect(keyboardOf(fake.botMessages(OPEN_GROUP.id).find((m) => m.message_id === request.message_id)!).length).toBeGreaterThan(0);

    const approved = fake.clickButton(request, OPERATOR, `sb:approve:${code}`);
    const toast = await eventually(async () => fake.callsOf('answerCallbackQuery').find((c) => c.body.callback_query_id === approved.queryId));
    expect(toast.body.show_alert).toBeUndefined();
    expect(String(toast.body.text)).toContain(`Approved ${code}`);
    expect(['approved', 'executed']).toContain((await w.gw.infra.approvals.byCode(code))!.status);
    await eventually(async () => keyboardOf(fake.botMessages(OPEN_GROUP.id).find((m) => m.message_id === request.message_id)!).length === 0);
    await w.answered(user.updateId, 40_000);
    await eventually(async () => fake.botMessages(OPEN_GROUP.id).find((m) => m.message_id > request.message_id && m.text.includes('tool said')));
  }, 90_000);

  it('an operator can answer by code instead ("YES CODE"), from their own chat', async () => {
    const { fake } = w;
    const { code } = await requestApproval(DM_ALICE, 'echo typed >> out2.txt');
    const answer = fake.userMessage({ chat: DM_OPERATOR, from: OPERATOR, text: `YES ${code}` });
    const said = await eventually(async () => repliesTo(DM_OPERATOR.id, answer.messageId)[0]);
    expect(said.text).toMatch(/approved/i);
    expect(['approved', 'executed']).toContain((await w.gw.infra.approvals.byCode(code))!.status);
    // A non-operator typing the code decides nothing.
    const other = await requestApproval(OPEN_GROUP, 'echo other >> out3.txt');
    const bobSays = fake.userMessage({ chat: OPEN_GROUP, from: BOB, text: `YES ${other.code}` });
    await eventually(async () => repliesTo(OPEN_GROUP.id, bobSays.messageId)[0]);
    expect((await w.gw.infra.approvals.byCode(other.code))!.status).toBe('pending');
  }, 90_000);
});

describe('telegram: catch-up after downtime', () => {
  it('messages sent while down are answered once, in order, after the restart; too old ones or past the cap get one offline reply', async () => {
    const { fake } = w;
    await w.stop();
    const old = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'ancient question', ageSeconds: 2 * 3600 });
    const old2 = fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'ancient follow-up', ageSeconds: 2 * 3600 - 60 });
    const first = fake.userMessage({ chat: DM_BOB, from: BOB, text: 'first while down', ageSeconds: 120 });
    const second = fake.userMessage({ chat: DM_BOB, from: BOB, text: 'second while down', ageSeconds: 110 });
    const third = fake.userMessage({ chat: DM_BOB, from: BOB, text: 'third while down', ageSeconds: 100 });
    await w.restart();
    await w.answered(first.updateId, 40_000);
    await w.answered(second.updateId, 40_000);
    const answers = fake.botMessages(DM_BOB.id).filter((m) => m.text.includes('while down'));
    expect(answers.map((m) => m.text)).toEqual(['echo: first while down', 'echo: second while down']);
    expect(modelCallsAbout('first while down')).toBe(1);
    // Too old: one offline reply for the chat, none for the second old message, nothing stored.
    const offline = await eventually(async () => repliesTo(DM_ALICE.id, old.messageId)[0]);
    expect(offline.text).toMatch(/offline/);
    expect(repliesTo(DM_ALICE.id, old2.messageId)).toEqual([]);
    expect(await w.inboxRows(old.updateId)).toHaveLength(0);
    // Past catchUp.maxMessages (2) in its conversation: not answered, told once.
    expect((await eventually(async () => repliesTo(DM_BOB.id, third.messageId)[0])).text).toMatch(/offline/);
    expect(await w.inboxRows(third.updateId)).toHaveLength(0);
    expect(w.listener().drops).toEqual({ catch_up_too_old: 2, catch_up_too_many: 1 });
    // Nothing is answered twice by a later poll.
    const later = fake.userMessage({ chat: DM_BOB, from: BOB, text: 'after the catch-up' });
    await w.answered(later.updateId);
    expect(fake.botMessages(DM_BOB.id).filter((m) => m.text.includes('while down'))).toHaveLength(2);
  }, 180_000);
});
