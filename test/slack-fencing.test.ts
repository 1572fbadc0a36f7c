/**
 * Issue #21, fencing of platform edits queued before a freeze, with real processes and the fake
 * Slack: worker A streams a Slack reply (post and edit) with an edit waiting for its throttle and
 * is frozen (SIGSTOP) longer than its lease; worker B takes the turn over and answers; then A is
 * continued (SIGCONT). A's queued edit must never reach Slack: the thread shows B's one answer.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlm, type FakeRequest, type FakeScript } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, GatewayProcess } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** Process start on a busy machine (2 cores shared by many test runs). */
const SLOW_START = { startTimeoutMs: 120_000 };

const range = (w: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${w}${from + i}`).join(' ');
const B_TEXT = range('beta', 0, 12);
const LOCK_MS = 2_000;
const PREFIX = 'sbslackfence';
const DM = 'D1FENCE';

/** A's answer: one word, a pause (its first post goes out), then words while the next edit waits for its throttle. */
function model(req: FakeRequest): FakeScript {
  if (req.index > 0) return [{ kind: 'text', text: B_TEXT, tokenDelayMs: 20 }];
  return [
    { kind: 'text', text: 'alpha0 ' },
    { kind: 'delay', ms: 1_500 },
    { kind: 'text', text: range('alpha', 1, 40), tokenDelayMs: 150 },
  ];
}

describe('a Slack worker frozen with an edit queued, continued after another worker answered', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];
  let stopped: GatewayProcess | undefined;

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
  });
  afterAll(async () => {
    if (stopped?.proc.exitCode === null) stopped.proc.kill('SIGCONT');
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await Promise.all([llm?.close(), slack?.close()]);
    await redis?.stop();
    await pgdb?.drop();
  });

  it("the continued worker makes no Slack call: the thread shows the replacement's one answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-slack-fence-'));
    const configFor = (name: string, updateIntervalMs: number) => {
      const file = join(dir, `${name}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          dataDir: join(dir, 'data'),
          tools: { planner: false },
          channels: { slack: { mode: 'http', apiUrl: slack.apiUrl, streaming: 'edit', updateIntervalMs } },
          access: { slack: { policy: 'open' } },
          queue: { prefix: PREFIX, lockDurationMs: LOCK_MS, stalledIntervalMs: 1_000, recoverAfterMs: 2_000, recoverIntervalMs: 1_000, backoffMs: 200 },
        }),
      );
      return file;
    };
    const env = (config: string) => ({
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_HTTP_PORT: '0',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      OPENAI_BASE_URL: llm.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
    });
    // A edits at most every 5 s: an edit is always waiting while its words arrive.
    const ingress = await GatewayProcess.spawn('ingress', env(configFor('ingress', 1_000)), SLOW_START);
    procs.push(ingress);
    const a = await GatewayProcess.spawn('worker', env(configFor('a', 5_000)), SLOW_START);
    procs.push(a);

    const ev = slack.userMessage({ user: 'UALICE', channel: DM, text: 'tell me a long story' });
    expect((await postSigned(`${ingress.url}/slack/events`, slack.eventBody(ev))).status).toBe(200);

    // A posted its first words, and has published (so shown its engine) words its message does not show yet.
    const bus = new Redis(redis.url);
    const published = async () => {
      const keys = await bus.keys(`${PREFIX}:bus:conv:*`);
      if (!keys.length) return '';
      const entries = await bus.xrange(keys[0]!, '-', '+');
      return entries.map(([, f]) => (JSON.parse(f[1]!) as { delta?: string }).delta ?? '').join('');
    };
    try {
      await eventually(async () => slack.botMessages(DM).length === 1 && (await published()).includes('alpha3 '), 30_000);
    } finally {
      bus.disconnect();
    }
    a.proc.kill('SIGSTOP');
    stopped = a;
    const [posted] = slack.botMessages(DM);
    // The edit that shows alpha3 is still queued behind A's throttle.
    expect(posted!.text).not.toContain('alpha3');

    // B takes the stalled job over once A's lease has run out, and edits A's message into its answer.
    const b = await GatewayProcess.spawn('worker', env(configFor('b', 200)), SLOW_START);
    procs.push(b);
    await eventually(async () => {
      const t = await db.query<{ status: string }>('select status from turns');
      return t.rows[0]?.status === 'done' && slack.botMessages(DM)[0]?.text === B_TEXT;
    }, 60_000);

    // Continue A: its queued edit comes due at once; the fence must stop it at the call.
    const contAt = Date.now();
    a.proc.kill('SIGCONT');
    stopped = undefined;
    const staleCalls = () => slack.calls.filter((c) => c.at >= contAt && /alpha/.test(JSON.stringify(c.args)));
    await eventually(async () => staleCalls().length > 0 || a.logs.some((l) => l.includes('this delivery makes no more platform calls')), 30_000);

    expect(staleCalls()).toEqual([]);
    // What the user sees: one message, B's answer, never changed back after it showed B's words.
    const shown = slack.botMessages(DM);
    expect(shown).toHaveLength(1);
    expect(shown[0]!.text).toBe(B_TEXT);
    const firstBeta = shown[0]!.history.findIndex((t) => t.includes('beta'));
    expect(firstBeta).toBeGreaterThan(0);
    expect(shown[0]!.history.slice(firstBeta).filter((t) => t.includes('alpha'))).toEqual([]);
    expect((await db.query('select attempt from turns')).rows).toEqual([{ attempt: 2 }]);
  }, 180_000);
});
