/**
 * OpenTelemetry traces across a split topology: an ingress process and a worker process (real
 * processes, real Redis and Postgres) export over OTLP/HTTP to a local receiver. One HTTP chat
 * completion that calls a tool is one trace: the message's span at ingress is the ancestor of the
 * worker's queue-wait, drain, turn, model-call ("chat <model>"), tool-call ("execute_tool <name>")
 * and delivery spans. An approval's wait is in the trace of the message whose turn parked, linked to
 * the answer's trace (and back). Without an endpoint nothing is exported and the SDK is never imported.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telemetrySdkLoaded } from '../src/telemetry/otlp.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { OtlpReceiver, type ReceivedSpan } from './fakes/otlp-receiver.js';
import { API_KEY, eventually, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** The model asks for the time, then answers with it; "run: <command>" asks for shell_exec (an operator must approve it). */
function timeModel(req: FakeRequest) {
  const msgs = req.body?.messages ?? [];
  const last = msgs[msgs.length - 1];
  if (last?.role === 'tool') return reply(String(last.content).includes('Not approved') ? 'It was not run.' : 'It is noon in UTC.');
  const run = /run: (.+)$/.exec(lastUserText(req.body));
  return run ? toolCall('shell_exec', { command: run[1] }, 'call_shell_1') : toolCall('current_time', { timeZone: 'UTC' }, 'call_time_1');
}

const OPERATOR_KEY = 'op-otel-test-key-0001';
/** A client's own trace: the message's span continues it. */
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 };

