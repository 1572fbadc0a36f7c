/**
 * A one-off HTTP conversation's first turn opened by its accept statement (src/turn-opening.ts,
 * adapters/store/accept-opening.ts): one statement and one commit write the conversation, its
 * lease, the message and the turn, and the drain starts in process from what it returned. Both
 * backends in process, and a real process killed right after that commit.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { Ingress } from '../src/ingress.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { backendSetups } from './support/backends.js';
import { API_KEY, eventually, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

interface TurnRow {
  attempt: number;
  status: string;
  /** The conversation, its message and its turn were written by one statement (now() is the transaction's start). */
  one_statement: boolean;
  consumed: boolean;
  worker: string;
}

const TURN_SQL = `select t.attempt, t.status, t.worker, (c.created_at = t.started_at and i.created_at = t.started_at) as one_statement,
                         i.consumed_at is not null as consumed
                  from turns t join conversations c on c.id = t.conversation_id join inbox i on i.turn_id = t.id where t.id = $1`;

describe.each(backendSetups())('a one-off turn opened at accept ($name)', (setup) => {
  let fake: FakeLlm;
  let gw: Gateway;
  let client: OpenAI;
  const turnRow = async (turn: string) => (await gw.infra.store.db.query<TurnRow>(TURN_SQL, [turn])).rows[0];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    // "slow …" answers token by token, so that its turn is still running while the next request comes.
    fake.respond((req) => {
      const text = lastUserText(req.body);
      return reply(`answer to ${text}`, text.startsWith('slow') ? 150 : undefined);
    });
    // One turn at a time in this process: a second one-off request while one runs finds no slot free.
    gw = await startGateway(testConfig(fake, await setup.backend(), { queue: { concurrency: 1 } }));
    client = openaiClient(gw.url!);
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await setup.cleanup();
  });

  it('answers it from a turn written with its message in one statement, once', async () => {
    const r = (await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'one-off hello' }] })) as OpenAI.ChatCompletion & {
      switchboard: { turn: string };
    };
    expect(r.choices[0]!.message.content).toBe('answer to one-off hello');
    expect(await turnRow(r.switchboard.turn)).toMatchObject({ attempt: 1, status: 'done', one_statement: true, consumed: true });
    expect(fake.requests.filter((q) => lastUserText(q.body) === 'one-off hello')).toHaveLength(1);
  });

  it('a named conversation is accepted, then its drain opens the turn, as before', async () => {
    const named = openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'named-open' });
    const r = (await named.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'named hello' }] })) as OpenAI.ChatCompletion & {
      switchboard: { turn: string };
    };
    expect(r.choices[0]!.message.content).toBe('answer to named hello');
    expect(await turnRow(r.switchboard.turn)).toMatchObject({ attempt: 1, status: 'done', one_statement: false });
  });

  it('with no slot free here, the next one-off message is accepted as usual and still answered once', async () => {
    const slow = await client.chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: 'slow one' }] });
    const it1 = slow[Symbol.asyncIterator]();
    // Its first token is out: the process's one slot is taken.
    let slowText = '';
    for (;;) {
      const ch = await it1.next();
      slowText += ch.value?.choices[0]?.delta?.content ?? '';
      if (slowText) break;
    }
    const next = client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'while busy' }] }) as unknown as Promise<
      OpenAI.ChatCompletion & { switchboard: { turn: string } }
    >;
    for (let ch = await it1.next(); !ch.done; ch = await it1.next()) slowText += ch.value.choices[0]?.delta?.content ?? '';
    const busy = await next;
    expect(slowText).toBe('answer to slow one');
    expect(busy.choices[0]!.message.content).toBe('answer to while busy');
    expect(await turnRow(busy.switchboard.turn)).toMatchObject({ attempt: 1, status: 'done', one_statement: false, consumed: true });
  });
});

