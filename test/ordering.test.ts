/**
 * Many conversations at once, one conversation flooded, and redelivered events:
 * every message answered once, in order, never two turns of a conversation at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { Ingress } from '../src/ingress.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { type Backend, eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

describe.each(['embedded', 'redis+postgres'] as const)('ordering and isolation (%s)', (mode) => {
  let fake: FakeLlm;
  let gw: Gateway;
  let redis: TestRedis | undefined;
  let pgdb: TestDatabase | undefined;
  const tag = mode.replace('+', '-');

  beforeAll(async () => {
    fake = new FakeLlm({ recordRequests: true });
    await fake.start();
    // A few ms per token, so that turns overlap in time.
    fake.respond((req) => reply(`answer to ${lastUserText(req.body)}`, 3));
    const backend: Backend = {};
    if (mode === 'redis+postgres') {
      redis = await TestRedis.start();
      pgdb = await createTestDatabase();
      Object.assign(backend, { redisUrl: redis.url, databaseUrl: pgdb.url });
    }
    // One key sends 70 requests at once and expects 50 turns to overlap: no request
    // rate limit, and room for all of them under the per-key cap on concurrent turns.
    gw = await startGateway(testConfig(fake, backend, { queue: { concurrency: 64 }, limits: { apiKey: 'off', maxConcurrentTurnsPerKey: 64 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('answers 50 conversations at once, each with its own reply and nothing mixed up', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const c = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': `many-${tag}-${i}` });
        const stream = await c.chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: `question ${i}` }] });
        let text = '';
        for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
        return text;
      }),
    );
    results.forEach((text, i) => expect(text).toBe(`answer to question ${i}`));
    // And each conversation's transcript holds only its own exchange.
    for (const i of [0, 17, 49]) {
      const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/many-${tag}-${i}/%`])).rows[0]!;
      const t = await gw.infra.store.transcript(conv.id);
      expect(JSON.stringify(t)).toContain(`question ${i}"`);
      expect(t).toHaveLength(2);
    }
  });

  it('processes 20 messages fired at once into one conversation in order, one turn at a time', async () => {
    const conv = `flood-${tag}`;
    const c = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': conv });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `m${i}` }] })),
    );
    replies.forEach((r, i) => expect(r.choices[0]!.message.content).toBe(`answer to m${i}`));

    const { store } = gw.infra;
    const convRow = (await store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${conv}/%`])).rows[0]!;
    const turns = await store.turns(convRow.id);
    expect(turns).toHaveLength(20);
    expect(turns.every((t) => t.status === 'done' && t.attempt === 1)).toBe(true);
    // Never two turns of the conversation at once: each starts after the previous finished.
    for (let k = 1; k < turns.length; k++) expect(turns[k]!.startedAt.getTime()).toBeGreaterThanOrEqual(turns[k - 1]!.finishedAt!.getTime());
    // In arrival order: turn k consumed the k-th message to reach the inbox.
    const inbox = (
      await store.db.query<{ id: number; turn_id: string; consumed_at: Date | null }>(
        'select id, turn_id, consumed_at from inbox where conversation_id = $1 order by id',
        [convRow.id],
      )
    ).rows;
    expect(inbox).toHaveLength(20);
    expect(inbox.map((r) => r.turn_id)).toEqual(turns.map((t) => t.id));
    expect(inbox.every((r) => r.consumed_at)).toBe(true);
    // The transcript alternates user / assistant in that same order.
    const transcript = (await store.transcript(convRow.id)) as Array<{ role: string; content: unknown }>;
    expect(transcript).toHaveLength(40);
    const order = transcript.filter((m) => m.role === 'user').map((m) => m.content);
    const texts = (await store.db.query<{ text: string }>('select text from inbox where conversation_id = $1 order by id', [convRow.id])).rows.map(
      (r) => r.text,
    );
    expect(order).toEqual(texts);
  });

  it('answers a platform event delivered twice only once', async () => {
    const ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log);
    const accept = async (m: Parameters<Ingress['receive']>[0]) => {
      const r = await ingress.receive(m, { authenticated: true });
      if (r.kind !== 'accepted') throw new Error(`not accepted: ${r.kind}`);
      return r;
    };
    const before = fake.requests.length;
    const msg = {
      channel: 'test',
      externalId: `evt-${tag}`,
      conversationKey: `test/-/dup-${tag}/-`,
      sender: { id: 'u' },
      text: 'once please',
      attachments: [],
      receivedAt: new Date(),
    };
    const [a, b] = await Promise.all([accept(msg), accept(msg)]);
    const c = await accept(msg);
    expect([a.duplicate, b.duplicate].sort()).toEqual([false, true]);
    expect(c.duplicate).toBe(true);
    const turns = await eventually(async () => {
      const t = await gw.infra.store.turns(a.conversationId);
      return t.length === 1 && t[0]!.status === 'done' ? t : null;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await gw.infra.store.turns(a.conversationId)).toHaveLength(turns.length);
    expect(fake.requests.length - before).toBe(1);
  });
});
