/**
 * The OpenAI-compatible HTTP channel, driven by the official openai client, on
 * both the embedded default and Redis/BullMQ + Postgres.
 */

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, type Backend, OTHER_KEY, openaiClient, readyz, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const modes = ['embedded', 'redis+postgres'] as const;

describe.each(modes)('HTTP API (%s)', (mode) => {
  let fake: FakeLlm;
  let gw: Gateway;
  let redis: TestRedis | undefined;
  let pgdb: TestDatabase | undefined;
  let client: OpenAI;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    const backend: Backend = {};
    if (mode === 'redis+postgres') {
      redis = await TestRedis.start();
      pgdb = await createTestDatabase();
      backend.redisUrl = redis.url;
      backend.databaseUrl = pgdb.url;
    }
    gw = await startGateway(testConfig(fake, backend, { http: { maxBodyBytes: 64 * 1024 } }));
    client = openaiClient(gw.url!);
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  const inboxCount = async () => (await gw.infra.store.db.query<{ n: number }>('select count(*)::int as n from inbox')).rows[0]!.n;

  it('streams a reply as chat.completion.chunk events, the last one carrying usage and switchboard', async () => {
    // A model that streams token by token (tokens that arrive together may leave in one chunk).
    fake.enqueue(reply('echo: stream me', 5));
    const stream = await client.chat.completions.create({ model: 'default', stream: true, messages: [{ role: 'user', content: 'stream me' }] });
    let text = '';
    let last: any;
    let chunks = 0;
    for await (const ch of stream) {
      chunks++;
      text += ch.choices[0]?.delta?.content ?? '';
      last = ch;
    }
    expect(text).toBe('echo: stream me');
    expect(chunks).toBeGreaterThan(3); // token by token, not one block
    expect(last.choices[0].finish_reason).toBe('stop');
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
    expect(last.switchboard.conversation).toMatch(/^oneoff-/);
    expect(last.switchboard.turn).toMatch(/^t_/);
  });

  it('starts a stream (the 200 head and the role chunk) while the model has not answered yet, the content after it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    fake.respond(async (req) => {
      await gate; // the model says nothing until the test lets it
      return reply(`echo: ${lastUserText(req.body)}`);
    });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'slow one' }] }),
      });
      // The head arrived with the model still silent.
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      while (!buf.includes('\n\n')) buf += decoder.decode((await reader.read()).value, { stream: true });
      const first = JSON.parse(buf.slice(buf.indexOf('data: ') + 6, buf.indexOf('\n\n')));
      expect(first.choices[0].delta).toEqual({ role: 'assistant', content: '' });
      release();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
      }
      const content = [...buf.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join('');
      expect(content).toBe('echo: slow one');
      expect(buf.trimEnd().endsWith('data: [DONE]')).toBe(true);
    } finally {
      release();
      fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    }
  });

  it('streams usage as a final chunk when stream_options.include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'default',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'u' }],
    });
    const chunks: any[] = [];
    for await (const ch of stream) chunks.push(ch);
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage.total_tokens).toBeGreaterThan(0);
    expect(last.switchboard.turn).toMatch(/^t_/);
  });

  it('answers a non-streamed request with the whole reply, usage and switchboard', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'plain please' }] });
    expect(r.choices[0]!.message.content).toBe('echo: plain please');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.prompt_tokens).toBeGreaterThan(0);
    const sb = (r as unknown as { switchboard: { conversation: string; turn: string } }).switchboard;
    expect(sb.turn).toMatch(/^t_/);
    const turn = await gw.infra.store.turn(sb.turn);
    expect(turn).toMatchObject({ status: 'done', finishReason: 'stop' });
    expect(turn!.provider).toMatchObject({ slot: 'openai-compatible' });
  });

  it('keeps the history of a named conversation and takes only the new message from the request', async () => {
    const conv = `alice-${mode.replace('+', '-')}`;
    const c = openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': conv });
    await c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'my name is Ann' }] });
    const before = fake.requests.length;
    const r = await c.chat.completions.create({
      model: 'default',
      messages: [
        { role: 'user', content: 'IGNORED old message' },
        { role: 'user', content: 'what is my name?' },
      ],
    });
    expect(r.choices[0]!.message.content).toBe('echo: what is my name?');
    const sent = fake.requests[before]!.body.messages as Array<{ role: string; content: unknown }>;
    const texts = sent.map((m) => `${m.role}:${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`);
    expect(texts.join('\n')).toContain('my name is Ann');
    expect(texts.join('\n')).toContain('echo: my name is Ann');
    expect(texts.join('\n')).not.toContain('IGNORED');
    expect((r as any).switchboard.conversation).toBe(conv);
  });

  it('continues a conversation named by the user field too', async () => {
    await client.chat.completions.create({ model: 'default', user: `bob-${mode.replace('+', '-')}`, messages: [{ role: 'user', content: 'remember 42' }] });
    const before = fake.requests.length;
    await client.chat.completions.create({ model: 'default', user: `bob-${mode.replace('+', '-')}`, messages: [{ role: 'user', content: 'which number?' }] });
    expect(JSON.stringify(fake.requests[before]!.body.messages)).toContain('remember 42');
  });

  it('uses the request messages as the whole context of a one-off conversation', async () => {
    const before = fake.requests.length;
    await client.chat.completions.create({
      model: 'default',
      messages: [
        { role: 'system', content: 'SYSTEM-FROM-CLIENT' },
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
        { role: 'user', content: 'now this' },
      ],
    });
    const body = JSON.stringify(fake.requests[before]!.body.messages);
    expect(body).toContain('SYSTEM-FROM-CLIENT');
    expect(body).toContain('earlier answer');
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'fresh' }] });
    expect(JSON.stringify(fake.requests[before + 1]!.body.messages)).not.toContain('earlier answer');
  });

  it('keeps a conversation to the key that opened it', async () => {
    const conv = `secret-${mode.replace('+', '-')}`;
    const owner = openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': conv });
    const other = openaiClient(gw.url!, OTHER_KEY, { 'X-Switchboard-Conversation': conv });
    await owner.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'the password is swordfish' }] });
    const before = fake.requests.length;
    await other.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'what was the password?' }] });
    expect(JSON.stringify(fake.requests[before]!.body.messages)).not.toContain('swordfish');
  });

  it('lists the agents as models', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['default']);
  });

  it('answers a retried request (same Idempotency-Key) once, with the same reply', async () => {
    const before = fake.requests.length;
    const headers = { 'Idempotency-Key': `idem-${mode}` };
    const c = openaiClient(gw.url!, API_KEY, headers);
    const [a, b] = await Promise.all([
      c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'only once' }] }),
      c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'only once' }] }),
    ]);
    const third = await c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'only once' }] });
    expect(fake.requests.length - before).toBe(1);
    expect(a.choices[0]!.message.content).toBe('echo: only once');
    expect(b.choices[0]!.message.content).toBe('echo: only once');
    expect(third.choices[0]!.message.content).toBe('echo: only once');
  });

  describe('bad requests get an OpenAI-style error and enqueue nothing', () => {
    const post = (body: string, headers: Record<string, string> = { authorization: `Bearer ${API_KEY}` }) =>
      fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const cases: Array<[string, () => Promise<Response>, number, string | null]> = [
      ['malformed JSON', () => post('{"model": "default", "messages": ['), 400, 'invalid_json'],
      ['missing model', () => post(JSON.stringify({ messages: [{ role: 'user', content: 'x' }] })), 400, 'missing_required_parameter'],
      ['missing messages', () => post(JSON.stringify({ model: 'default' })), 400, 'missing_required_parameter'],
      ['empty messages', () => post(JSON.stringify({ model: 'default', messages: [] })), 400, 'invalid_value'],
      [
        'last message not from the user',
        () => post(JSON.stringify({ model: 'default', messages: [{ role: 'assistant', content: 'x' }] })),
        400,
        'invalid_value',
      ],
      ['bad role', () => post(JSON.stringify({ model: 'default', messages: [{ role: 'wizard', content: 'x' }] })), 400, 'invalid_value'],
      ['oversize body', () => post(JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'x'.repeat(70_000) }] })), 413, 'request_too_large'],
      ['unknown model', () => post(JSON.stringify({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] })), 404, 'model_not_found'],
      [
        'bad key',
        () => post(JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'x' }] }), { authorization: 'Bearer sk-wrong' }),
        401,
        'invalid_api_key',
      ],
      ['no key', () => post(JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'x' }] }), {}), 401, 'invalid_api_key'],
      [
        'bad conversation id',
        () =>
          post(JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'x' }] }), {
            authorization: `Bearer ${API_KEY}`,
            'x-switchboard-conversation': 'has spaces/and slashes',
          }),
        400,
        'invalid_value',
      ],
    ];
    it.each(cases)('%s', async (_name, send, status, code) => {
      const before = await inboxCount();
      const res = await send();
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { message: string; type: string; code: string | null } };
      expect(body.error.message.length).toBeGreaterThan(5);
      expect(typeof body.error.type).toBe('string');
      expect(body.error.code).toBe(code);
      expect(await inboxCount()).toBe(before);
    });

    it('the openai client surfaces them as typed errors', async () => {
      await expect(client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(openaiClient(gw.url!, 'sk-wrong-key').models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    });
  });

  it('reports health and readiness', async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    const r = await readyz(gw.url!);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { ready: boolean; mode: string; checks: Record<string, { ok: boolean }> };
    expect(body).toMatchObject({ ready: true, mode });
    expect(Object.keys(body.checks).sort()).toEqual(['bus', 'provider', 'queue', 'store', 'workers']);
    // Anyone else (no key, a user's key) learns only whether it is ready: no models, mode or channels.
    for (const headers of [{}, { authorization: `Bearer ${API_KEY}` }] as Array<Record<string, string>>) {
      const anon = await fetch(`${gw.url}/readyz`, { headers });
      expect(anon.status).toBe(200);
      expect(await anon.json()).toEqual({ ready: true });
    }
  });
});

describe('with no model provider configured', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway(testConfig(null, {}));
  });
  afterAll(() => gw?.close());

  it('starts, answers users with a clear notice, and /readyz says why it is not ready', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'hello?' }] });
    expect(r.choices[0]!.message.content).toMatch(/no model provider is configured/i);
    const ready = await readyz(gw.url!);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { checks: { provider: { ok: boolean; message: string } } };
    expect(body.checks.provider.ok).toBe(false);
    expect(body.checks.provider.message).toMatch(/no model provider is configured/);
  });
});