describe('traces over OTLP/HTTP from an ingress and a worker process', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let receiver: OtlpReceiver;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    // 30 of the 42 prompt tokens from the provider's cache.
    fake = new FakeLlm({ usage: { promptTokens: 42, completionTokens: 7, cachedTokens: 30 } });
    await fake.start();
    fake.respond(timeModel);
    receiver = new OtlpReceiver();
    await receiver.start();
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await receiver?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  let ingress: GatewayProcess;
  const byName = (name: string) => receiver.spans.filter((s) => s.name === name);

  it('one trace from the message at ingress to the delivery, with the GenAI attributes', async () => {
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      SWITCHBOARD_QUEUE_PREFIX: `sbo${Math.random().toString(36).slice(2, 8)}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'switchboard-test',
      // Export within a moment, not the SDK's default 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const [ing, worker] = await Promise.all([GatewayProcess.spawn('ingress', env), GatewayProcess.spawn('worker', env)]);
    ingress = ing;
    procs.push(ingress, worker);

    const client = openaiClient(ingress.url!, API_KEY, { 'X-Switchboard-Conversation': 'otel-1', traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what time is it?' }] });
    expect(r.choices[0]!.message.content).toBe('It is noon in UTC.');

    await eventually(
      async () =>
        byName('message http').length === 1 && byName('deliver http').length === 1 && byName('chat fake-model').length === 2 && byName('drain').length === 1,
      20_000,
    );

    const message = byName('message http')[0]!;
    expect(message.kind).toBe(SPAN_KIND.SERVER);
    // The client's traceparent header: the message continues the client's trace.
    expect(message.traceId).toBe(CLIENT_TRACE);
    expect(message.parentSpanId).toBe(CLIENT_SPAN);
    expect(message.resource).toMatchObject({ 'service.name': 'switchboard-test', 'switchboard.role': 'ingress', 'process.pid': ingress.proc.pid });
    expect(message.attributes).toMatchObject({ 'switchboard.channel': 'http', 'switchboard.ingress.outcome': 'accepted' });

    // One trace, and every worker span has the ingress's message span among its ancestors.
    const traceSpans = receiver.spans.filter((s) => s.traceId === message.traceId);
    const workerSpans = traceSpans.filter((s) => s.resource['switchboard.role'] === 'worker');
    for (const s of workerSpans) expect(s.resource['process.pid']).toBe(worker.proc.pid);
    const names = workerSpans.map((s) => s.name);
    for (const n of ['queue wait', 'drain', 'turn', 'chat fake-model', 'execute_tool current_time', 'deliver http']) expect(names).toContain(n);
    for (const s of workerSpans) expect(receiver.ancestors(s)).toContain(message);

    const [queueWait, drain, turn] = ['queue wait', 'drain', 'turn'].map((n) => workerSpans.find((s) => s.name === n)!) as [
      ReceivedSpan,
      ReceivedSpan,
      ReceivedSpan,
    ];
    expect(queueWait.parentSpanId).toBe(message.spanId);
    expect(drain.parentSpanId).toBe(message.spanId);
    expect(drain.kind).toBe(SPAN_KIND.CONSUMER);
    expect(turn.parentSpanId).toBe(drain.spanId);
    expect(turn.attributes).toMatchObject({ 'switchboard.turn.finish_reason': 'stop', 'switchboard.turn.attempt': 1 });

    // Two model calls (the tool call, then the answer), children of the turn, with the GenAI attributes.
    const chats = workerSpans.filter((s) => s.name === 'chat fake-model').sort((a, b) => Number(a.startNs - b.startNs));
    for (const c of chats) {
      expect(c.parentSpanId).toBe(turn.spanId);
      expect(c.kind).toBe(SPAN_KIND.CLIENT);
      expect(c.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        // OPENAI_BASE_URL's slot: the provider the catalog names it (not a well-known value).
        'gen_ai.provider.name': 'openai-compatible',
        'gen_ai.request.model': 'fake-model',
        'gen_ai.response.model': 'fake-model',
        // The whole prompt's tokens (pi-ai counts the cached ones apart), and of them the cached.
        'gen_ai.usage.input_tokens': 42,
        'gen_ai.usage.output_tokens': 7,
        'gen_ai.usage.cache_read.input_tokens': 30,
        // The provider's endpoint: the fake's.
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(fake.openaiBaseUrl).port),
      });
    }
    expect(chats[0]!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_calls']);
    expect(chats[1]!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);

    // The tool call, between the two model calls, with the moat's decision.
    const tool = workerSpans.find((s) => s.name === 'execute_tool current_time')!;
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'current_time',
      'gen_ai.tool.call.id': 'call_time_1',
      'switchboard.moat.decision': 'allow',
    });
    // (The SDK takes start times to the millisecond: compared with that much slack.)
    const MS = 1_000_000n;
    expect(tool.startNs + MS >= chats[0]!.endNs && tool.endNs <= chats[1]!.startNs + MS).toBe(true);

    const deliver = workerSpans.find((s) => s.name === 'deliver http')!;
    expect(deliver.parentSpanId).toBe(turn.spanId);
    expect(deliver.kind).toBe(SPAN_KIND.PRODUCER);
  }, 120_000);

  /** Parks a shell_exec call in this conversation (in a trace of the client's own): its approval, the message, the parked turn, its `execute_tool` span (ask). */
  async function parkShell(conversation: string, command: string) {
    const traceId = randomBytes(16).toString('hex');
    const client = openaiClient(ingress.url!, API_KEY, {
      'X-Switchboard-Conversation': conversation,
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `run: ${command}` }] });
    const approval = (r as any).switchboard.approval as { code: string; tool: string };
    expect(approval).toMatchObject({ tool: 'shell_exec' });
    const message = await eventually(async () => byName('message http').find((m) => m.traceId === traceId));
    const parkedTurn = await eventually(async () => byName('turn').find((t) => t.traceId === traceId));
    expect(parkedTurn.attributes['switchboard.turn.finish_reason']).toBe('approval_pending');
    const asked = await eventually(async () => byName('execute_tool shell_exec').find((s) => s.parentSpanId === parkedTurn.spanId));
    expect(asked.attributes).toMatchObject({ 'switchboard.moat.decision': 'ask', 'gen_ai.tool.call.id': 'call_shell_1' });
    return { approval, message, parkedTurn, asked };
  }

  /**
   * Where the wait is: in the trace of the message whose turn parked, a child of that turn,
   * from the request to the decision; linked to the answer; the resumed turn links back.
   */
  async function expectWait(p: Awaited<ReturnType<typeof parkShell>>, status: string, timeoutMs = 20_000) {
    const wait = await eventually(async () => byName('approval wait shell_exec').find((s) => s.parentSpanId === p.parkedTurn.spanId), timeoutMs);
    expect(wait.traceId).toBe(p.message.traceId);
    expect(wait.attributes).toMatchObject({ 'switchboard.approval.status': status, 'gen_ai.tool.call.id': 'call_shell_1', 'gen_ai.tool.name': 'shell_exec' });
    // Its span covers the wait: from the request to the decision.
    expect(wait.startNs <= p.asked.endNs && wait.endNs >= p.asked.endNs).toBe(true);
    // In the original trace, under the message that asked (ingress) through its drain (worker).
    const chain = await eventually(async () => {
      const names = receiver.ancestors(wait).map((s) => s.name);
      return names.length === 4 ? names : null;
    });
    expect(chain).toEqual([`approval wait shell_exec`, 'turn', 'drain', 'message http']);
    // The resumed turn (a worker span) links back to the turn that parked, in the original trace.
    const resumed = await eventually(
      async () => byName('turn').find((t) => t.links.some((l) => l.spanId === p.parkedTurn.spanId && l.traceId === p.parkedTurn.traceId)),
      timeoutMs,
    );
    expect(resumed.traceId).not.toBe(p.message.traceId);
    expect(resumed.resource['switchboard.role']).toBe('worker');
    expect(resumed.attributes['switchboard.turn.finish_reason']).toBe('stop');
    return { wait, resumed };
  }

  it('an approval denied through the API: the wait is in the trace of the message that parked, linked to the answer and back', async () => {
    const p = await parkShell('otel-2', 'echo hi >> out.txt');
    const denied = await fetch(`${ingress.url}/v1/approvals/${p.approval.code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'deny' }),
    });
    expect(denied.status).toBe(200);

    const { wait, resumed } = await expectWait(p, 'denied');
    // The answer, at ingress (no chat message: the root of its own trace), is linked from the wait, and links the parked turn.
    const answer = await eventually(async () =>
      byName('approval answer').find((s) => s.attributes['switchboard.approval.id'] === wait.attributes['switchboard.approval.id']),
    );
    expect(answer.resource['switchboard.role']).toBe('ingress');
    expect(answer.parentSpanId).toBeUndefined();
    expect(wait.links).toContainEqual({ traceId: answer.traceId, spanId: answer.spanId });
    expect(answer.links).toContainEqual({ traceId: p.parkedTurn.traceId, spanId: p.parkedTurn.spanId });
    // The resumed turn (worker) continues the answer's trace: answer → drain → turn.
    const chain = await eventually(async () => {
      const names = receiver.ancestors(resumed).map((s) => s.name);
      return names.length === 3 ? names : null;
    });
    expect(chain).toEqual(['turn', 'drain', 'approval answer']);
    expect(resumed.traceId).toBe(answer.traceId);
  }, 60_000);

  it('a message folded into a running drain: the turn that answers it links the message span', async () => {
    const client = openaiClient(ingress.url!, API_KEY, { 'X-Switchboard-Conversation': 'otel-fold' });
    // The first message's slow answer keeps the conversation's drain busy; the second, sent meanwhile,
    // finds it queued (jobs are one per conversation) and is answered by a later turn of that drain.
    fake.enqueue(reply('a slow answer that takes its time to arrive, word by word', 60));
    const before = fake.requests.length;
    const first = client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'tell me slowly' }] });
    await eventually(async () => fake.requests.length > before);
    const second = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what time is it?' }] });
    expect(second.choices[0]!.message.content).toBe('It is noon in UTC.');
    await first;

    // This suite's fourth message (one each before, two here): the latest message span is the second one here.
    const messages = await eventually(async () => (byName('message http').length >= 4 ? byName('message http') : null), 20_000);
    const secondMsg = messages.reduce((a, b) => (b.startNs > a.startNs ? b : a));
    const inboxId = secondMsg.attributes['switchboard.inbox.id'];
    expect(typeof inboxId).toBe('number');
    const turn = await eventually(
      async () => byName('turn').find((t) => (t.attributes['switchboard.inbox.ids'] as number[] | undefined)?.includes(inboxId as number)),
      20_000,
    );
    expect(turn.traceId).not.toBe(secondMsg.traceId); // it runs in the first message's drain, in that trace
    expect(turn.links).toContainEqual({ traceId: secondMsg.traceId, spanId: secondMsg.spanId });
  }, 60_000);

  it('a failed model call: its span is an error, with the provider attempt that failed', async () => {
    fake.enqueue([{ kind: 'error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } }]);
    const r = await fetch(`${ingress.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': 'otel-err' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'hello' }] }),
    });
    await r.text();
    const failed = await eventually(async () => byName('chat fake-model').find((s) => s.status?.code === 2), 20_000);
    expect(failed.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['error'], 'error.type': 'provider_error' });
    expect(failed.events.find((e) => e.name === 'switchboard.provider.attempt')?.attributes).toMatchObject({ 'switchboard.provider.outcome': 'bad_request' });
    const turn = await eventually(async () => receiver.spans.find((s) => s.spanId === failed.parentSpanId));
    expect(turn.attributes['switchboard.turn.finish_reason']).toBe('error');
  }, 60_000);

  it('a call the moat refuses: its tool span says deny, with the tier, and is an error', async () => {
    const traceId = randomBytes(16).toString('hex');
    const client = openaiClient(ingress.url!, API_KEY, {
      'X-Switchboard-Conversation': 'otel-deny',
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'run: mkfs.ext4 /dev/sda1' }] });
    expect(r.choices[0]!.message.content).toBe('It is noon in UTC.');
    const tool = await eventually(async () => byName('execute_tool shell_exec').find((s) => s.traceId === traceId), 20_000);
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.call.id': 'call_shell_1',
      'switchboard.moat.decision': 'deny',
      'switchboard.moat.tier': 'blocked',
      'error.type': 'refused_by_policy',
    });
    expect(tool.status?.code).toBe(2);
  }, 60_000);

  it('an approval approved by an answer typed in a chat: the wait links the answer, a child of that message', async () => {
    const p = await parkShell('otel-approve', 'echo approved >> out.txt');
    // An operator key's typed answer, in its own conversation.
    const op = openaiClient(ingress.url!, OPERATOR_KEY, { 'X-Switchboard-Conversation': 'otel-operator' });
    const r = await op.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: `yes ${p.approval.code}` }] });
    expect((r as any).switchboard.approvalAnswer).toMatchObject({ code: p.approval.code, ok: true, status: 'approved' });

    const { wait, resumed } = await expectWait(p, 'approved');
    const answer = await eventually(async () =>
      byName('approval answer').find((s) => s.attributes['switchboard.approval.id'] === wait.attributes['switchboard.approval.id']),
    );
    const typed = receiver.spans.find((s) => s.spanId === answer.parentSpanId)!;
    expect(typed.name).toBe('message http');
    expect(typed.attributes['switchboard.ingress.outcome']).toBe('answered');
    expect(wait.links).toContainEqual({ traceId: answer.traceId, spanId: answer.spanId });
    expect(resumed.traceId).toBe(answer.traceId);
    // The approved call runs in the resumed turn.
    const ran = await eventually(async () => byName('execute_tool shell_exec').find((s) => s.parentSpanId === resumed.spanId));
    expect(ran.attributes['switchboard.moat.decision']).toBe('approved');
  }, 60_000);

  it('an approval answered after its deadline: expired, its wait in the trace of the message that parked', async () => {
    const p = await parkShell('otel-expire', 'echo late >> out.txt');
    // The deadline passes (15 minutes by default: moved, not waited for); the operator's answer comes too late.
    const db = new pg.Client({ connectionString: pgdb.url });
    await db.connect();
    try {
      await db.query(`update approvals set expires_at = now() - interval '1 second' where code = $1 and status = 'pending'`, [p.approval.code]);
    } finally {
      await db.end();
    }
    const late = await fetch(`${ingress.url}/v1/approvals/${p.approval.code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(late.status).toBe(410);
    const { wait } = await expectWait(p, 'expired');
    expect(wait.attributes['switchboard.approval.decided_via']).toBeUndefined();
  }, 60_000);

  it('an approval that nobody answered: the worker expires it, and records the wait in the trace of the message that parked', async () => {
    const p = await parkShell('otel-deadline', 'echo nobody >> out.txt');
    const db = new pg.Client({ connectionString: pgdb.url });
    await db.connect();
    try {
      await db.query(`update approvals set expires_at = now() - interval '1 second' where code = $1 and status = 'pending'`, [p.approval.code]);
    } finally {
      await db.end();
    }
    // The worker's recovery sweep (every queue.recoverIntervalMs, 15 s) expires what is past its deadline.
    const { wait, resumed } = await expectWait(p, 'expired', 40_000);
    expect(wait.resource['switchboard.role']).toBe('worker');
    expect(wait.links).toEqual([]); // nobody answered
    expect(resumed.links).toContainEqual({ traceId: p.parkedTurn.traceId, spanId: p.parkedTurn.spanId });
  }, 60_000);

  it('one process (`start`, embedded): the same tree, the drain in the trace of the message', async () => {
    const data = mkdtempSync(join(tmpdir(), 'sb-otel-'));
    const start = await GatewayProcess.spawn('start', {
      SWITCHBOARD_DATA: data,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    procs.push(start);
    try {
      const client = openaiClient(start.url!, API_KEY, { 'X-Switchboard-Conversation': 'otel-start' });
      const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what time is it?' }] });
      expect(r.choices[0]!.message.content).toBe('It is noon in UTC.');
      const mine = () => receiver.spans.filter((s) => s.resource['process.pid'] === start.proc.pid);
      const drain = await eventually(async () => mine().find((s) => s.name === 'drain'), 20_000);
      const message = mine().find((s) => s.name === 'message http')!;
      expect(message.resource).toMatchObject({ 'service.name': 'switchboard', 'switchboard.role': 'start' });
      expect(drain.traceId).toBe(message.traceId);
      expect(drain.parentSpanId).toBe(message.spanId);
      const names = mine()
        .filter((s) => s.traceId === message.traceId)
        .map((s) => s.name);
      for (const n of ['turn', 'chat fake-model', 'execute_tool current_time', 'deliver http']) expect(names).toContain(n);
    } finally {
      await start.kill('SIGTERM');
      rmSync(data, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('an approval asked by an attempt that died before its turn parked', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let receiver: OtlpReceiver;
  let dir: string;
  const procs: GatewayProcess[] = [];

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(timeModel);
    receiver = new OtlpReceiver();
    await receiver.start();
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'sb-otel-crash-'));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await receiver?.close();
    await redis?.stop();
    await pgdb?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the wait goes under the attempt that parked (the dead one exported nothing); the played-back model call reports no tokens again', async () => {
    const env = (fault?: string) => {
      const config = join(dir, `switchboard${fault ? '-doomed' : ''}.json`);
      // The doomed worker's lease outlives it until the test hands the conversation over.
      writeFileSync(config, JSON.stringify({ queue: { lockDurationMs: fault ? 60_000 : 2000, stalledIntervalMs: 1000, backoffMs: 200 } }));
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
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        ...(fault ? { SWITCHBOARD_TEST_FAULT: fault } : {}),
      };
    };
    const [ingress, doomed] = await Promise.all([GatewayProcess.spawn('ingress', env()), GatewayProcess.spawn('worker', env('before-park'))]);
    procs.push(ingress, doomed);
    const traceId = randomBytes(16).toString('hex');
    const client = openaiClient(ingress.url!, API_KEY, {
      'X-Switchboard-Conversation': 'otel-crash',
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    });
    const answer = client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'run: echo crash >> out.txt' }] });
    // Killed after the approval row was written (with the first attempt's turn span), before the turn parked.
    await eventually(async () => doomed.proc.signalCode === 'SIGKILL', 60_000);
    const db = new pg.Client({ connectionString: pgdb.url });
    await db.connect();
    try {
      const worker = await GatewayProcess.spawn('worker', env());
      procs.push(worker);
      await db.query(`update conversations set lease_until = now() where key like '%otel-crash%'`);
      const r = new Redis(redis.url);
      const locks = await r.keys('*:lock');
      if (locks.length) await r.del(...locks);
      await r.quit();
      const code = ((await answer) as any).switchboard.approval.code as string;

      // The second attempt parked on the same approval: its turn span is the one exported, and the one the row keeps.
      const parkedTurn = await eventually(async () => receiver.spans.find((s) => s.name === 'turn' && s.traceId === traceId), 30_000);
      expect(parkedTurn.attributes).toMatchObject({ 'switchboard.turn.attempt': 2, 'switchboard.turn.finish_reason': 'approval_pending' });
      const drain = receiver.spans.find((s) => s.spanId === parkedTurn.parentSpanId)!;
      expect(drain.name).toBe('drain'); // the job the dead worker held, taken again: still the message's trace
      // The model's call was journaled by the dead attempt and played back: a chat span that says so, and reports no tokens again.
      const replayed = receiver.spans.find((s) => s.name === 'chat fake-model' && s.parentSpanId === parkedTurn.spanId)!;
      expect(replayed.attributes).toMatchObject({ 'switchboard.replayed': true, 'gen_ai.response.finish_reasons': ['tool_calls'] });
      expect(replayed.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
      const row = (await db.query('select traceparent from approvals where code = $1', [code])).rows[0];
      expect(row.traceparent).toBe(`00-${traceId}-${parkedTurn.spanId}-01`);

      const approved = await fetch(`${ingress.url}/v1/approvals/${code}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
      expect(approved.status).toBe(200);
      const wait = await eventually(async () => receiver.spans.find((s) => s.name === 'approval wait shell_exec'), 20_000);
      expect(wait).toMatchObject({ traceId, parentSpanId: parkedTurn.spanId });
      expect(wait.attributes['switchboard.approval.status']).toBe('approved');
    } finally {
      await db.end();
    }
  }, 180_000);
});

describe('without an OTLP endpoint', () => {
  it('exports nothing and never imports the SDK', async () => {
    const fake = new FakeLlm();
    await fake.start();
    fake.respond(timeModel);
    const receiver = new OtlpReceiver();
    await receiver.start();
    const redis = await TestRedis.start();
    const pgdb = await createTestDatabase();
    // The other OTEL_* variables alone do not turn tracing on.
    const saved = { ...process.env };
    process.env.OTEL_SERVICE_NAME = 'switchboard-test';
    process.env.OTEL_TRACES_SAMPLER = 'always_on';
    const gw = await startGateway(testConfig(fake, { redisUrl: redis.url, databaseUrl: pgdb.url }));
    try {
      const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what time is it?' }] });
      expect(r.choices[0]!.message.content).toBe('It is noon in UTC.');
      expect(fake.requests).toHaveLength(2); // the tool call ran: the spans' code paths were taken
      expect(telemetrySdkLoaded()).toBe(false);
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) =>
        /@opentelemetry[\\/](sdk-trace|exporter-|resources|context-async-hooks)/.test(k),
      );
      expect(loaded).toEqual([]);
      // The API's no-op tracer answers: a span records nothing.
      expect(trace.getTracer('switchboard').startSpan('x').isRecording()).toBe(false);
      expect(receiver.requests).toBe(0);
    } finally {
      await gw.close();
      process.env = saved;
      await receiver.close();
      await fake.close();
      await redis.stop();
      await pgdb.drop();
    }
  }, 60_000);
});
