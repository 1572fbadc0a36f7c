/**
 * Two replays of one turn's reply at once (a turn handed to the delivery queue when it parked and
 * again when it settled, or the same message queued twice) run one after the other
 * (src/delivery-retries.ts): the second finds the first's deliveries row and posts nothing twice.
 * Attacked with the real SMS deliverer against the Twilio fake: both jobs are queued together
 * with room to run at once, on the in-process queue and on BullMQ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import type { DeliveryJob } from '../kernel/jobs.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { backendSetups } from './support/backends.js';
import { eventually, testConfig } from './support/gateway.js';

const PUBLIC = 'https://sms.example.test/hooks';
const INBOUND = '/v1/channels/sms/inbound';
const TWILIO_NUMBER = '+15550100000';
const USER = '+15550100001';

describe.each(backendSetups())('replays of one turn’s reply, queued together ($name)', (setup) => {
  let llm: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;
  const bodies = () => tw.phone(USER).map((m) => m.body);

  beforeAll(async () => {
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`agent: ${lastUserText(req.body)}`));
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(llm, await setup.backend(), {
      channels: {
        sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_REPLAY_TWILIO_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url, retryBaseMs: 20, retryMaxMs: 50 },
      },
      access: { sms: { policy: 'allowlist', allow: [USER] } },
    });
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_REPLAY_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await llm?.close();
    await setup.cleanup();
  });

  it('post the reply once', async () => {
    await tw.webhook(INBOUND, tw.inboundParams({ from: USER, to: TWILIO_NUMBER, body: 'hello' }));
    await eventually(async () => bodies().includes('agent: hello'), 20_000);
    const row = (
      await gw.infra.store.db.query<{ conversation_id: string; id: number }>(
        `select conversation_id, id from inbox where channel = 'sms' order by id desc limit 1`,
      )
    ).rows[0]!;
    const turnId = 'op_replayed-twice';
    const text = 'This reply is replayed twice at once.';
    const usage = { input: 0, output: 0, totalTokens: 0, cost: 0 };
    const job: DeliveryJob = {
      turnId,
      turnAttempt: 0,
      conversationId: row.conversation_id,
      channel: 'sms',
      inboxIds: [row.id],
      events: [
        { type: 'turn_start', turnId, conversationId: row.conversation_id, inboxIds: [row.id], attempt: 1 },
        { type: 'text_delta', turnId, delta: text },
        { type: 'done', turnId, text, finishReason: 'stop', usage },
      ],
    };
    // No deduplication key: both jobs exist, and the delivery worker (4 at once) takes both together.
    await Promise.all([gw.infra.deliveryJobs.add(job), gw.infra.deliveryJobs.add(job)]);
    await eventually(async () => bodies().includes(text), 20_000);
    await eventually(async () => (await gw.infra.deliveryJobs.counts()).active === 0 && (await gw.infra.deliveryJobs.counts()).waiting === 0, 20_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(bodies().filter((b) => b === text)).toHaveLength(1);
  });
});
