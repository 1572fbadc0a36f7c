/**
 * The fallback chain seen from the outside: through the HTTP API, across
 * worker processes, and at start with bad configuration.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const slotsFor = (a: FakeLlm, b: FakeLlm) => [
  { id: 'primary', api: 'openai-completions', model: 'fake-a', baseUrl: a.openaiBaseUrl, apiKeyEnv: 'FAKE_KEY_A' },
  { id: 'backup', api: 'anthropic-messages', model: 'fake-b', baseUrl: b.url, apiKeyEnv: 'FAKE_KEY_B' },
];
process.env.FAKE_KEY_A = 'key-a';
process.env.FAKE_KEY_B = 'key-b';

describe('fallback through the HTTP API', () => {
  let a: FakeLlm;
  let b: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    a = new FakeLlm();
    b = new FakeLlm();
    await Promise.all([a.start(), b.start()]);
    a.respond((req) => reply(`A says ${lastUserText(req.body)}`));
    b.respond((req) => reply(`B says ${lastUserText(req.body)}`));
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: slotsFor(a, b),
          fallback: { busyRetryMs: 1_000, busyNoticeMs: 300, notice: true, timeouts: { connectMs: 2_000, firstTokenMs: 2_000, idleMs: 500, totalMs: 10_000 } },
        },
      ),
    );
  });
  afterEach(async () => {
    for (const id of ['primary', 'backup']) await gw.infra.cooldowns.clear(id);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it('answers from the primary slot and says so', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'one' }] });
    expect(r.choices[0]!.message.content).toBe('A says one');
    expect((r as any).switchboard).toMatchObject({ slot: 'primary', fallbackActivated: false, attempts: [{ slot: 'primary', error: 'ok' }] });
  });

  it('a provider dying after 10 tokens: the user gets one clean answer from the next slot', async () => {
    a.enqueue([{ kind: 'disconnect', afterTokens: 10, text: Array.from({ length: 40 }, (_, i) => `half${i}`).join(' ') }]);
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'fb-clean' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'two' }],
    });
    expect(r.choices[0]!.message.content).toBe('B says two');
    const sb = (r as any).switchboard;
    expect(sb).toMatchObject({ slot: 'backup', fallbackActivated: true });
    expect(sb.attempts.map((x: { slot: string; error: string }) => `${x.slot}:${x.error}`)).toEqual(['primary:network', 'backup:ok']);
    expect(sb.notices).toEqual(['(answered by the fallback model backup)']);
    // The transcript keeps only the clean answer; the turn row records the ledger.
    const turn = await gw.infra.store.turn(sb.turn);
    expect(turn!.provider).toMatchObject({ slot: 'backup', fallbackActivated: true });
    const transcript = JSON.stringify(await gw.infra.store.transcript(turn!.conversationId));
    expect(transcript).toContain('B says two');
    expect(transcript).not.toContain('half1');
  });

  it('streaming: the partial answer is withdrawn with a reset chunk, then the next slot streams', async () => {
    a.enqueue([{ kind: 'disconnect', afterTokens: 10, text: Array.from({ length: 40 }, (_, i) => `half${i}`).join(' ') }]);
    const stream = await openaiClient(gw.url!).chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: 'three' }] });
    let shown = '';
    let resets = 0;
    let last: any;
    for await (const ch of stream) {
      const meta = (ch as any).switchboard;
      if (meta?.reset) {
        resets++;
        shown = ''; // what a Switchboard-aware client does
      }
      shown += ch.choices[0]?.delta?.content ?? '';
      last = ch;
    }
    expect(resets).toBe(1);
    expect(shown.trim()).toBe('B says three');
    expect(last.switchboard).toMatchObject({ slot: 'backup', fallbackActivated: true });
  });

  it('every slot down: a clear failure in the channel, no hang', async () => {
    a.enqueue(...Array.from({ length: 20 }, () => [{ kind: 'error' as const, status: 500 }]));
    b.enqueue(...Array.from({ length: 20 }, () => [{ kind: 'error' as const, status: 529 }]));
    const t0 = Date.now();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'four' }] }),
    });
    expect(Date.now() - t0).toBeLessThan(8_000);
    // An OpenAI-style error, not 200 with an apology: each slot's error class, in the switchboard object too.
    expect(res.status).toBe(502);
    const r = (await res.json()) as any;
    expect(r.error).toMatchObject({ type: 'api_error', code: 'provider_error' });
    expect(r.error.message).toMatch(/Every model provider failed \(primary: server, backup: overloaded\)/);
    expect(new Set(r.switchboard.attempts.map((x: { slot: string; error: string }) => `${x.slot}:${x.error}`))).toEqual(
      new Set(['primary:server', 'backup:overloaded']),
    );
    expect(r.switchboard.notices).toContain('The model providers are busy right now; still trying…');
    a.reset();
    b.reset();
    a.respond((req) => reply(`A says ${lastUserText(req.body)}`));
    b.respond((req) => reply(`B says ${lastUserText(req.body)}`));
  });
});

describe('cooldowns across worker processes', () => {
  let a: FakeLlm;
  let b: FakeLlm;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let db: pg.Pool;
  const procs: GatewayProcess[] = [];
  beforeAll(async () => {
    a = new FakeLlm();
    b = new FakeLlm();
    await Promise.all([a.start(), b.start()]);
    b.respond((req) => reply(`B says ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    db = new pg.Pool({ connectionString: pgdb.url });
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    await db?.end();
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
    await pgdb?.drop();
  });

  it('a slot that failed in one worker is tried last by another', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-fb-'));
    const file = join(dir, 'switchboard.json');
    writeFileSync(file, JSON.stringify({ providers: slotsFor(a, b), fallback: { busyRetryMs: 0 } }));
    const env = {
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_CONFIG: file,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      FAKE_KEY_A: 'a',
      FAKE_KEY_B: 'b',
    };
    const ingress = await GatewayProcess.spawn('ingress', env);
    const w1 = await GatewayProcess.spawn('worker', env);
    procs.push(ingress, w1);
    a.enqueue([{ kind: 'error', status: 429, retryAfter: 120 }]);
    const client = openaiClient(ingress.url!);
    const first = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'first' }] });
    expect(first.choices[0]!.message.content).toBe('B says first');
    expect(a.requests).toHaveLength(1);
    // Only a second worker process is left to take the next message.
    await w1.kill('SIGTERM');
    const w2 = await GatewayProcess.spawn('worker', env);
    procs.push(w2);
    const second = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'second' }] });
    expect(second.choices[0]!.message.content).toBe('B says second');
    expect((second as any).switchboard.attempts.map((x: { slot: string }) => x.slot)).toEqual(['backup']);
    expect(a.requests).toHaveLength(1); // the cooling primary was not asked again
    const workers = (await db.query<{ worker: string }>('select worker from turns order by started_at')).rows.map((r) => Number(r.worker.split(':').pop()));
    expect(workers).toEqual([w1.proc.pid, w2.proc.pid]);
  });
});

describe('provider configuration checked at start', () => {
  const start = (config: unknown, env: Record<string, string> = {}) => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-badcfg-'));
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(file, JSON.stringify(config));
    return spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'start'], {
      env: { PATH: process.env.PATH ?? '', SWITCHBOARD_CONFIG: file, SWITCHBOARD_DATA: dir, ...env },
      encoding: 'utf8',
      timeout: 20_000,
    });
  };

  it('an unknown API is refused, naming the key', () => {
    const r = start({ providers: [{ id: 'x', api: 'openai-chat', model: 'm', baseUrl: 'http://127.0.0.1:1/v1' }] });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/providers\.0\.api/);
  });

  it('a missing key variable is refused, naming the key and the variable', () => {
    const r = start({
      providers: [
        { id: 'x', api: 'openai-completions', model: 'm', baseUrl: 'http://127.0.0.1:1/v1' },
        { id: 'y', api: 'anthropic-messages', model: 'claude-sonnet-4-5', apiKeyEnv: 'NOT_SET_ANYWHERE' },
      ],
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/providers\.1\.apiKeyEnv.*NOT_SET_ANYWHERE/);
  });

  it('an unknown model without a baseUrl is refused', () => {
    const r = start({ providers: [{ id: 'x', api: 'openai-completions', model: 'no-such-model', apiKeyEnv: 'K' }] }, { K: 'v' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/providers\.0\.baseUrl/);
  });
});