describe.each([
  { name: 'queue.openOnAccept off', patch: { queue: { openOnAccept: false } } },
  // Collect waits for a pause before it claims: a turn opened at accept would not.
  { name: 'the HTTP channel in queue mode collect', patch: { conversations: { queueModeByChannel: { http: 'collect' }, collectQuietMs: 50 } } },
])('$name', ({ patch }) => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    gw = await startGateway(testConfig(fake, {}, patch));
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('accepts a one-off message, then its drain opens the turn (two statements)', async () => {
    const r = (await openaiClient(gw.url!).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'hi' }],
    })) as OpenAI.ChatCompletion & {
      switchboard: { turn: string };
    };
    expect(r.choices[0]!.message.content).toBe('ok');
    const row = (await gw.infra.store.db.query<TurnRow>(TURN_SQL, [r.switchboard.turn])).rows[0];
    expect(row).toMatchObject({ attempt: 1, status: 'done', one_statement: false });
  });
});

describe('a gateway killed right after the statement that opened a one-off turn (Redis + Postgres, real processes)', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  let dir: string;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`answer to ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url, max: 2 });
    dir = mkdtempSync(join(tmpdir(), 'sb-opened-'));
  }, 60_000);
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  const spawn = (fault?: string) => {
    const config = join(dir, 'switchboard.json');
    writeFileSync(config, JSON.stringify({ queue: { lockDurationMs: 2_000, stalledIntervalMs: 1_000, recoverAfterMs: 1_500, recoverIntervalMs: 1_000 } }));
    return GatewayProcess.spawn('start', {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_DATA: dir,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      ...(fault ? { SWITCHBOARD_TEST_FAULT: fault } : {}),
    }).then((p) => (procs.push(p), p));
  };

  it('attack: killed with 40 one-off turns accepted at once, the first of them opened at accept and mid-answer: the next process answers every message once', async () => {
    const doomed = await spawn();
    const url = doomed.url!;
    // Twenty tokens over ~0.4 s: every turn is mid-answer when the process dies.
    fake.respond((req) => reply(`answer to ${lastUserText(req.body)} ${'word '.repeat(18)}`, 20));
    const asked = Array.from({ length: 40 }, (_, i) =>
      openaiClient(url)
        .chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `flood ${i}` }] })
        .then(
          (r) => r.choices[0]!.message.content,
          () => null,
        ),
    );
    // One API key runs 8 turns at once (limits.maxConcurrentTurnsPerKey): the turns opened at accept beyond
    // those are put back and drained later. Killed once the first ones are asking the model.
    await eventually(async () => fake.requests.filter((q) => lastUserText(q.body).startsWith('flood ')).length >= 4, 15_000, 10);
    await doomed.kill('SIGKILL');
    const before = await Promise.all(asked);
    await spawn();
    const rows = await eventually(
      async () => {
        const r = (
          await db.query<{ text: string; consumed: boolean; replies: number; attempts: number[]; one_statement: boolean }>(
            `select i.text, i.consumed_at is not null as consumed,
                    (select count(*)::int from messages m where m.conversation_id = i.conversation_id and m.role = 'assistant') as replies,
                    (select array_agg(t.attempt) from turns t where t.conversation_id = i.conversation_id) as attempts,
                    coalesce((select c.created_at = t.started_at from conversations c join turns t on t.conversation_id = c.id where c.id = i.conversation_id limit 1), false) as one_statement
             from inbox i where i.text like 'flood %'`,
          )
        ).rows;
        return r.length > 0 && r.every((x) => x.consumed) ? r : null;
      },
      45_000,
      200,
    );
    // Every message accepted before the kill is answered once, in its own conversation.
    expect(rows.every((r) => r.replies === 1 && r.attempts.length === 1)).toBe(true);
    // Those whose answer reached the client were accepted; the kill hit turns opened at accept, mid-answer.
    const answeredBefore = before.flatMap((c, i) => (c ? [`flood ${i}`] : []));
    expect(answeredBefore.every((t) => rows.some((r) => r.text === t))).toBe(true);
    expect(rows.filter((r) => r.one_statement && r.attempts[0]! >= 2).length).toBeGreaterThan(0);
  }, 120_000);

  it('loses nothing: the next process resumes the turn once its lease expires and answers it once', async () => {
    const doomed = await spawn('turn-opened');
    const asked = openaiClient(doomed.url!)
      .chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'survive me' }] })
      .then(
        () => 'answered',
        () => 'connection lost',
      );
    expect(await asked).toBe('connection lost');
    await eventually(async () => doomed.proc.signalCode === 'SIGKILL', 15_000);
    // What the dead process committed: the message and its open turn, under a lease nobody renews.
    const before = (
      await db.query<{ id: string; attempt: number; status: string; claimed: boolean; leased: boolean }>(
        `select t.id, t.attempt, t.status, i.turn_id = t.id as claimed, c.lease_token is not null as leased
         from inbox i join conversations c on c.id = i.conversation_id join turns t on t.conversation_id = c.id where i.text = 'survive me'`,
      )
    ).rows;
    expect(before).toEqual([{ id: expect.any(String), attempt: 1, status: 'running', claimed: true, leased: true }]);
    expect(fake.requests.filter((q) => lastUserText(q.body) === 'survive me')).toHaveLength(0);
    await spawn();
    const after = await eventually(async () => (await db.query<TurnRow>(TURN_SQL, [before[0]!.id])).rows.find((r) => r.status === 'done'), 30_000, 100);
    expect(after).toMatchObject({ attempt: 2, consumed: true, one_statement: true });
    const roles = (await db.query<{ role: string }>(`select role from messages where turn_id = $1 order by id`, [before[0]!.id])).rows.map((r) => r.role);
    expect(roles).toEqual(['user', 'assistant']);
    expect(fake.requests.filter((q) => lastUserText(q.body) === 'survive me')).toHaveLength(1);
  });
});

describe('an ingress step slow after the statement that opened the turn (embedded)', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    // Twenty tokens over a second: the turn still runs when the lease taken at accept would have run out.
    fake.respond((req) => reply(`answer to ${lastUserText(req.body)} ${'word '.repeat(18)}`, 50));
    // The lease lasts 3 s (testConfig); the recovery sweep drains a message unconsumed for 1 s.
    gw = await startGateway(testConfig(fake, {}, { queue: { recoverAfterMs: 1_000, recoverIntervalMs: 250 } }));
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it("attack: the drain renews the lease it was handed before acting, so the sweep's drain never runs the turn a second time", async () => {
    // The real ingress steps with this gateway's worker, and a channel whose callback after the accept takes most of the lease.
    const ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log, { opener: gw.worker!.opener() });
    const out = await ingress.receive(
      {
        channel: 'http',
        externalId: randomUUID(),
        conversationKey: `http/-/slow-${randomUUID()}/-`,
        sender: { id: 'u1' },
        text: 'slow step',
        attachments: [],
        receivedAt: new Date(),
      },
      { newConversation: true, authenticated: true, onAccepted: () => new Promise((r) => setTimeout(r, 2_500)) },
    );
    expect(out.kind).toBe('accepted');
    const conversationId = (out as { conversationId: string }).conversationId;
    const done = await eventually(async () => (await gw.infra.store.turns(conversationId)).find((t) => t.status === 'done'), 20_000, 100);
    // Answered once, by the drain the accept started: one model request, attempt 1, one reply stored.
    expect(done.attempt).toBe(1);
    expect(fake.requests.filter((q) => lastUserText(q.body) === 'slow step')).toHaveLength(1);
    const roles = (await gw.infra.store.transcript(conversationId)).map((m) => (m as { role: string }).role);
    expect(roles).toEqual(['user', 'assistant']);
  }, 30_000);
});
