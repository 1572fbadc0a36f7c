/**
 * Erasure against human takeover in a shared conversation (session 11 review): a Telegram group
 * (grammY against the fake Bot API, a real embedded gateway) taken over by an operator. A member
 * erased as a sender loses their messages of the taken-over time (text and who said it) while the
 * others' stay; the operator erased as a sender leaves the handoff and the handback note that named
 * them; the audit ledger keeps metadata only and still verifies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerStore } from '../adapters/store/audit-ledger.js';
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

const api = (method: string, path: string) => fetch(`${w.gw.url}${path}`, { method, headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
const messages = async (id: string) => ((await (await api('GET', `/v1/conversations/${id}/messages`)).json()) as any).data as Array<any>;

describe('takeover in a Telegram group: erasure', () => {
  it('attack: an erased member and an erased operator leave the shared conversation; the others stay', async () => {
    const { fake } = w;
    const say = (from: typeof ALICE, text: string) => fake.userMessage({ chat: OPEN_GROUP, from, text });
    const replyTo = (messageId: number, want: RegExp) =>
      eventually(async () => fake.botMessages(OPEN_GROUP.id).find((m) => m.replyToMessageId === messageId && want.test(m.text)), 20_000);

    const hello = say(ALICE, 'hello group');
    await replyTo(hello.messageId, /^echo: hello group$/);
    const id = (await w.inboxRows(hello.updateId))[0]!.conversation_id;
    const take = say(OPERATOR, `/takeover@${BOT.username}`);
    await replyTo(take.messageId, /You have taken over this conversation/);
    say(ALICE, 'alice here, order 12');
    say(BOB, 'bob here, my phone is 555-0199');
    say(OPERATOR, 'Looking at both.');
    await eventually(async () => (await messages(id)).find((m) => m.role === 'operator' && m.content === 'Looking at both.'));
    await eventually(async () => (await messages(id)).find((m) => m.content === 'bob here, my phone is 555-0199'));
    const back = say(OPERATOR, `/handback@${BOT.username} done`);
    await replyTo(back.messageId, /Handed back/);

    const t = await messages(id);
    const bob = t.find((m) => m.content === 'bob here, my phone is 555-0199')!.author as string;
    const op = t.find((m) => m.role === 'operator')!.author as string;
    expect(bob).toMatch(/^telegram:/);
    expect(op).toMatch(/^telegram:/);

    expect((await api('DELETE', `/v1/senders/${encodeURIComponent(bob)}`)).status).toBe(200);
    const afterBob = JSON.stringify(await messages(id));
    expect(afterBob).not.toContain('555-0199');
    expect(afterBob).not.toContain(bob);
    expect(afterBob).toContain('alice here, order 12');
    expect(afterBob).toContain('Looking at both.');

    expect((await api('DELETE', `/v1/senders/${encodeURIComponent(op)}`)).status).toBe(200);
    const afterOp = await messages(id);
    expect(JSON.stringify(afterOp)).not.toContain(op);
    expect(JSON.stringify(afterOp)).not.toContain('Looking at both.');
    expect(JSON.stringify(afterOp)).toContain('alice here, order 12');
    const handoffs = ((await (await api('GET', '/v1/handoffs?recent=20')).json()) as any).data.filter((h: any) => h.conversation === id);
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0]).toMatchObject({ state: 'returned', operator: '[erased]', returnedBy: '[erased]' });
    const ledger = new AuditLedgerStore(w.gw.infra.store.db);
    expect(JSON.stringify((await ledger.entries()).filter((e) => e.subject === handoffs[0].id).map((e) => e.details))).not.toMatch(/555-0199|Looking/);
    expect((await ledger.verify()).ok).toBe(true);
  });
});
