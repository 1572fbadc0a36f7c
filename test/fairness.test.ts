/**
 * Per-key fairness (limits.maxConcurrentTurnsPerKey / PerSender): one API key
 * flooding the gateway with long turns does not hold up another key's short
 * turn, the cap holds across worker processes, a killed worker's slots free
 * themselves, and no message is lost or answered twice on the way.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { Ingress } from '../src/ingress.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, OTHER_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** A long turn streams TOKENS words, TOKEN_MS apart: LONG_MS of streaming. */
const TOKENS = 15;
const TOKEN_MS = 100;
const LONG_MS = TOKENS * TOKEN_MS;
const FLOOD = 32;
const longAnswer = (tag: string, i: number) => Array.from({ length: TOKENS }, (_, k) => `${tag}${i}w${k}`).join(' ');

/** The fake LLM: `long <tag> <i>` streams slowly (and is clocked), anything else is answered at once. */
function startFake(): { fake: FakeLlm; arrivals: (tag: string) => number[]; ready: Promise<void> } {
  const fake = new FakeLlm();
  const seen = new Map<string, number[]>();
  fake.respond((req) => {
    const text = lastUserText(req.body);
    const m = /^long (\S+) (\d+)$/.exec(text);
    if (!m) return reply(`re: ${text}`);
    const list = seen.get(m[1]!) ?? [];
    list.push(Date.now());
    seen.set(m[1]!, list);
    return reply(longAnswer(m[1]!, Number(m[2])), TOKEN_MS);
  });
  return { fake, arrivals: (tag) => [...(seen.get(tag) ?? [])].sort((a, b) => a - b), ready: fake.start() };
}

/** A query against the gateway's database (PGlite in process, or a Postgres pool). */
type Query = <T>(sql: string, params?: unknown[]) => Promise<{ rows: T[] }>;
const pgQuery =
  (pool: pg.Pool): Query =>
  async <T>(sql: string, params?: unknown[]) =>
    (await pool.query(sql, params)) as unknown as { rows: T[] };

async function chat(url: string, key: string, conversation: string, content: string): Promise<{ text: string; ms: number }> {
  const t0 = Date.now();
  const stream = await openaiClient(url, key, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
    model: 'default',
    stream: true,
    messages: [{ role: 'user', content }],
  });
  let text = '';
  for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
  return { text, ms: Date.now() - t0 };
}

/** 32 long turns from one key, one conversation each. */
function flood(url: string, tag: string): Promise<Array<{ text: string; ms: number }>> {
  return Promise.all(Array.from({ length: FLOOD }, (_, i) => chat(url, API_KEY, `${tag}-${i}`, `long ${tag} ${i}`)));
}

/**
 * At most `cap` of these model calls ran at once: every call is LONG_MS of
 * streaming, so the call that came `cap` places later started after one of
 * them had finished.
 */
function expectAtMostAtOnce(arrivals: number[], cap: number): void {
  for (let k = cap; k < arrivals.length; k++) expect(arrivals[k]! - arrivals[k - cap]!).toBeGreaterThanOrEqual(LONG_MS - 30);
}

/** Every conversation of the tag: one turn, done on its first attempt; its message consumed; two transcript messages. */
async function expectEachAnsweredOnce(query: Query, tag: string, n: number, attempt = 1): Promise<string[]> {
  const rows = (
    await query<{ key: string; turns: number; done: number; attempts: number[]; inbox: number; unconsumed: number; messages: number; workers: string[] }>(
      `select c.key,
              (select count(*)::int from turns t where t.conversation_id = c.id) as turns,
              (select count(*)::int from turns t where t.conversation_id = c.id and t.status = 'done') as done,
              (select array_agg(t.attempt) from turns t where t.conversation_id = c.id) as attempts,
              (select count(*)::int from inbox i where i.conversation_id = c.id) as inbox,
              (select count(*)::int from inbox i where i.conversation_id = c.id and i.consumed_at is null) as unconsumed,
              (select count(*)::int from messages m where m.conversation_id = c.id) as messages,
              (select array_agg(t.worker) from turns t where t.conversation_id = c.id) as workers
       from conversations c where c.key like $1`,
      [`%/${tag}-%`],
    )
  ).rows;
  expect(rows).toHaveLength(n);
  for (const r of rows) expect(r, r.key).toMatchObject({ turns: 1, done: 1, attempts: [attempt], inbox: 1, unconsumed: 0, messages: 2 });
  return rows.flatMap((r) => r.workers);
}

