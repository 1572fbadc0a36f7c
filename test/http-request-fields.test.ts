/**
 * The request fields of POST /v1/chat/completions: each honoured (it reaches the model call,
 * as the fake LLM records it), accepted as harmless, or refused by name; and an Idempotency-Key
 * reused with another body refused (422) across two ingress processes sharing Redis + Postgres.
 */

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { API_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

describe('chat-completions request fields', () => {
  let fake: FakeLlm;
  let gw: Gateway; // ingress and worker
  let edge: Gateway; // a second ingress only: its messages are answered by gw's worker
  let redis: TestRedis;
  let pgdb: TestDatabase;
  let client: OpenAI;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    const backend = { redisUrl: redis.url, databaseUrl: pgdb.url };
    const agents = { default: { maxTokens: 500, temperature: 0.3 }, loose: {} };
    gw = await startGateway(testConfig(fake, backend, { agents }));
    // The edge's provider is configured without JSON modes: it refuses response_format JSON, gw passes it on.
    edge = await startGateway(testConfig(fake, backend, { agents, queue: gw.config.queue, provider: { jsonModes: false } }), {
      ingress: true,
      worker: false,
    });
    client = openaiClient(gw.url!);
  }, 60_000);
  afterAll(async () => {
    await edge?.close();
    await gw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  /** The model call the fake LLM received for this user text. */
  const sent = (text: string): FakeRequest[] => fake.requests.filter((r) => lastUserText(r.body) === text);
  const inboxCount = async () => (await gw.infra.store.db.query<{ n: number }>('select count(*)::int as n from inbox')).rows[0]!.n;
  const post = (body: Record<string, unknown>, headers: Record<string, string> = {}, url = gw.url!) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'fields' }], ...body }),
    });

  it('passes temperature and max_tokens to the model call', async () => {
    const r = await client.chat.completions.create({ model: 'default', temperature: 1.25, max_tokens: 120, messages: [{ role: 'user', content: 't1' }] });
    expect(r.choices[0]!.message.content).toBe('echo: t1');
    const [call] = sent('t1');
    expect(call!.body.temperature).toBe(1.25);
    expect(call!.body.max_tokens).toBe(120);
  });

  it("uses the agent's temperature and maxTokens when the request names none", async () => {
    await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 't2' }] });
    const [call] = sent('t2');
    expect(call!.body.temperature).toBe(0.3);
    expect(call!.body.max_tokens).toBe(500);
  });

  it("caps max_tokens / max_completion_tokens at the agent's maxTokens, never above", async () => {
    await client.chat.completions.create({ model: 'default', max_completion_tokens: 100_000, messages: [{ role: 'user', content: 't3' }] });
    expect(sent('t3')[0]!.body.max_tokens).toBe(500);
    // Both given: the smaller.
    await client.chat.completions.create({ model: 'default', max_tokens: 90, max_completion_tokens: 80, messages: [{ role: 'user', content: 't4' }] });
    expect(sent('t4')[0]!.body.max_tokens).toBe(80);
    // An agent without maxTokens: the request's, at most the model's own.
    await client.chat.completions.create({ model: 'loose', max_tokens: 64, messages: [{ role: 'user', content: 't5' }] });
    expect(sent('t5')[0]!.body.max_tokens).toBe(64);
    await client.chat.completions.create({ model: 'loose', max_tokens: 10_000_000, messages: [{ role: 'user', content: 't6' }] });
    expect(sent('t6')[0]!.body.max_tokens).toBe(4096); // the fake model's maxTokens (providers/from-env.ts)
  });

  it('honours the fields in a message answered by a worker of another process (they travel with the inbox row)', async () => {
    const r = await post({ temperature: 0.9, max_tokens: 77, messages: [{ role: 'user', content: 't7' }] }, {}, edge.url!);
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).choices[0].message.content).toBe('echo: t7');
    expect(sent('t7')[0]!.body).toMatchObject({ temperature: 0.9, max_tokens: 77 });
  });

  it('accepts n: 1, response_format text, the defaults of fields it cannot pass on, harmless metadata and nulls', async () => {
    const r = await client.chat.completions.create({
      model: 'default',
      n: 1,
      response_format: { type: 'text' },
      top_p: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      metadata: { ticket: '42' },
      store: false,
      stream_options: null,
      seed: null,
      messages: [{ role: 'user', content: 't8' }],
    });
    expect(r.choices).toHaveLength(1);
    expect(r.choices[0]!.message.content).toBe('echo: t8');
    const s = await client.chat.completions.create({
      model: 'default',
      stream: true,
      stream_options: { include_usage: true },
      user: 'fields-user',
      messages: [{ role: 'user', content: 't9' }],
    });
    let text = '';
    for await (const ch of s) text += ch.choices[0]?.delta?.content ?? '';
    expect(text).toBe('echo: t9');
  });

  it('passes response_format JSON mode and JSON schema to a chain whose slots take them', async () => {
    await client.chat.completions.create({ model: 'default', response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'j1' }] });
    expect(sent('j1')[0]!.body.response_format).toEqual({ type: 'json_object' });
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
    await client.chat.completions.create({
      model: 'default',
      response_format: { type: 'json_schema', json_schema: { name: 'count', schema, strict: true } },
      messages: [{ role: 'user', content: 'j2' }],
    });
    expect(sent('j2')[0]!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'count', schema, strict: true } });
    // Text is the default: nothing is added.
    await client.chat.completions.create({ model: 'default', response_format: { type: 'text' }, messages: [{ role: 'user', content: 'j3' }] });
    expect(sent('j3')[0]!.body.response_format).toBeUndefined();
  });

  it('refuses JSON modes where a provider slot does not take them (jsonModes: false), naming the field', async () => {
    for (const response_format of [{ type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }]) {
      const before = await inboxCount();
      const r = await post({ response_format, messages: [{ role: 'user', content: 'j4' }] }, {}, edge.url!);
      expect(r.status).toBe(400);
      const e = ((await r.json()) as any).error;
      expect(e).toMatchObject({ param: 'response_format', code: 'unsupported_parameter' });
      expect(e.message).toMatch(/takes no JSON modes/);
      expect(await inboxCount()).toBe(before);
    }
    expect(sent('j4')).toHaveLength(0);
  });

  describe('refuses what it cannot honour with a 400 naming the field, and enqueues nothing', () => {
    const cases: Array<[string, Record<string, unknown>, string, string, RegExp]> = [
      ['temperature above 2', { temperature: 2.5 }, 'temperature', 'invalid_value', /<= 2, but got 2.5/],
      ['temperature below 0', { temperature: -1 }, 'temperature', 'invalid_value', />= 0/],
      ['temperature not a number', { temperature: 'hot' }, 'temperature', 'invalid_type', /temperature/],
      ['max_tokens 0', { max_tokens: 0 }, 'max_tokens', 'invalid_value', />= 1/],
      ['max_tokens not an integer', { max_tokens: 1.5 }, 'max_tokens', 'invalid_type', /integer/],
      ['max_completion_tokens a string', { max_completion_tokens: '100' }, 'max_completion_tokens', 'invalid_type', /max_completion_tokens/],
      ['n: 2', { n: 2 }, 'n', 'unsupported_parameter', /'n' is not supported.*one choice/],
      ['n: 0', { n: 0 }, 'n', 'invalid_value', />= 1/],
      ['response_format of no known type', { response_format: { type: 'yaml' } }, 'response_format.type', 'invalid_value', /response_format/],
      [
        'response_format json_schema without a schema',
        { response_format: { type: 'json_schema', json_schema: { name: 'x' } } },
        'response_format.json_schema.schema',
        'invalid_type',
        /schema/,
      ],
      [
        'response_format json_schema with a bad name',
        { response_format: { type: 'json_schema', json_schema: { name: 'a b', schema: {} } } },
        'response_format.json_schema.name',
        'invalid_value',
        /name/,
      ],
      [
        'client tools',
        { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] },
        'tools',
        'unsupported_parameter',
        /configured on the gateway/,
      ],
      ['tool_choice', { tool_choice: 'auto' }, 'tool_choice', 'unsupported_parameter', /configured on the gateway/],
      ['functions', { functions: [{ name: 'f' }] }, 'functions', 'unsupported_parameter', /configured on the gateway/],
      ['top_p other than 1', { top_p: 0.5 }, 'top_p', 'unsupported_parameter', /'top_p' is not supported.*only 1/],
      ['presence_penalty', { presence_penalty: 0.4 }, 'presence_penalty', 'unsupported_parameter', /presence_penalty/],
      ['seed', { seed: 7 }, 'seed', 'unsupported_parameter', /'seed' is not supported/],
      ['stop', { stop: ['\n'] }, 'stop', 'unsupported_parameter', /'stop' is not supported/],
      ['an unknown field', { temprature: 0.2 }, 'temprature', 'unknown_parameter', /Unrecognized request argument supplied: temprature/],
      ['metadata not an object', { metadata: 'x' }, 'metadata', 'invalid_type', /metadata/],
    ];
    it.each(cases)('%s', async (_name, body, param, code, message) => {
      const before = await inboxCount();
      const r = await post(body);
      expect(r.status).toBe(400);
      const e = ((await r.json()) as any).error;
      expect(e).toMatchObject({ type: 'invalid_request_error', param, code });
      expect(e.message).toMatch(message);
      expect(await inboxCount()).toBe(before);
    });

    it('the openai client sees n > 1 as a BadRequestError naming n', async () => {
      const err = await client.chat.completions.create({ model: 'default', n: 3, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('unsupported_parameter');
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the same body (streamed or not, on either ingress) and refuses another body with 422', async () => {
      const key = { 'Idempotency-Key': 'fields-idem-1' };
      const body = { temperature: 0.5, messages: [{ role: 'user' as const, content: 'i1' }] };
      const first = await post(body, key);
      expect(first.status).toBe(200);
      const answer = ((await first.json()) as any).choices[0].message.content;
      expect(answer).toBe('echo: i1');
      // The same body again, at the other ingress process: the same answer, no second model call.
      const again = await post(body, key, edge.url!);
      expect(again.status).toBe(200);
      expect(((await again.json()) as any).choices[0].message.content).toBe(answer);
      const streamed = openaiClient(edge.url!, API_KEY, key).chat.completions.create({
        model: 'default',
        stream: true,
        temperature: 0.5,
        messages: body.messages,
      });
      let text = '';
      for await (const ch of await streamed) text += ch.choices[0]?.delta?.content ?? '';
      expect(text).toBe(answer);
      expect(sent('i1')).toHaveLength(1);

      const before = await inboxCount();
      for (const [other, url] of [
        [{ messages: [{ role: 'user', content: 'i1 but different' }] }, gw.url!],
        [{ ...body, temperature: 0.6 }, edge.url!],
        [{ ...body, max_tokens: 10 }, gw.url!],
        [{ ...body, model: 'loose' }, edge.url!],
      ] as const) {
        const r = await post(other, key, url);
        expect(r.status).toBe(422);
        expect(((await r.json()) as any).error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused', param: 'Idempotency-Key' });
      }
      expect(await inboxCount()).toBe(before);
      expect(sent('i1 but different')).toHaveLength(0);
    });

    it('a named conversation compares the new message only; another conversation is another body', async () => {
      const key = { 'Idempotency-Key': 'fields-idem-2' };
      const conv = { 'x-switchboard-conversation': 'fields-conv' };
      const r1 = await post({ messages: [{ role: 'user', content: 'i2' }] }, { ...key, ...conv });
      expect(r1.status).toBe(200);
      // Earlier messages of a named conversation are not the request's: a client resending its history replays.
      const r2 = await post(
        {
          messages: [
            { role: 'user', content: 'older' },
            { role: 'assistant', content: 'older answer' },
            { role: 'user', content: 'i2' },
          ],
        },
        { ...key, ...conv },
        edge.url!,
      );
      expect(r2.status).toBe(200);
      expect(sent('i2')).toHaveLength(1);
      const r3 = await post({ messages: [{ role: 'user', content: 'i2' }] }, { ...key, 'x-switchboard-conversation': 'fields-conv-other' });
      expect(r3.status).toBe(422);
    });

    it('of two concurrent requests with one key and different bodies, one is answered and the other refused', async () => {
      const key = { 'Idempotency-Key': 'fields-idem-3' };
      const [a, b] = await Promise.all([
        post({ messages: [{ role: 'user', content: 'i3 a' }] }, key, gw.url!),
        post({ messages: [{ role: 'user', content: 'i3 b' }] }, key, edge.url!),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 422]);
      expect(sent('i3 a').length + sent('i3 b').length).toBe(1);
    });
  });
});
