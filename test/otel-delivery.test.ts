/**
 * Delivery spans, one per attempt: a Slack reply whose final edit fails is handed to the delivery
 * queue, and the turn's `deliver slack` span says so (an error, `handed_over`); each try of the
 * delivery job is a `deliver slack` span of the turn's trace with its attempt number and how it ended
 * (`retry`, `delivered`, `dead_letter`). A gateway in this process (embedded) exports over OTLP/HTTP to
 * a local receiver; real bolt + Slack SDK against the fake Slack Web API.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { OtlpReceiver, type ReceivedSpan } from './fakes/otlp-receiver.js';
import { BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, readyz, startGateway, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_SECRET = SIGNING_SECRET;

/** "check: X" calls a read-only tool, then answers "Final answer for X". */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string }>;
  if (msgs[msgs.length - 1]!.role === 'tool') return reply(`Final answer for ${lastUserText(req.body).replace(/^\w+: /, '')}`);
  return toolCall('current_time', {});
}

const ERROR = 2;

describe('delivery spans over OTLP/HTTP', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let receiver: OtlpReceiver;
  let gw: Gateway;
  let events: string;
  let n = 0;
  const saved = { ...process.env };

  const turnOf = async (externalId: string) =>
    (
      await gw.infra.store.db.query<{ id: string; status: string }>(
        `select t.id, t.status from inbox i join turns t on t.id = i.turn_id where i.channel = 'slack' and i.external_id = $1`,
        [externalId],
      )
    ).rows;
  const deliverSpans = (turnSpan: ReceivedSpan) => receiver.spans.filter((s) => s.name === 'deliver slack' && s.traceId === turnSpan.traceId);
  /** The delivery job's spans of a turn, by attempt. */
  const jobSpans = (turnSpan: ReceivedSpan) =>
    deliverSpans(turnSpan)
      .filter((s) => s.attributes['messaging.message.delivery_count'] !== undefined)
      .sort((a, b) => Number(a.attributes['messaging.message.delivery_count']) - Number(b.attributes['messaging.message.delivery_count']));

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    receiver = new OtlpReceiver();
    await Promise.all([llm.start(), slack.start(), receiver.start()]);
    llm.respond(model);
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
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
          queue: { deliveryAttempts: 4, deliveryBackoffMs: 200 },
        },
      ),
    );
    events = `${gw.url}/slack/events`;
    await eventually(async () => ((await (await readyz(gw.url!)).json()) as any).checks['channel:slack']?.ok === true);
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    process.env = saved;
    await Promise.all([llm?.close(), slack?.close(), receiver?.close()]);
  }, 60_000);
  beforeEach(() => {
    slack.clearFaults();
    n++;
  });

  /** Sends "check: trace N" and waits for its turn's span (closed: the turn is done). */
  async function ask(ch: string, arm: (final: string) => void) {
    const final = `Final answer for trace ${n}`;
    const ev = slack.userMessage({ user: 'UALICE', channel: ch, text: `check: trace ${n}` });
    arm(final);
    expect((await postSigned(events, slack.eventBody(ev))).status).toBe(200);
    const turnId = await eventually(async () => (await turnOf(ev.client_msg_id)).find((t) => t.status === 'done')?.id, 30_000);
    const turnSpan = await eventually(async () => receiver.spans.find((s) => s.name === 'turn' && s.attributes['switchboard.turn.id'] === turnId), 20_000);
    // The turn's own delivery: a child of the turn, failed, handed over (nothing was thrown through the turn).
    const own = await eventually(async () =>
      deliverSpans(turnSpan).find((s) => s.parentSpanId === turnSpan.spanId && s.attributes['messaging.message.delivery_count'] === undefined),
    );
    expect(own.kind).toBe(4); // producer
    expect(own.status?.code).toBe(ERROR);
    expect(own.attributes['switchboard.delivery.outcome']).toBe('handed_over');
    expect(turnSpan.status?.code).not.toBe(ERROR);
    return { final, turnSpan };
  }

  it('the final edit fails, the delivery job fails once and then delivers: a span per attempt, in the turn trace', async () => {
    const ch = `D${n}`;
    const { final, turnSpan } = await ask(ch, (final) => {
      // Every edit to the final text fails (the Slack client's own retries included) until a try of the
      // delivery job has failed: the turn's own delivery gives up, then the job's first try.
      const retried = () => receiver.spans.some((s) => s.name === 'deliver slack' && s.attributes['switchboard.delivery.outcome'] === 'retry');
      slack.failNext('chat.update', 1_000, { status: 503, when: (a) => a.channel === ch && a.text === final && !retried() });
    });
    await eventually(async () => slack.botMessages(ch).find((m) => m.text === final), 30_000);
    // The job's tries until one delivers (its first may still meet the faults of the turn's own delivery).
    const jobs = await eventually(
      async () => (jobSpans(turnSpan).some((s) => s.attributes['switchboard.delivery.outcome'] === 'delivered') ? jobSpans(turnSpan) : null),
      20_000,
    );
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    for (const s of jobs) {
      expect(s.parentSpanId).toBe(turnSpan.spanId);
      expect(s.kind).toBe(4);
      expect(s.attributes['switchboard.turn.id']).toBe(turnSpan.attributes['switchboard.turn.id']);
    }
    expect(jobs.map((s) => s.attributes['messaging.message.delivery_count'])).toEqual(jobs.map((_, i) => i + 1));
    expect(jobs.map((s) => [s.attributes['switchboard.delivery.outcome'], s.status?.code === ERROR])).toEqual([
      ...jobs.slice(1).map(() => ['retry', true]),
      ['delivered', false],
    ]);
  }, 60_000);

  it('every try fails: the last attempt is a dead letter, a failed span', async () => {
    const ch = `D${n}`;
    const { turnSpan } = await ask(ch, (final) => {
      slack.failNext('chat.update', 1_000, { status: 503, when: (a) => a.channel === ch && a.text === final });
    });
    const jobs = await eventually(async () => (jobSpans(turnSpan).length === 4 ? jobSpans(turnSpan) : null), 30_000);
    expect(jobs.map((s) => [s.attributes['messaging.message.delivery_count'], s.attributes['switchboard.delivery.outcome'], s.status?.code])).toEqual([
      [1, 'retry', ERROR],
      [2, 'retry', ERROR],
      [3, 'retry', ERROR],
      [4, 'dead_letter', ERROR],
    ]);
  }, 60_000);
});
