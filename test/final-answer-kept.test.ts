/**
 * Issue #21, resume not rerun while a turn closes: the model's final text-only answer is written
 * by the settle statement with the transcript (a quick close costs no journal statement), and is
 * journaled first when the close takes long: here Slack refuses the reply (503s) while the worker
 * keeps retrying, and the worker dies then (SIGKILL at `final-kept`). The worker that takes over
 * replays the answer into Slack: the model is asked once, the thread shows one answer.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, GatewayProcess } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** Process start on a busy machine (2 cores shared by many test runs). */
const SLOW_START = { startTimeoutMs: 120_000 };
const DM = 'DKEPT';
const ANSWER = 'The answer is forty-two, kept once.';

describe('a worker that dies while a slow channel holds up the close of its turn', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(() => reply(ANSWER));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await Promise.all([llm?.close(), slack?.close()]);
    await redis?.stop();
    await pgdb?.drop();
  });

  it('the retry replays the journaled answer: the model is asked once, the thread shows it once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-final-kept-'));
    const config = join(dir, 'switchboard.json');
    writeFileSync(
      config,
      JSON.stringify({
        dataDir: join(dir, 'data'),
        tools: { planner: false },
        channels: { slack: { mode: 'http', apiUrl: slack.apiUrl, streaming: 'edit', updateIntervalMs: 200 } },
        access: { slack: { policy: 'open' } },
        queue: { lockDurationMs: 2_000, stalledIntervalMs: 1_000, recoverAfterMs: 1_500, recoverIntervalMs: 1_000, backoffMs: 200 },
      }),
    );
    const env = (fault?: string) => ({
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_HTTP_PORT: '0',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      OPENAI_BASE_URL: llm.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      ...(fault ? { SWITCHBOARD_TEST_FAULT: fault } : {}),
    });
    const ingress = await GatewayProcess.spawn('ingress', env(), SLOW_START);
    procs.push(ingress);
    const doomed = await GatewayProcess.spawn('worker', env('final-kept'), SLOW_START);
    procs.push(doomed);

    // Slack answers 503 to the reply's post for a while: the turn's own delivery keeps retrying.
    slack.failNext('chat.postMessage', 50, { status: 503, when: (args) => args.channel === DM });
    const ev = slack.userMessage({ user: 'UALICE', channel: DM, text: 'what is the answer?' });
    expect((await postSigned(`${ingress.url}/slack/events`, slack.eventBody(ev))).status).toBe(200);
    await eventually(async () => doomed.proc.signalCode === 'SIGKILL', 60_000);
    expect(slack.botMessages(DM)).toEqual([]);
    const journaled = await db.query(`select kind from turn_journal`);
    expect(journaled.rows).toEqual([{ kind: 'model' }]);

    slack.clearFaults();
    const second = await GatewayProcess.spawn('worker', env(), SLOW_START);
    procs.push(second);
    await eventually(async () => (await db.query<{ status: string }>('select status from turns')).rows[0]?.status === 'done', 60_000);
    await eventually(async () => slack.botMessages(DM)[0]?.text.includes('forty-two'), 30_000);

    expect(llm.requests.filter((r) => lastUserText(r.body) === 'what is the answer?')).toHaveLength(1);
    const shown = slack.botMessages(DM);
    expect(shown).toHaveLength(1);
    expect(shown[0]!.text).toBe(ANSWER);
    expect((await db.query('select status, attempt from turns')).rows).toEqual([{ status: 'done', attempt: 2 }]);
    expect((await db.query('select count(*)::int as n from turn_journal')).rows[0].n).toBe(0);
    expect(second.logs.some((l) => l.includes('resuming the turn from its journal'))).toBe(true);
  }, 240_000);
});