/** Waits until all 32 messages of the flood are in the inbox and the first wave runs, then sends the other key's short turn. */
async function otherKeyDuringFlood(url: string, query: Query, arrivals: () => number[], tag: string, firstWave: number) {
  await eventually(async () => arrivals().length >= firstWave, 20_000);
  await eventually(
    async () =>
      (
        await query<{ n: number }>(`select count(*)::int as n from inbox i join conversations c on c.id = i.conversation_id where c.key like $1`, [
          `%/${tag}-%`,
        ])
      ).rows[0]!.n === FLOOD,
    20_000,
  );
  return chat(url, OTHER_KEY, `other-${tag}`, 'short question');
}

describe('fairness, embedded (in-process queue + PGlite)', () => {
  const { fake, arrivals, ready } = startFake();
  let gw: Gateway;
  let uncapped: Gateway | undefined;

  beforeAll(async () => {
    await ready;
    // 12 turns at once in this worker; one key may hold 8 of them.
    gw = await startGateway(testConfig(fake, {}, { queue: { concurrency: 12 }, limits: { maxConcurrentTurnsPerKey: 8, maxConcurrentTurnsPerSender: 4 } }));
  });
  afterAll(async () => {
    await uncapped?.close();
    await gw?.close();
    await fake.close();
  });

  it(`${FLOOD} long turns from one key do not delay another key's short turn by a long turn`, async () => {
    const floodDone = flood(gw.url!, 'emb');
    const other = await otherKeyDuringFlood(
      gw.url!,
      (sql, p) => gw.infra.store.db.query(sql, p),
      () => arrivals('emb'),
      'emb',
      8,
    );
    expect(other.text).toBe('re: short question');
    expect(other.ms).toBeLessThan(LONG_MS);

    const results = await floodDone;
    results.forEach((r, i) => expect(r.text).toBe(longAnswer('emb', i)));
    expect(arrivals('emb')).toHaveLength(FLOOD);
    expectAtMostAtOnce(arrivals('emb'), 8);
    await expectEachAnsweredOnce((sql, p) => gw.infra.store.db.query(sql, p), 'emb', FLOOD);
  });

  it('caps one chat sender across conversations, and another sender is not held up', async () => {
    const ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log);
    const accept = async (m: Parameters<Ingress['receive']>[0]) => {
      const r = await ingress.receive(m, { authenticated: true });
      if (r.kind !== 'accepted') throw new Error(`not accepted: ${r.kind}`);
      return r;
    };
    const msg = (sender: string, chat: string, text: string) => ({
      channel: 'test',
      externalId: `${chat}-${text}`,
      conversationKey: `test/-/${chat}/-`,
      sender: { id: sender },
      text,
      attachments: [],
      receivedAt: new Date(),
    });
    for (let i = 0; i < 6; i++) await accept(msg('chatty', `snd-${i}`, `long snd ${i}`));
    await eventually(async () => arrivals('snd').length >= 4);
    const t0 = Date.now();
    const calm = await accept(msg('calm', 'calm-1', 'hello from calm'));
    await eventually(async () => (await gw.infra.store.turns(calm.conversationId))[0]?.status === 'done', 10_000, 20);
    expect(Date.now() - t0).toBeLessThan(LONG_MS);
    await eventually(
      async () =>
        arrivals('snd').length === 6 &&
        (
          await gw.infra.store.db.query<{ n: number }>(
            `select count(*)::int as n from turns t join conversations c on c.id = t.conversation_id where c.key like '%/snd-%' and t.status = 'done'`,
          )
        ).rows[0]!.n === 6,
      20_000,
    );
    expectAtMostAtOnce(arrivals('snd'), 4);
    await expectEachAnsweredOnce((sql, p) => gw.infra.store.db.query(sql, p), 'snd', 6);
  });

  it('without the cap, the same flood holds the other key up for more than a long turn (what the cap prevents)', async () => {
    uncapped = await startGateway(testConfig(fake, {}, { queue: { concurrency: 12 }, limits: { maxConcurrentTurnsPerKey: 0 } }));
    const floodDone = flood(uncapped.url!, 'unc');
    const other = await otherKeyDuringFlood(
      uncapped.url!,
      (sql, p) => uncapped!.infra.store.db.query(sql, p),
      () => arrivals('unc'),
      'unc',
      12,
    );
    expect(other.text).toBe('re: short question');
    expect(other.ms).toBeGreaterThan(LONG_MS);
    (await floodDone).forEach((r, i) => expect(r.text).toBe(longAnswer('unc', i)));
  });
});

