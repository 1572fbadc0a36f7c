/**
 * Delivery, separate from thinking: Slack failing on a turn's final message no longer runs the
 * turn again. The turn closes, a delivery job edits the reply in place (no second post), the model
 * and the tool ran once; a permanent refusal is a dead letter at once, listed for the operator.
 * Real bolt + Slack SDK against the fake Slack Web API, on both topologies (the in-process queue and BullMQ).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type GatewayStatus, gatewayStatus } from '../app/cli/status.js';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { backendSetups } from './support/backends.js';
import { eventually, readyz, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_SECRET = SIGNING_SECRET;

/** "check: X" calls a read-only tool, then answers "Final answer for X"; "write: F" writes a file, which needs an approval. */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const text = lastUserText(req.body);
  if (msgs[msgs.length - 1]!.role === 'tool') return reply(`Final answer for ${text.replace(/^\w+: /, '')}`);
  const write = /^write: (.+)$/.exec(text);
  return write ? toolCall('file_write', { path: write[1], content: 'hi' }) : toolCall('current_time', {});
}

describe.each(backendSetups())('delivery retries ($name)', (setup) => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;
  let events: string;
  let n = 0;

  const turnOf = async (externalId: string) =>
    (
      await gw.infra.store.db.query<{ id: string; attempt: number; status: string }>(
        `select t.id, t.attempt, t.status from inbox i join turns t on t.id = i.turn_id where i.channel = 'slack' and i.external_id = $1`,
        [externalId],
      )
    ).rows;
  /** The turn answering a message has closed (the delivery job runs after this; the turn's own delivery before). */
  const closed = async (externalId: string) => (await turnOf(externalId)).some((t) => t.status !== 'running');
  const deadLetters = async () => {
    const r = await fetch(`${gw.url}/v1/deliveries/dead-letters`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
    expect(r.status).toBe(200);
    return ((await r.json()) as { data: Array<Record<string, unknown>> }).data;
  };
  /** The model's requests for one question: the first (asked) and those after its tool (the tool ran). */
  const modelCalls = (question: string) => {
    const mine = llm.requests.filter((r) => lastUserText(r.body) === question);
    return {
      asked: mine.filter((r) => r.body.messages.at(-1).role !== 'tool').length,
      afterTool: mine.filter((r) => r.body.messages.at(-1).role === 'tool').length,
    };
  };

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    gw = await startGateway(
      testConfig(llm, await setup.backend(), {
        channels: {
          slack: {
            mode: 'http',
            apiUrl: slack.apiUrl,
            botTokenEnv: 'SB_TEST_SLACK_BOT',
            signingSecretEnv: 'SB_TEST_SLACK_SECRET',
            streaming: 'edit',
            updateIntervalMs: 200,
            // The turn's own delivery gives up at the first failure of its final edit: the delivery job takes over.
            deliveryTimeoutMs: 0,
          },
        },
        access: { slack: { policy: 'open' } },
        approvals: { operators: { slack: ['UOPERATOR'] }, timeoutMs: 60_000 },
        queue: { deliveryAttempts: 5, deliveryBackoffMs: 200 },
      }),
    );
    events = `${gw.url}/slack/events`;
    await eventually(async () => ((await (await readyz(gw.url!)).json()) as any).checks['channel:slack']?.ok === true);
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
    await setup.cleanup();
  }, 60_000);
  beforeEach(() => {
    slack.clearFaults();
    n++;
  });

  it('the final chat.update fails with a 5xx twice: one reply, edited in place; the model and the tool ran once', async () => {
    const ch = `D${n}`;
    const final = `Final answer for retry ${n}`;
    const ev = slack.userMessage({ user: 'UALICE', channel: ch, text: `check: retry ${n}` });
    // Every edit to the final text fails while the turn runs (so its own delivery gives up on closing),
    // then once more: the delivery job's first try. Its second succeeds.
    slack.failNext('chat.update', 1_000, { status: 503, when: async (a) => a.channel === ch && a.text === final && !(await closed(ev.client_msg_id)) });
    slack.failNext('chat.update', 1, { status: 503, when: (a) => a.channel === ch && a.text === final });
    expect((await postSigned(events, slack.eventBody(ev))).status).toBe(200);

    const shown = await eventually(async () => slack.botMessages(ch).find((m) => m.text === final), 30_000);
    // The turn's own delivery failed on the final edit at least once, the delivery job once, then it succeeded.
    const failed = slack.callsOf('chat.update').filter((c) => c.args.channel === ch && c.failedWith === 503);
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(slack.faultsLeft).toBe(1_000 - (failed.length - 1));
    // One message in the DM, edited in place: one post, the final text shown once.
    expect(slack.botMessages(ch)).toHaveLength(1);
    expect(slack.callsOf('chat.postMessage').filter((c) => c.args.channel === ch)).toHaveLength(1);
    expect(shown.history.filter((t) => t === final)).toHaveLength(1);
    // Thinking happened once: asked once, the tool ran once, the turn closed on its first attempt.
    expect(modelCalls(`check: retry ${n}`)).toEqual({ asked: 1, afterTool: 1 });
    const turns = await turnOf(ev.client_msg_id);
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ attempt: 1, status: 'done' });
    // The delivery job records the row as done just after Slack answered the edit the test saw.
    const rows = async () => (await gw.infra.deliveries.forTurn(turns[0]!.id)).map((r) => [r.target, r.state]);
    await eventually(async () => (await rows()).every(([, state]) => state === 'done'), 10_000).catch(() => undefined);
    expect(await rows()).toEqual([[`msg:${ch}:0`, 'done']]);
    expect((await deadLetters()).filter((d) => d.turn === turns[0]!.id)).toEqual([]);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_delivery_jobs_total\{channel="slack",outcome="delivered"\} [1-9]/);
  }, 60_000);

  it('an approval request Slack did not take while the turn parked is posted by the delivery job, once; the model is not asked again', async () => {
    const ch = `D${n}`;
    const ev = slack.userMessage({ user: 'UALICE', channel: ch, text: `write: notes-${n}.txt` });
    // Every post of the request (the message with buttons) fails until the turn has parked.
    slack.failNext('chat.postMessage', 1_000, { status: 503, when: async (a) => a.channel === ch && !!a.blocks && !(await closed(ev.client_msg_id)) });
    expect((await postSigned(events, slack.eventBody(ev))).status).toBe(200);

    const request = await eventually(async () => slack.botMessages(ch).find((m) => m.blocks?.some((b) => b.type === 'actions')), 30_000);
    const failed = slack.callsOf('chat.postMessage').filter((c) => c.args.channel === ch && c.failedWith === 503);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    const code = request.blocks!.find((b) => b.type === 'actions')!.elements[0].value as string;
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    const turns = await turnOf(ev.client_msg_id);
    expect(turns).toMatchObject([{ attempt: 1, status: 'parked' }]);
    // The reply with the waiting call, then the request: two messages, the request once.
    await new Promise((r) => setTimeout(r, 1_000));
    const msgs = slack.botMessages(ch);
    expect(msgs.filter((m) => m.blocks?.some((b) => b.type === 'actions'))).toHaveLength(1);
    expect(msgs).toHaveLength(2);
    expect(msgs[0]!.text).toContain(`waiting for approval (code ${code})`);
    expect(modelCalls(`write: notes-${n}.txt`)).toEqual({ asked: 1, afterTool: 0 });
  }, 60_000);

  it('a permanent refusal in the delivery job is a dead letter after one attempt, listed for the operator; nothing is retried', async () => {
    const ch = `D${n}`;
    const final = `Final answer for refusal ${n}`;
    const ev = slack.userMessage({ user: 'UALICE', channel: ch, text: `check: refusal ${n}` });
    // The turn's final edit meets an outage; the delivery job's edit a refusal.
    const mine = (a: Record<string, any>) => a.channel === ch && a.text === final;
    slack.failNext('chat.update', 1_000, { status: 503, when: async (a) => mine(a) && !(await closed(ev.client_msg_id)) });
    slack.failNext('chat.update', 1, { error: 'channel_not_found', when: mine });
    expect((await postSigned(events, slack.eventBody(ev))).status).toBe(200);

    const turn = await eventually(async () => (await turnOf(ev.client_msg_id)).find((t) => t.status === 'done'), 30_000);
    const dead = await eventually(async () => (await deadLetters()).find((d) => d.turn === turn.id), 30_000);
    expect(dead).toMatchObject({ channel: 'slack', code: 'channel_delivery_refused:channel_not_found', attempts: 1 });
    expect(typeof dead.conversation).toBe('string');
    // Well past the job's backoff: no further try.
    await new Promise((r) => setTimeout(r, 1_500));
    const tries = slack.callsOf('chat.update').filter((c) => c.args.channel === ch && c.args.text === final);
    expect(tries.filter((c) => c.failedWith === 503).length).toBeGreaterThanOrEqual(1);
    expect(tries.filter((c) => c.failedWith === 'channel_not_found')).toHaveLength(1); // the delivery job tried once
    expect(tries.filter((c) => c.failedWith === undefined)).toHaveLength(0);
    expect(slack.faultsLeft).toBe(1_000 - tries.filter((c) => c.failedWith === 503).length);
    expect(slack.botMessages(ch).some((m) => m.text === final)).toBe(false);
    expect(modelCalls(`check: refusal ${n}`)).toEqual({ asked: 1, afterTool: 1 });
    expect(turn.attempt).toBe(1);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_delivery_dead_letters_total\{channel="slack",code="channel_delivery_refused:channel_not_found"\} 1/);
    // `switchboard status` counts them.
    expect(((await gatewayStatus(gw.url!, TEST_OPERATOR_KEY)) as GatewayStatus).deadDeliveries).toBeGreaterThanOrEqual(1);
    // Only an operator sees them.
    const r = await fetch(`${gw.url}/v1/deliveries/dead-letters`, { headers: { authorization: 'Bearer sk-test-key-0001' } });
    expect(r.status).toBe(403);
  }, 60_000);
});
