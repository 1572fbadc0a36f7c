/**
 * The Telegram channel in webhook mode: setWebhook with the secret token at start, the fake Bot API
 * POSTing updates to the gateway's route with X-Telegram-Bot-Api-Secret-Token, forged or missing
 * tokens refused, a redelivered update answered once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_PATH } from '../channels/telegram/config.js';
import { lastUserText } from './fakes/fake-llm.js';
import { ALICE, DM_ALICE, startTelegramWorld, type TelegramWorld, WEBHOOK_SECRET } from './fakes/telegram-world.js';
import { eventually } from './support/gateway.js';

let w: TelegramWorld;

beforeAll(async () => {
  w = await startTelegramWorld({}, { webhook: true });
}, 240_000);
afterAll(async () => {
  await w?.close();
});

const url = () => `${w.gw.url}${WEBHOOK_PATH}`;
const post = (body: unknown, secret?: string) =>
  fetch(url(), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret !== undefined ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
    body: JSON.stringify(body),
  });
const forged = (updateId: number, text: string) => ({
  update_id: updateId,
  message: { message_id: 99, from: { id: ALICE.id, is_bot: false, first_name: 'Alice' }, chat: DM_ALICE, date: Math.floor(Date.now() / 1000), text },
});

describe('telegram webhook', () => {
  it('start sets the webhook with the secret token; updates pushed to it are answered', async () => {
    const set = w.fake.callsOf('setWebhook')[0]!;
    expect(set.body.url).toBe(url());
    expect(set.body.secret_token).toBe(WEBHOOK_SECRET);
    expect(w.fake.callsOf('getUpdates')).toEqual([]);
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'via the webhook' });
    await w.answered(updateId);
    const replies = w.fake.botMessages(DM_ALICE.id).filter((m) => m.replyToMessageId === messageId);
    expect(replies.map((m) => m.text)).toEqual(['echo: via the webhook']);
    expect(w.fake.webhookPosts.find((p) => p.updateId === updateId)!.status).toBe(200);
  }, 60_000);

  it('a missing secret token is refused 401, a wrong one 403 (same length or not); nothing is stored', async () => {
    const missing = await post(forged(900001, 'forged without a token'));
    expect(missing.status).toBe(401);
    const wrong = await post(forged(900002, 'forged with a wrong token'), 'x'.repeat(WEBHOOK_SECRET.length));
    expect(wrong.status).toBe(403);
    const short = await post(forged(900003, 'forged with a short token'), 'abc');
    expect(short.status).toBe(403);
    const empty = await post(forged(900004, 'forged with an empty token'), '');
    expect(empty.status).toBe(401);
    for (const id of [900001, 900002, 900003, 900004]) expect(await w.inboxRows(id)).toHaveLength(0);
    // With the right token but not an update: 400.
    expect((await post({ hello: 'world' }, WEBHOOK_SECRET)).status).toBe(400);
  });

  it('an update delivered twice (Telegram retrying) is answered once', async () => {
    const { updateId, messageId } = w.fake.userMessage({ chat: DM_ALICE, from: ALICE, text: 'say it once' });
    await w.answered(updateId);
    const update = w.fake.lastUpdates.find((u) => u.update_id === updateId)!;
    const again = await post(update, WEBHOOK_SECRET);
    expect(again.status).toBe(200);
    w.fake.redeliver(updateId, update);
    await eventually(async () => w.fake.webhookPosts.filter((p) => p.updateId === updateId).length >= 2);
    expect(w.fake.botMessages(DM_ALICE.id).filter((m) => m.replyToMessageId === messageId)).toHaveLength(1);
    expect(w.llm.requests.filter((r) => lastUserText(r.body).includes('say it once'))).toHaveLength(1);
  }, 60_000);
});
