/**
 * Human takeover in a Telegram group (grammY against the fake Bot API, a real embedded gateway):
 * the operator's `/takeover@bot` and `/handback@bot <note>` (Telegram names the bot in a group's
 * command), the group's messages passed on while taken over (the sender told once), the operator's
 * own messages in the group recorded as theirs, the agent answering again with the context.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE } from '../src/handoffs/text.js';
import { BOT } from './fakes/telegram-server.js';
import { ALICE, BOB, OPEN_GROUP, OPERATOR, startTelegramWorld, type TelegramWorld } from './fakes/telegram-world.js';
import { eventually, TEST_OPERATOR_KEY } from './support/gateway.js';

let w: TelegramWorld;
beforeAll(async () => {
  w = await startTelegramWorld();
});
afterAll(async () => {
  await w?.close();
});

describe('takeover in a Telegram group', () => {
  it('the operator takes the group conversation over and hands it back with a note', async () => {
    const { fake } = w;
    const say = (from: typeof ALICE, text: string) => fake.userMessage({ chat: OPEN_GROUP, from, text });
    // The bot replies, then edits the reply as the answer streams: wait for the text wanted.
    const replyTo = (messageId: number, want: RegExp) =>
      eventually(async () => fake.botMessages(OPEN_GROUP.id).find((m) => m.replyToMessageId === messageId && want.test(m.text)), 20_000);
    const messages = async (id: string) =>
      ((await (await fetch(`${w.gw.url}/v1/conversations/${id}/messages`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } })).json()) as any)
        .data as Array<{ role: string; content: string; author?: string }>;

    const hello = say(ALICE, 'my card was charged twice');
    await replyTo(hello.messageId, /^echo: my card was charged twice$/);
    const id = (await w.inboxRows(hello.updateId))[0]!.conversation_id;

    const take = say(OPERATOR, `/takeover@${BOT.username}`);
    await replyTo(take.messageId, /You have taken over this conversation/);
    const asked = w.llm.requests.length;

    const first = say(ALICE, 'is anyone looking at this?');
    await replyTo(first.messageId, new RegExp(`^${NOTICE.taken.replace(/[.;]/g, '\\$&')}$`));
    const second = say(BOB, 'me too, same problem');
    await eventually(async () => (await messages(id)).find((m) => m.content === 'me too, same problem'));
    expect(fake.botMessages(OPEN_GROUP.id).some((m) => m.replyToMessageId === second.messageId)).toBe(false);
    say(OPERATOR, 'Refunding both of you now.');
    await eventually(async () => (await messages(id)).find((m) => m.role === 'operator' && m.content === 'Refunding both of you now.'));
    expect(w.llm.requests.length).toBe(asked);

    const back = say(OPERATOR, `/handback@${BOT.username} refunded the double charges`);
    await replyTo(back.messageId, /Handed back/);
    const after = say(ALICE, 'thank you');
    await replyTo(after.messageId, /^echo: thank you$/);
    const prompt = JSON.stringify(w.llm.requests.at(-1)!.body.messages);
    for (const s of ['is anyone looking at this?', 'me too, same problem', 'Refunding both of you now.', 'refunded the double charges'])
      expect(prompt).toContain(s);
  });
});
