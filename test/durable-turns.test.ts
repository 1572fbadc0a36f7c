/**
 * Durable turns with real processes: a worker dies at a chosen point of a turn
 * (SWITCHBOARD_TEST_FAULT, src/turn/test-fault.ts: the process SIGKILLs itself
 * there) and another worker finishes the turn from its step journal. The tool is
 * an MCP "create ticket" that counts its runs in marker files; the fake model's
 * requests are counted per conversation. Real Redis, Postgres, BullMQ.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const TICKET_SERVER = fileURLToPath(new URL('./fakes/ticket-mcp-server.mjs', import.meta.url));
const OPERATOR_KEY = 'op-durable-turns-0001';
type Msg = { role: string; content: unknown };

/** "three tickets TAG": one create_ticket per model call, three in all, then an answer. "one ticket TAG": one, then what it returned. */
function ticketModel(req: FakeRequest) {
  const msgs = req.body.messages as Msg[];
  const user = lastUserText(req.body);
  const results = msgs.filter((m) => m.role === 'tool');
  const tag = user.split(' ').pop()!;
  if (user.startsWith('three tickets')) {
    if (results.length < 3) return toolCall('desk__create_ticket', { title: `${tag}-t${results.length + 1}` });
    return reply('Made 3 tickets.');
  }
  if (results.length) return reply(`result: ${String(results[results.length - 1]!.content).replace(/\s+/g, ' ')}`);
  return toolCall('desk__create_ticket', { title: `${tag}-t1` });
}