/** Environment for `switchboard ingress|worker` processes on this Redis and database. */
function processEnv(fake: FakeLlm, redis: TestRedis, pgdb: TestDatabase, extra: Record<string, string>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-fair-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ queue: { backoffMs: 100, recoverAfterMs: 2_000, recoverIntervalMs: 1_000 } }));
  return {
    REDIS_URL: redis.url,
    DATABASE_URL: pgdb.url,
    SWITCHBOARD_CONFIG: file,
    SWITCHBOARD_DATA: dir,
    SWITCHBOARD_HTTP_PORT: '0',
    SWITCHBOARD_API_KEYS: `${API_KEY},${OTHER_KEY}`,
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'fake',
    SWITCHBOARD_MODEL: 'fake-model',
    SWITCHBOARD_LOCK_DURATION_MS: '3000',
    SWITCHBOARD_STALLED_INTERVAL_MS: '1000',
    SWITCHBOARD_DB_POOL_SIZE: '4',
    SWITCHBOARD_LOG_LEVEL: 'info',
    ...extra,
  };
}

describe('fairness, Redis + Postgres with two worker processes', () => {
  const { fake, arrivals, ready } = startFake();
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    await ready;
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url, max: 2 });
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await fake.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it(`${FLOOD} long turns from one key do not delay another key's short turn; the cap holds across both workers`, async () => {
    // 6 turns at once per worker, 12 in all; one key may hold 8 of them, wherever they run.
    const env = processEnv(fake, redis, pgdb, { SWITCHBOARD_WORKER_CONCURRENCY: '6', SWITCHBOARD_MAX_TURNS_PER_KEY: '8' });
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress, ...(await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)])));

    const floodDone = flood(ingress.url!, 'rp');
    const other = await otherKeyDuringFlood(ingress.url!, pgQuery(db), () => arrivals('rp'), 'rp', 8);
    expect(other.text).toBe('re: short question');
    expect(other.ms).toBeLessThan(LONG_MS);

    const results = await floodDone;
    results.forEach((r, i) => expect(r.text).toBe(longAnswer('rp', i)));
    expect(arrivals('rp')).toHaveLength(FLOOD);
    expectAtMostAtOnce(arrivals('rp'), 8);
    const workers = await expectEachAnsweredOnce(pgQuery(db), 'rp', FLOOD);
    // Both worker processes ran the key's turns: the 8 were counted across them.
    expect(new Set(workers).size).toBe(2);
  });

  it(`attack: ${FLOOD} one-off requests at once (their drains share BullMQ jobs) still get no more than the key's cap of turns at once`, async () => {
    for (const p of procs.splice(0)) await p.kill('SIGKILL');
    const env = processEnv(fake, redis, pgdb, {
      SWITCHBOARD_WORKER_CONCURRENCY: '12',
      SWITCHBOARD_MAX_TURNS_PER_KEY: '4',
      SWITCHBOARD_QUEUE_PREFIX: 'sboneoff',
    });
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress, ...(await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)])));
    // No conversation named, no Idempotency-Key: one conversation minted per request, drains coalesced (adapters/queue/coalescing.ts).
    const client = openaiClient(ingress.url!, API_KEY);
    const results = await Promise.all(
      Array.from({ length: FLOOD }, (_, i) =>
        client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `long oneoff ${i}` }] }, { timeout: 120_000 }),
      ),
    );
    results.forEach((r, i) => expect(r.choices[0]!.message.content).toBe(longAnswer('oneoff', i)));
    expect(arrivals('oneoff')).toHaveLength(FLOOD);
    expectAtMostAtOnce(arrivals('oneoff'), 4);
    for (const p of procs.splice(0)) await p.kill('SIGKILL');
  }, 120_000);

  it(`attack: ${FLOOD} one-off requests at once on an all-in-one process (their turns opened at accept) still get no more than the key's cap at once, and another key is not held up`, async () => {
    for (const p of procs.splice(0)) await p.kill('SIGKILL');
    const env = processEnv(fake, redis, pgdb, {
      SWITCHBOARD_WORKER_CONCURRENCY: '12',
      SWITCHBOARD_MAX_TURNS_PER_KEY: '4',
      SWITCHBOARD_QUEUE_PREFIX: 'sboneoffall',
    });
    const gateway = await GatewayProcess.spawn('start', env);
    procs.push(gateway);
    // One conversation minted per request: each holds a slot of this process from its accept statement on.
    const client = openaiClient(gateway.url!, API_KEY);
    const floodDone = Promise.all(
      Array.from({ length: FLOOD }, (_, i) =>
        client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `long oneoffall ${i}` }] }, { timeout: 120_000 }),
      ),
    );
    await eventually(async () => arrivals('oneoffall').length >= 4, 20_000);
    const other = await chat(gateway.url!, OTHER_KEY, 'other-oneoffall', 'short question');
    expect(other.text).toBe('re: short question');
    expect(other.ms).toBeLessThan(LONG_MS);
    const results = await floodDone;
    results.forEach((r, i) => expect(r.choices[0]!.message.content).toBe(longAnswer('oneoffall', i)));
    // Each asked of the model once, never more than the cap at once.
    expect(arrivals('oneoffall')).toHaveLength(FLOOD);
    expectAtMostAtOnce(arrivals('oneoffall'), 4);
    // The path under attack was taken: turns written by their accept statement (one transaction's timestamp).
    const opened = (
      await db.query<{ n: number }>(
        `select count(*)::int as n from inbox i join conversations c on c.id = i.conversation_id join turns t on t.id = i.turn_id
         where i.text like 'long oneoffall %' and c.created_at = t.started_at`,
      )
    ).rows[0]!.n;
    expect(opened).toBeGreaterThan(0);
    for (const p of procs.splice(0)) await p.kill('SIGKILL');
  }, 120_000);

  it("frees a killed worker's slots: the key's turns resume and its next message is answered", async () => {
    for (const p of procs.splice(0)) await p.kill('SIGKILL');
    // One worker, a cap of 2: its two long turns hold the key's whole share when it is killed.
    const env = processEnv(fake, redis, pgdb, { SWITCHBOARD_WORKER_CONCURRENCY: '4', SWITCHBOARD_MAX_TURNS_PER_KEY: '2', SWITCHBOARD_QUEUE_PREFIX: 'sbcrash' });
    const ingress = await GatewayProcess.spawn('ingress', env);
    const doomed = await GatewayProcess.spawn('worker', env);
    procs.push(ingress, doomed);
    const long = [0, 1].map((i) => chat(ingress.url!, API_KEY, `kill-${i}`, `long kill ${i}`));
    await eventually(async () => arrivals('kill').length === 2);
    await doomed.kill('SIGKILL');
    procs.push(await GatewayProcess.spawn('worker', env));

    // Its slots are held by a dead worker until they expire; then this turn and the two resumed ones all run.
    const next = chat(ingress.url!, API_KEY, 'kill-2', 'and one more');
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error("the key's turns did not run again within 20 s: the dead worker's slots were not freed")), 20_000)),
    );
    const [a, b, c] = await Promise.race([Promise.all([...long, next]), stuck]).finally(() => clearTimeout(timer));
    expect(a!.text).toBe(longAnswer('kill', 0));
    expect(b!.text).toBe(longAnswer('kill', 1));
    expect(c!.text).toBe('re: and one more');
    const rows = (
      await db.query<{ key: string; status: string; attempt: number; unconsumed: number; messages: number }>(
        `select c.key, t.status, t.attempt,
              (select count(*)::int from inbox i where i.conversation_id = c.id and i.consumed_at is null) as unconsumed,
              (select count(*)::int from messages m where m.conversation_id = c.id) as messages
       from conversations c join turns t on t.conversation_id = c.id where c.key like '%/kill-%' order by c.key`,
      )
    ).rows;
    expect(rows.map((r) => [r.status, r.attempt, r.unconsumed, r.messages])).toEqual([
      ['done', 2, 0, 2],
      ['done', 2, 0, 2],
      ['done', 1, 0, 2],
    ]);
  });
});
