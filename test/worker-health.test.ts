/**
 * Every process observable, seen from the outside: worker heartbeats (the ingress says "no worker
 * alive" and refuses a chat request at once instead of hanging), a worker's own metrics port, and a
 * turn that fails on every provider (a 5xx OpenAI error with the slot errors over HTTP; a chat
 * channel's reply without the upstream's words; /readyz degraded).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { backendSetups } from './support/backends.js';
import { API_KEY, eventually, GatewayProcess, readyz, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

/** What the upstream says when it fails: it must never reach a chat user. */
const UPSTREAM_TEXT = 'quota exhausted for org-7731 on shard eu-west-internal-4';
const failing = () => [{ kind: 'error' as const, status: 500, body: { error: { message: UPSTREAM_TEXT, type: 'server_error', code: null } } }];

const chat = (url: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'hello' }], ...body }),
    // A request that waits for nobody would hang far longer than this.
    signal: AbortSignal.timeout(10_000),
  });

describe('worker heartbeats and a worker metrics port (ingress + worker processes)', () => {
  let fake: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  const procs: GatewayProcess[] = [];
  let env: Record<string, string>;
  let ingress: GatewayProcess;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'sb-health-'));
    const config = join(dir, 'switchboard.json');
    writeFileSync(config, JSON.stringify({ tools: { planner: false } }));
    env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_DATA: dir,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
    };
    ingress = await GatewayProcess.spawn('ingress', env);
    procs.push(ingress);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('with no worker alive: /readyz 503 "no worker alive", a chat request 503 no_worker at once, nothing written', async () => {
    const r = await fetch(`${ingress.url}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ ready: false, reason: 'no worker alive' });

    const res = await chat(ingress.url!, {}, { 'x-switchboard-conversation': 'nobody-home' });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ code: 'no_worker', type: 'server_error' });
    expect(body.error.message).toMatch(/No worker is alive/);
    const streamed = await chat(ingress.url!, { stream: true });
    expect(streamed.status).toBe(503);
    expect(((await streamed.json()) as { error: { code: string } }).error.code).toBe('no_worker');
    expect(fake.requests).toHaveLength(0);
  });

  it('a worker started: ready again, the turn answers, and the worker port serves /metrics with its turn samples', async () => {
    const worker = await GatewayProcess.spawn('worker', { ...env, SWITCHBOARD_METRICS_PORT: '0' });
    procs.push(worker);
    const line = await worker.waitForLog(/switchboard worker metrics are served/);
    const metricsUrl = (JSON.parse(line) as { url: string }).url;
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    await eventually(async () => (await fetch(`${ingress.url}/readyz`)).status === 200);
    const ready = (await (await readyz(ingress.url!, 'none')).json()) as Record<string, unknown>;
    expect(ready).toEqual({ ready: true });

    const res = await chat(ingress.url!, { messages: [{ role: 'user', content: 'counted' }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('echo: counted');

    expect((await fetch(`${metricsUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${metricsUrl}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_turns_total\{channel="http",finish_reason="stop"\} 1/);
    expect(metrics).toMatch(/switchboard_turn_duration_seconds_count\{channel="http"\} 1/);
    expect(metrics).toMatch(/switchboard_time_to_first_token_seconds_count\{channel="http"\} 1/);
    expect(metrics).toMatch(/switchboard_provider_attempts_total\{slot="[^"]+",outcome="ok"\} 1/);

    // Stopped cleanly, the worker takes its heartbeat away: not ready again, and requests are refused at once.
    expect(await worker.kill('SIGTERM')).toBe(0);
    await eventually(async () => (await fetch(`${ingress.url}/readyz`)).status === 503, 15_000, 200);
    expect((await chat(ingress.url!, {})).status).toBe(503);
  });
});

