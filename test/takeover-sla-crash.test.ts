/**
 * The SLA expiry notice survives a worker dying between firing the SLA and queueing the notice
 * (issue #26 follow-up). The gateway runs as its own OS process with SWITCHBOARD_TEST_FAULT
 * (src/turn/test-fault.ts): `sla-fired` SIGKILLs it right after the statement that fired the SLA
 * committed (the request claimed, the note in the transcript) and before the user's notice went to
 * the delivery queue; `sla-notice-queued` right after the notice was queued, before it was marked
 * sent (so it is queued a second time). Restarted, the gateway's sweep finds the notice unsent past
 * its lease and sends it: the user's phone (the Twilio fake) receives it exactly once. Both
 * backends: Redis + Postgres, and the embedded store in its data directory.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../adapters/db/pglite.js';
import { NOTICE } from '../src/handoffs/text.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { API_KEY, eventually, GatewayProcess, TEST_OPERATOR_KEY } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550100000';
const USER = '+15550100001';

// sla-fired: dead before the notice was queued; sla-notice-queued: dead after queueing it, before marking it sent (queued twice: the delivery's row keeps it one message).
const cases = [
  { name: 'Redis + Postgres', external: true },
  { name: 'embedded (PGlite)', external: false },
].flatMap((b) => (['sla-fired', 'sla-notice-queued'] as const).map((fault) => ({ ...b, fault, label: `${b.name}, killed at ${fault}` })));

describe.each(cases)('the SLA notice after a worker dies between firing and sending it: $label', ({ external, fault }) => {
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let redis: TestRedis | undefined;
  let pgdb: TestDatabase | undefined;
  let dir: string;
  const procs: GatewayProcess[] = [];

  const env = (fault?: string): Record<string, string> => {
    const config = join(dir, 'switchboard.json');
    writeFileSync(
      config,
      JSON.stringify({
        tools: { planner: false },
        // 0.02 minutes: 1.2 s, swept every 100 ms; the agent answers again after (resume).
        takeover: { slaMinutes: 0.02, onSlaExpiry: 'resume', pollMs: 100 },
        // A dead worker's delivery job is taken over within seconds, as in the other crash tests.
        queue: { backoffMs: 100, lockDurationMs: 2000, stalledIntervalMs: 1000, recoverAfterMs: 1500, recoverIntervalMs: 1000 },
        channels: {
          sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_TKO_CRASH_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url, retryBaseMs: 20, retryMaxMs: 50 },
        },
        access: { sms: { policy: 'allowlist', allow: [USER] } },
      }),
    );
    return {
      ...(external ? { REDIS_URL: redis!.url, DATABASE_URL: pgdb!.url } : {}),
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_DATA: dir,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_OPERATOR_KEYS: TEST_OPERATOR_KEY,
      OPENAI_BASE_URL: llm.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SB_TKO_CRASH_TOKEN: tw.authToken,
      ...(fault ? { SWITCHBOARD_TEST_FAULT: fault } : {}),
    };
  };
  const start = async (fault?: string) => {
    const p = await GatewayProcess.spawn('start', env(fault));
    procs.push(p);
    tw.gatewayUrl = p.url!;
    return p;
  };
  const handoffRow = async (p: GatewayProcess) => {
    const r = await fetch(`${p.url}/v1/handoffs?recent=5`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
    return (((await r.json()) as any).data as any[])[0];
  };
  /** A statement on the gateway's store while no gateway runs (the embedded one's folder is free then). */
  const sql = async (text: string): Promise<number> => {
    if (external) {
      const db = new pg.Pool({ connectionString: pgdb!.url });
      try {
        return (await db.query(text)).rowCount ?? 0;
      } finally {
        await db.end();
      }
    }
    const db = await openPglite(join(dir, 'pglite'));
    try {
      return (await db.query(text)).rowCount;
    } finally {
      await db.close();
    }
  };
  const notices = () => tw.phone(USER).filter((m) => m.body === NOTICE.slaResume).length;

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => {
      const last = (req.body.messages as Array<{ role: string }>).at(-1)!;
      if (last.role === 'tool') return reply('I have asked a human to join us.');
      const text = lastUserText(req.body);
      return text.includes('a human please') ? toolCall('request_handoff', { reason: 'the user asks for a person', urgency: 'high' }) : reply(`agent: ${text}`);
    });
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    if (external) {
      redis = await TestRedis.start();
      pgdb = await createTestDatabase();
    }
    dir = mkdtempSync(join(tmpdir(), 'sb-sla-crash-'));
  }, 120_000);
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => p.kill('SIGKILL')));
  });
  afterAll(async () => {
    await tw?.close();
    await llm?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('the restarted gateway sends the notice the dead one did not, exactly once', async () => {
    const doomed = await start(fault);
    await tw.webhook(INBOUND, tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body: 'I want a human please' }));
    await eventually(async () => tw.phone(USER).some((m) => m.body === 'I have asked a human to join us.'), 30_000);
    // The SLA passes; the sweep fires it and the process dies before the notice is queued.
    await eventually(async () => doomed.proc.signalCode === 'SIGKILL', 30_000);
    if (fault === 'sla-fired') expect(notices()).toBe(0);

    // The dead worker's lease on the notice (a minute in production) lapses now, as a crash test hands a dead worker's lease over.
    const fired = await sql(`update handoffs set sla_notice_lease_until = now() where sla_fired_at is not null and sla_notice_sent_at is null`);
    expect(fired).toBe(1);

    const revived = await start();
    const h = await eventually(async () => {
      const row = await handoffRow(revived);
      return row?.state === 'expired' ? row : null;
    });
    expect(h.slaFiredAt).toEqual(expect.any(String));
    await eventually(async () => notices() === 1, 60_000);
    // It was this sweep's doing, and later sweeps send nothing more: still one notice.
    await revived.waitForLog(/sending the SLA notice of a request whose worker did not send it/);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(notices()).toBe(1);
    // The agent answers again.
    await tw.webhook(INBOUND, tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body: 'hello again' }));
    await eventually(async () => tw.phone(USER).some((m) => m.body === 'agent: hello again'), 30_000);
  }, 150_000);
});
