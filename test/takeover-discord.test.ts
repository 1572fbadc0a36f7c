/**
 * Human takeover on Discord, end to end: the real discord.js/REST stack against the fake Discord,
 * a real embedded gateway. In a channel the bot answers, a configured operator types "takeover";
 * the agent stops answering (no model call, no bot message), the operator's own messages in the
 * channel are recorded as theirs, "handback: <note>" returns it and the agent answers with the
 * context. Attack: a non-operator typing "handback" is refused and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE } from '../src/handoffs/text.js';
import { ALICE, BOB, OPEN, OPERATOR, startWorld, type World } from './fakes/discord-world.js';
import { eventually, TEST_OPERATOR_KEY } from './support/gateway.js';

let w: World;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(async () => {
  await w?.close();
});

describe('takeover on Discord', () => {
  it('an operator takes the channel conversation over, writes in it, and hands back', async () => {
    const { fake, gw } = w;
    const say = (author: typeof ALICE, content: string) => fake.userMessage({ channelId: OPEN, author, content });
    const botSaid = (re: RegExp) => eventually(async () => fake.botMessages(OPEN).find((m) => re.test(m.content)), 20_000);
    const messages = async (id: string) =>
      ((await (await fetch(`${gw.url}/v1/conversations/${id}/messages`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } })).json()) as any)
        .data as Array<{ role: string; content: string; author?: string }>;

    const first = say(ALICE, 'my order 9 is late');
    await botSaid(/echo: my order 9 is late/);
    const id = (await w.inboxRows(first))[0]!.conversation_id;

    say(OPERATOR, 'takeover');
    await botSaid(/You have taken over this conversation/);
    const asked = w.primary.requests.length;
    const posts = fake.botMessages(OPEN).length;

    say(ALICE, 'hello, anyone?');
    await eventually(async () => (await messages(id)).find((m) => m.content === 'hello, anyone?'));
    say(OPERATOR, 'Hi Alice, Olga here: order 9 ships today.');
    await eventually(async () => (await messages(id)).find((m) => m.role === 'operator' && m.content.startsWith('Hi Alice, Olga here')));
    expect((await messages(id)).find((m) => m.content === 'hello, anyone?')).toMatchObject({ role: 'user', author: expect.stringContaining(ALICE.id) });

    say(BOB, 'handback');
    await botSaid(new RegExp(NOTICE.refusedTakeover.replace('.', '\\.')));
    expect(fake.botMessages(OPEN).length).toBe(posts + 1); // only the refusal: nothing for Alice's or the operator's messages
    expect(w.primary.requests.length).toBe(asked);

    say(OPERATOR, 'handback: order 9 ships today');
    await botSaid(/Handed back/);
    say(ALICE, 'thanks!');
    await botSaid(/echo: thanks!/);
    const prompt = JSON.stringify(w.primary.requests.at(-1)!.body.messages);
    for (const s of ['hello, anyone?', 'Olga here: order 9 ships today.', 'order 9 ships today']) expect(prompt).toContain(s);
  });
});
