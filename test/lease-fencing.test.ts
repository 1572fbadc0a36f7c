/**
 * Issue #21, scenario 3, with real processes: a worker frozen (SIGSTOP) longer
 * than the queue lock while it streams a turn; a second worker takes the turn
 * over and finishes it; then the frozen one is continued (SIGCONT). Its lease
 * is gone: it must publish nothing more and run no tool, so the client sees one
 * coherent answer and a caution-tier command (autonomy `trusted`) runs once.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, openaiClient } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const words = (w: string, n: number) => Array.from({ length: n }, (_, i) => `${w}${i}`).join(' ');
/** The frozen worker's first answer, streamed slowly (about 4 s) so it is frozen mid-stream. */
const A_TEXT = words('alpha', 20);
/** The same first model call made again by the worker that takes over: told apart by its words. */
const B_TEXT = words('beta', 20);
const DONE_TEXT = words('gamma', 8);
const MARK_COMMAND = 'echo ran >> marker.txt';
const LOCK_MS = 2_000;
const PREFIX = 'sbfence';

type Msg = { role: string };

function model(req: FakeRequest) {
  const msgs = req.body.messages as Msg[];
  if (msgs[msgs.length - 1]!.role === 'tool') return reply(DONE_TEXT, 20);
  const call = toolCall('shell_exec', { command: MARK_COMMAND, timeoutSeconds: 20 });
  // The first call is the worker that will be frozen; any later one is the worker that took over.
  return req.index === 0 ? [...reply(`${A_TEXT} `, 200), ...call] : [...reply(`${B_TEXT} `, 120), ...call];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a worker frozen longer than its lease (SIGSTOP, then SIGCONT) while another finishes its turn', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];
  let stopped: GatewayProcess | undefined;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(model);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
  });
  afterAll(async () => {
    // A process still stopped would never see its SIGKILL queued behind SIGCONT otherwise.
    if (stopped?.proc.exitCode === null) stopped.proc.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('the continued worker publishes nothing more and runs no tool: one coherent answer, the command ran once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-fence-'));
    const dataDir = join(dir, 'data');
    const config = join(dir, 'switchboard.json');
    writeFileSync(
      config,
      JSON.stringify({
        dataDir,
        approvals: { autonomy: 'trusted' },
        tools: { planner: false },
        queue: { prefix: PREFIX, lockDurationMs: LOCK_MS, stalledIntervalMs: 1_000, recoverAfterMs: 2_000, recoverIntervalMs: 1_000, backoffMs: 200 },
      }),
    );
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
    };
    const ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress);
    const a = await GatewayProcess.spawn('worker', env);
    procs.push(a);

    const client = openaiClient(ingress.url!, API_KEY, { 'X-Switchboard-Conversation': 'fence-1' });
    const stream = await client.chat.completions.create({
      model: 'default',
      stream: true,
      messages: [{ role: 'user', content: `please run ${MARK_COMMAND} and tell me` }],
    });
    let text = '';
    let finished = false;
    const reading = (async () => {
      for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
      finished = true;
    })();

    // Worker A streams the first answer: freeze it a few words in.
    await eventually(async () => text.split(' ').length >= 3, 30_000);
    a.proc.kill('SIGSTOP');
    stopped = a;
    const frozenAt = Date.now();
    const seenBeforeFreeze = text;

    // Worker B starts, finds the job stalled and the lease expired, and runs the turn again.
    const b = await GatewayProcess.spawn('worker', env);
    procs.push(b);
    await eventually(async () => text.includes('beta4'), 45_000);
    expect(Date.now() - frozenAt).toBeGreaterThan(LOCK_MS);

    // B is streaming: continue A now, while both would stream if nothing fenced A.
    const contAt = Date.now();
    a.proc.kill('SIGCONT');
    stopped = undefined;
    await reading;
    expect(finished).toBe(true);
    // Give A time to do whatever it would still do (stream, run the tool, call the model again).
    await sleep(4_000);

    // What the client saw: the few words of A's attempt before the freeze, then B's answer whole, nothing of A in it.
    const cut = text.indexOf('beta0');
    expect(cut).toBeGreaterThan(0);
    const before = text.slice(0, cut).trim();
    const after = text.slice(cut);
    expect(A_TEXT.startsWith(before)).toBe(true);
    expect(seenBeforeFreeze.trim().startsWith(before.split(' ')[0]!)).toBe(true);
    expect(after).not.toMatch(/alpha/);
    expect(after.replace(/\s+/g, ' ').trim()).toBe(`${B_TEXT} ${DONE_TEXT}`);

    // The stored answer is B's alone.
    const assistant = (
      await db.query<{ content: { content: Array<{ type: string; text?: string }> } }>(`select content from messages where role = 'assistant' order by id`)
    ).rows;
    const stored = assistant
      .flatMap((m) => m.content.content)
      .filter((c) => c.type === 'text')
      .map((c) => c.text)
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    expect(stored).toBe(`${B_TEXT} ${DONE_TEXT}`);
    const turns = (await db.query('select status, attempt, worker from turns')).rows;
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ status: 'done', attempt: 2 });
    expect(turns[0].worker).toContain(`:${b.proc.pid}`);

    // The caution-tier command ran once (trusted autonomy runs it unasked), in B's attempt only.
    const conv = (await db.query<{ id: string }>('select id from conversations')).rows[0]!;
    const marker = join(workspaceFor(dataDir, conv.id), 'marker.txt');
    expect(existsSync(marker)).toBe(true);
    expect(readFileSync(marker, 'utf8')).toBe('ran\n');
    // A made no model call after it was continued: its first, then B's two.
    expect(fake.requests).toHaveLength(3);

    // The bus: no event of A's text was published after A was continued.
    const r = new Redis(redis.url);
    try {
      const keys = await r.keys(`${PREFIX}:bus:conv:*`);
      expect(keys).toHaveLength(1);
      const entries = await r.xrange(keys[0]!, '-', '+');
      const events = entries.map(([id, fields]) => ({ at: Number(id.split('-')[0]), e: JSON.parse(fields[1]!) as { type: string; delta?: string } }));
      const alpha = events.filter((x) => x.e.type === 'text_delta' && /alpha/.test(x.e.delta ?? ''));
      expect(alpha.length).toBeGreaterThan(0);
      for (const x of alpha) expect(x.at).toBeLessThan(contAt);
      expect(events.filter((x) => x.e.type === 'tool_start')).toHaveLength(1);
    } finally {
      r.disconnect();
    }
    // A says why it stopped.
    await a.waitForLog(/lease/, 10_000);
    expect(a.logs.some((l) => l.includes('the conversation lease was lost mid-turn'))).toBe(true);
  }, 180_000);
});
