/**
 * Issue #21: a retried ApprovalService.request (the same journal step) asks nobody again. A Slack
 * worker dies after the approval row is written (before the request is shown, and after it was
 * shown but before the turn parked); the worker that takes over replays the journaled tool call and
 * finds the same approval. What people see: one request with buttons in the thread, one in the
 * operators' channel, one audit row, and the button they were shown approves the call, which runs once.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, GatewayProcess } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** Process start on a busy machine (2 cores shared by many test runs). */
const SLOW_START = { startTimeoutMs: 120_000 };

const OPERATOR = 'UOPS';
const OPS_CHANNEL = 'COPS';
const PREFIX = 'sbapretry';

function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  if (msgs[msgs.length - 1]!.role === 'tool') return reply('marked it');
  return toolCall('shell_exec', { command: 'echo ran >> marker.txt' });
}

describe('a worker dies after writing an approval, before parking its turn', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  let dir: string;
  let ingress: GatewayProcess;
  const workers: GatewayProcess[] = [];

  const env = (fault?: string) => {
    const config = join(dir, `switchboard${fault ? `-${fault}` : ''}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        dataDir: join(dir, 'data'),
        tools: { planner: false },
        approvals: { autonomy: 'supervised', operators: { slack: [OPERATOR] }, operatorChannel: { channel: 'slack', target: OPS_CHANNEL } },
        channels: { slack: { mode: 'http', apiUrl: slack.apiUrl, streaming: 'edit', updateIntervalMs: 200 } },
        access: { slack: { policy: 'open' } },
        queue: { prefix: PREFIX, lockDurationMs: 2_000, stalledIntervalMs: 1_000, recoverAfterMs: 1_500, recoverIntervalMs: 1_000, backoffMs: 200 },
      }),
    );
    return {
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
    };
  };

  /** The chat.postMessage calls to a channel that carried this approval code. */
  const postsOf = (code: string, channel: string) =>
    slack.callsOf('chat.postMessage').filter((c) => c.args.channel === channel && !c.failedWith && JSON.stringify(c.args).includes(code));

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
    dir = mkdtempSync(join(tmpdir(), 'sb-approval-retry-'));
    ingress = await GatewayProcess.spawn('ingress', env(), SLOW_START);
  }, 120_000);
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')));
  });
  afterAll(async () => {
    await ingress?.kill('SIGKILL');
    await db?.end();
    await Promise.all([llm?.close(), slack?.close()]);
    await redis?.stop();
    await pgdb?.drop();
  });

  it.each([
    ['approval-created', 'before the request was shown'],
    ['before-park', 'after the request was shown'],
  ])(
    'killed at %s (%s): one request shown, one audit row, the button shown works, the command runs once',
    async (fault) => {
      const channel = `D${fault.replace(/-/g, '').toUpperCase()}`;
      const doomed = await GatewayProcess.spawn('worker', env(fault), SLOW_START);
      workers.push(doomed);
      const ev = slack.userMessage({ user: 'UALICE', channel, text: 'please mark it' });
      expect((await postSigned(`${ingress.url}/slack/events`, slack.eventBody(ev))).status).toBe(200);
      await eventually(async () => doomed.proc.signalCode === 'SIGKILL', 60_000);
      const rows = async () =>
        (
          await db.query<{ code: string; status: string; conversation_id: string }>(
            `select a.code, a.status, a.conversation_id from approvals a join conversations c on c.id = a.conversation_id where c.key like $1`,
            [`%${channel}%`],
          )
        ).rows;
      const [written] = await rows();
      expect(written).toMatchObject({ status: 'pending' });

      // Another worker takes the turn over and asks again: it finds the same approval.
      workers.push(await GatewayProcess.spawn('worker', env(), SLOW_START));
      const isRequest = (m: { blocks?: any[] }) => m.blocks?.some((b) => b.type === 'actions');
      const request = await eventually(async () => slack.botMessages(channel).find(isRequest), 60_000);
      await eventually(
        async () => (await db.query(`select status from turns where conversation_id = $1`, [written!.conversation_id])).rows[0]?.status === 'parked',
        60_000,
      );
      const code = request.blocks!.find((b) => b.type === 'actions')!.elements[0].value as string;
      expect(code).toBe(written!.code);
      expect(slack.botMessages(channel).filter(isRequest)).toHaveLength(1);
      expect(postsOf(code, channel)).toHaveLength(1);
      const toOperators = slack.botMessages(OPS_CHANNEL).filter((m) => JSON.stringify(m.blocks ?? m.text).includes(code));
      // Posted once, by the attempt that wrote the row (fire and forget: a worker killed right after may not have sent it).
      if (fault === 'before-park') expect(toOperators).toHaveLength(1);
      else expect(toOperators.length).toBeLessThanOrEqual(1);
      const audit = (await db.query(`select action from audit where subject = $1 and action = 'approval.requested'`, [code])).rows;
      expect(audit).toHaveLength(1);

      // The button the user was shown approves the call; the turn finishes, the command ran once.
      const click = await postSigned(
        `${ingress.url}/slack/events`,
        slack.blockAction({ user: OPERATOR, message: slack.messages.get(request.ts)!, actionId: 'sb_approve', value: code }),
        { form: true },
      );
      expect(click.status).toBe(200);
      await eventually(async () => slack.botMessages(channel).some((m) => !isRequest(m) && /marked it/.test(m.text)), 60_000);
      expect(await rows()).toEqual([expect.objectContaining({ code, status: 'executed' })]);
      const marker = join(workspaceFor(join(dir, 'data'), written!.conversation_id), 'marker.txt');
      expect(existsSync(marker) && readFileSync(marker, 'utf8')).toBe('ran\n');
      // One request was ever posted to the conversation (chat.postMessage calls carrying its code).
      expect(postsOf(code, channel)).toHaveLength(1);
    },
    240_000,
  );
});