describe.each(backendSetups())('a turn that fails on every provider ($name)', (setup) => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => failing());
    gw = await startGateway(testConfig(fake, await setup.backend(), { fallback: { busyRetryMs: 0 }, tools: { planner: false } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await setup.cleanup();
  });

  it('the local worker counts: /readyz shows it alive', async () => {
    const r = (await (await readyz(gw.url!)).json()) as { checks: Record<string, { ok: boolean; message?: string }>; workers: Array<{ pid: number }> };
    expect(r.checks.workers).toEqual({ ok: true, message: '1 alive' });
    expect(r.workers.map((w) => w.pid)).toEqual([process.pid]);
  });

  it('non-streamed: a 502 OpenAI error with the slot errors in switchboard, no upstream text', async () => {
    const res = await chat(gw.url!, {}, { 'x-switchboard-conversation': 'all-down' });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: Record<string, unknown>; switchboard: { attempts: Array<{ slot: string; error: string; ms: number }> } };
    expect(body.error).toMatchObject({ type: 'api_error', code: 'provider_error' });
    expect(body.error.message).toMatch(/Every model provider failed \([^)]*: server\)/);
    expect(body.switchboard.attempts.length).toBeGreaterThan(0);
    for (const a of body.switchboard.attempts) expect(a).toEqual({ slot: expect.any(String), error: 'server', ms: expect.any(Number) });
    expect(JSON.stringify(body)).not.toContain('org-7731');
  });

  it('streamed: the stream ends with an error event carrying the slot errors', async () => {
    const res = await chat(gw.url!, { stream: true });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
      .map((l) => JSON.parse(l.slice(6)) as Record<string, any>);
    const last = events[events.length - 1]!;
    expect(last.error).toMatchObject({ type: 'api_error', code: 'provider_error' });
    expect(last.switchboard.attempts.length).toBeGreaterThan(0);
    expect(events.some((e) => e.choices?.[0]?.finish_reason === 'stop')).toBe(false);
    expect(JSON.stringify(events)).not.toContain('org-7731');
  });

  it('/readyz: every slot cooling down after failures is degraded, not ready', async () => {
    const r = await readyz(gw.url!);
    expect(r.status).toBe(503);
    const body = (await r.json()) as { checks: { provider: { ok: boolean; message: string } } };
    expect(body.checks.provider.ok).toBe(false);
    expect(body.checks.provider.message).toMatch(/^degraded: every slot is cooling down after failures \(.+: server, \d+ s\)/);
    for (const s of gw.provider.slots) await gw.infra.cooldowns.clear(s.id);
    expect((await readyz(gw.url!)).status).toBe(200);
  });
});

describe('a chat channel when every provider fails (sms, embedded)', () => {
  const PUBLIC = 'https://sms.example.test/hooks';
  const USER = '+15550100001';
  let fake: FakeLlm;
  let tw: FakeTwilio;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => failing());
    tw = new FakeTwilio(PUBLIC);
    await tw.start();
    const cfg = testConfig(
      fake,
      {},
      {
        fallback: { busyRetryMs: 0 },
        tools: { planner: false },
        channels: { sms: { accountSid: tw.accountSid, authTokenEnv: 'SB_HEALTH_TWILIO_TOKEN', publicUrl: PUBLIC, apiBaseUrl: tw.url } },
        access: { sms: { policy: 'allowlist', allow: [USER] } },
      },
    );
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_HEALTH_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
  });
  afterAll(async () => {
    await gw?.close();
    await tw?.close();
    await fake?.close();
  });

  it('the user is told it failed, in a generic sentence, without the upstream text', async () => {
    const r = await tw.webhook('/v1/channels/sms/inbound', tw.inboundParams({ from: USER, to: '+15550100000', body: 'are you there?' }));
    expect(r.status).toBe(200);
    const sent = await eventually(
      async () =>
        tw
          .sentTo(USER)
          .map((m) => m.body)
          .join('\n') || undefined,
    );
    expect(sent).toMatch(/could not get an answer from the model provider/);
    expect(sent).not.toContain('org-7731');
    expect(sent).not.toMatch(/quota|shard|500/);
  });
});