describe('durable turns: a retried turn resumes from its journal', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  let ingress: GatewayProcess;
  let dir: string;
  const workers: GatewayProcess[] = [];
  const env = (autonomy: 'trusted' | 'supervised', fault?: string): Record<string, string> => {
    const config = join(dir, `switchboard-${autonomy}${fault ? '-doomed' : ''}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        // The doomed worker's lease outlives it until the test hands it over (takeOver).
        queue: { lockDurationMs: fault ? 60_000 : 2000, stalledIntervalMs: 1000, recoverAfterMs: 1500, recoverIntervalMs: 1000, backoffMs: 200 },
        tools: { planner: false },
        approvals: { autonomy },
        mcp: {
          servers: [
            {
              name: 'desk',
              transport: 'stdio',
              command: process.execPath,
              args: [TICKET_SERVER],
              env: { TICKET_DIR: dir },
              trusted: true,
              trustWriteTools: true,
            },
          ],
        },
      }),
    );
    return {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_DATA: dir,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      ...(fault ? { SWITCHBOARD_TEST_FAULT: fault } : {}),
    };
  };
  const worker = async (autonomy: 'trusted' | 'supervised', fault?: string) => {
    const w = await GatewayProcess.spawn('worker', env(autonomy, fault));
    workers.push(w);
    await w.waitForLog(/MCP server connected/, 30_000);
    return w;
  };
  const died = (w: GatewayProcess) => eventually(async () => w.proc.signalCode === 'SIGKILL', 60_000);
  /**
   * The retrying worker, once its MCP server is connected (they connect in the background, and
   * a turn taken before would not find the tool): the dead worker's lease on the conversation
   * and its BullMQ job lock expire now, so this worker takes the turn over.
   */
  const takeOver = async (autonomy: 'trusted' | 'supervised', conversation: string) => {
    const w = await worker(autonomy);
    await db.query(`update conversations set lease_until = now() where key like $1`, [`%${conversation}%`]);
    const r = new Redis(redis.url);
    const locks = await r.keys('*:lock');
    if (locks.length) await r.del(...locks);
    await r.quit();
    return w;
  };
  const client = (conversation: string) =>
    new OpenAI({
      apiKey: API_KEY,
      baseURL: `${ingress.url}/v1`,
      maxRetries: 0,
      timeout: 120_000,
      defaultHeaders: { 'X-Switchboard-Conversation': conversation },
    });
  const ask = (conversation: string, text: string) =>
    client(conversation).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: text }] }) as Promise<
      OpenAI.Chat.Completions.ChatCompletion & { switchboard?: { approval?: { code: string } } }
    >;
  const runs = (title: string) => {
    const f = join(dir, title);
    return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0;
  };
  /** The model requests of one conversation (its first user message is unique). */
  const requestsFor = (text: string) => fake.requests.filter((r) => lastUserText(r.body) === text);
  const turnOf = async (key: string) =>
    (await db.query(`select t.* from turns t join conversations c on c.id = t.conversation_id where c.key like $1`, [`%${key}%`])).rows;
  const rolesOf = async (key: string) =>
    (await db.query(`select m.role from messages m join conversations c on c.id = m.conversation_id where c.key like $1 order by m.id`, [`%${key}%`])).rows.map(
      (r) => r.role as string,
    );
  const approve = async (code: string) => {
    const res = await fetch(`${ingress.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(res.status).toBe(200);
  };

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(ticketModel);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
    dir = mkdtempSync(join(tmpdir(), 'sb-durable-'));
    ingress = await GatewayProcess.spawn('ingress', env('supervised'));
  }, 120_000);
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
  });
  afterAll(async () => {
    await ingress?.kill('SIGKILL');
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('a worker killed right after the second of three tool calls: the retry asks the model only what is left, each tool runs once, one answer', async () => {
    const first = await worker('trusted', 'tool-finished:2');
    const text = 'three tickets crash';
    const answer = ask('durable-three', text);
    await died(first);
    expect([runs('crash-t1'), runs('crash-t2'), runs('crash-t3')]).toEqual([1, 1, 0]);
    expect(requestsFor(text)).toHaveLength(2); // killed before the third model call

    const second = await takeOver('trusted', 'durable-three');
    const r = await answer;
    expect(r.choices[0]!.message.content).toBe('Made 3 tickets.');
    expect([runs('crash-t1'), runs('crash-t2'), runs('crash-t3')]).toEqual([1, 1, 1]);
    expect(requestsFor(text)).toHaveLength(4);
    const [turn] = await turnOf('durable-three');
    expect(turn).toMatchObject({ status: 'done', attempt: 2 });
    expect(await rolesOf('durable-three')).toEqual(['user', 'assistant', 'toolResult', 'assistant', 'toolResult', 'assistant', 'toolResult', 'assistant']);
    expect((await db.query('select count(*)::int as n from turn_journal where turn_id = $1', [turn.id])).rows[0].n).toBe(0);
    expect(second.logs.some((l) => l.includes('resuming the turn from its journal'))).toBe(true);

    // The same turn without a crash asks the model as many times.
    const control = 'three tickets calm';
    expect((await ask('durable-calm', control)).choices[0]!.message.content).toBe('Made 3 tickets.');
    expect(requestsFor(control)).toHaveLength(4);
  }, 180_000);

  it('a worker killed between asking for an approval and parking: the retry finds the same approval, the code shown works, the tool runs once', async () => {
    const first = await worker('supervised', 'before-park');
    const text = 'one ticket park';
    const answer = ask('durable-park', text);
    await died(first);
    const asked = (
      await db.query(
        `select a.code, a.status, a.tool_call_id from approvals a join conversations c on c.id = a.conversation_id where c.key like '%durable-park%'`,
      )
    ).rows;
    expect(asked).toEqual([expect.objectContaining({ status: 'pending' })]);

    await takeOver('supervised', 'durable-park');
    const r = await answer;
    expect(r.switchboard?.approval?.code).toBe(asked[0].code);
    expect(requestsFor(text)).toHaveLength(1); // the retry replayed the model's call, it did not ask again
    await approve(asked[0].code);
    await eventually(async () => (await turnOf('durable-park'))[0]?.status === 'done', 60_000);
    expect(runs('park-t1')).toBe(1);
    const after = requestsFor(text);
    expect(after).toHaveLength(2);
    expect(JSON.stringify(after[1]!.body.messages)).toContain('ticket park-t1 created (run 1)');
    const rows = (await db.query(`select a.code, a.status from approvals a join conversations c on c.id = a.conversation_id where c.key like '%durable-park%'`))
      .rows;
    expect(rows).toEqual([{ code: asked[0].code, status: 'executed' }]);
  }, 180_000);

  it('a worker killed after claiming an approved call, before it started: the retry runs it, exactly once', async () => {
    const first = await worker('supervised', 'approval-claimed');
    const text = 'one ticket claim';
    const r = await ask('durable-claim', text);
    const code = r.switchboard!.approval!.code;
    await approve(code);
    await died(first);
    expect(runs('claim-t1')).toBe(0);
    expect((await db.query('select status from approvals where code = $1', [code])).rows[0].status).toBe('executed');

    await takeOver('supervised', 'durable-claim');
    await eventually(async () => (await turnOf('durable-claim'))[0]?.status === 'done', 60_000);
    expect(runs('claim-t1')).toBe(1);
    const last = requestsFor(text).at(-1)!;
    expect(JSON.stringify(last.body.messages)).toContain('ticket claim-t1 created (run 1)');
    expect(JSON.stringify(last.body.messages)).not.toMatch(/already run|may or may not/);
  }, 180_000);

  it('attack: approved while no worker ran, then taken over by an operator: the resumed turn closes without running the call', async () => {
    const first = await worker('supervised');
    const text = 'one ticket held';
    const r = await ask('durable-held', text);
    const code = r.switchboard!.approval!.code;
    // The turn is parked; its worker goes away, so the answer below unparks a turn nobody runs yet.
    await first.kill('SIGKILL');
    await approve(code);
    expect((await turnOf('durable-held'))[0]?.status).toBe('running');
    // The takeover withdraws only pending approvals: this one is decided, its turn no longer parked.
    const conv = (await db.query(`select id from conversations where key like $1`, ['%durable-held%'])).rows[0].id as string;
    const taken = await fetch(`${ingress.url}/v1/conversations/${conv}/takeover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}` },
    });
    expect(taken.status).toBe(201);

    await takeOver('supervised', 'durable-held');
    await eventually(async () => (await turnOf('durable-held'))[0]?.status === 'done', 60_000);
    expect((await turnOf('durable-held'))[0]).toMatchObject({ finish_reason: 'aborted' });
    expect(runs('held-t1')).toBe(0); // the approved call never ran while the operator held the conversation
    expect(requestsFor(text)).toHaveLength(1); // nor was the model asked again
    expect(await rolesOf('durable-held')).toEqual(['user']); // the user's words stay; the agent's unfinished call does not
  }, 180_000);

  it('a worker killed after a non-idempotent call ran, before its result was kept: not run again, the model is told it may or may not have completed', async () => {
    const first = await worker('trusted', 'tool-ran:1');
    const text = 'one ticket unsure';
    const answer = ask('durable-unsure', text);
    await died(first);
    expect(runs('unsure-t1')).toBe(1);

    const second = await takeOver('trusted', 'durable-unsure');
    const r = await answer;
    expect(r.choices[0]!.message.content).toContain('may or may not have completed before a restart; check before repeating it.');
    expect(runs('unsure-t1')).toBe(1);
    expect(requestsFor(text)).toHaveLength(2);
    const warn = second.logs.find((l) => l.includes('may or may not have completed'));
    expect(warn).toBeDefined();
    expect(JSON.parse(warn!)).toMatchObject({ tool: 'desk__create_ticket', toolCallId: expect.stringMatching(/^call_/) });
  }, 180_000);
});
