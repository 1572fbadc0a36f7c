/**
 * The OpenAI Responses API (POST/GET/DELETE /v1/responses) driven by the official openai client:
 * plain and streamed responses (the documented events, in order, numbered), continuity through
 * previous_response_id (scoped to the key, only from the latest response), store: false, the
 * request fields honoured or refused by name, a reused Idempotency-Key, and the gateway's tool
 * calls as mcp_call items.
 */

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, OTHER_KEY, openaiClient, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

type Msg = { role: string; content: unknown };

describe('the Responses API', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let client: OpenAI;
  let other: OpenAI;
  let redis: TestRedis;
  let pgdb: TestDatabase;

  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Msg[];
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool') return reply('the time is known');
      const text = lastUserText(req.body);
      if (text === 'what time is it') return toolCall('current_time', { timeZone: 'UTC' });
      if (text === 'run it') return toolCall('shell_exec', { command: 'echo hi >> out.txt' });
      if (text === 'fail please') return [{ kind: 'error', status: 500 }];
      return reply(`echo: ${text}`);
    });
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    gw = await startGateway(
      testConfig(
        fake,
        { redisUrl: redis.url, databaseUrl: pgdb.url },
        {
          agents: { default: { maxTokens: 500, temperature: 0.3 } },
          // A failing provider fails at once (no busy retries).
          fallback: { busyRetryMs: 0 },
          approvals: { timeoutMs: 120_000 },
          tools: { planner: false },
        },
      ),
    );
    client = openaiClient(gw.url!);
    other = openaiClient(gw.url!, OTHER_KEY);
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  const sent = (text: string): FakeRequest[] => fake.requests.filter((r) => lastUserText(r.body) === text);
  const post = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'default', input: 'fields', ...body }),
    });

  it('answers a plain request: output_text, usage, instructions as this response’s system part', async () => {
    const r = await client.responses.create({ model: 'default', input: 'hello there', instructions: 'Answer like a pirate.' });
    expect(r.object).toBe('response');
    expect(r.id).toMatch(/^resp_/);
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe('echo: hello there');
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'echo: hello there' }],
    });
    expect(r.instructions).toBe('Answer like a pirate.');
    expect(r.usage!.output_tokens).toBeGreaterThan(0);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    const [call] = sent('hello there');
    const system = (call!.body.messages as Msg[]).filter((m) => m.role === 'system').map((m) => String(m.content));
    expect(system.join('\n')).toContain('Answer like a pirate.');
  });

  it('streams the documented events in order, numbered from 0, adding up to the answer', async () => {
    // A model that streams token by token (tokens that arrive together may leave as one delta).
    fake.enqueue(reply('echo: stream me please', 5));
    const stream = await client.responses.create({ model: 'default', input: 'stream me please', stream: true });
    const events: Array<{ type: string; sequence_number: number; delta?: string; response?: { output_text?: string; status?: string } }> = [];
    for await (const e of stream) events.push(e as never);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type).filter((t, i, all) => t !== 'response.output_text.delta' || all[i - 1] !== t);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('echo: stream me please');
    const completed = events[events.length - 1] as unknown as { response: OpenAI.Responses.Response };
    expect(completed.response.status).toBe('completed');
    expect(completed.response.output[0]).toMatchObject({ type: 'message', content: [{ text: 'echo: stream me please' }] });
    // Stored: GET returns the same response.
    const got = await client.responses.retrieve(completed.response.id);
    expect(got.output_text).toBe('echo: stream me please');
  });

  it("the SDK's stream helper accumulates the events into the final response", async () => {
    const helper = client.responses.stream({ model: 'default', input: 'helper stream' });
    let deltas = '';
    helper.on('response.output_text.delta', (e) => {
      deltas += e.delta;
    });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe('echo: helper stream');
    expect(deltas).toBe('echo: helper stream');
  });

  it('continues with previous_response_id, only from the latest response, and only for the same key', async () => {
    const r1 = await client.responses.create({ model: 'default', input: 'first question' });
    const r2 = await client.responses.create({ model: 'default', input: 'second question', previous_response_id: r1.id });
    expect(r2.previous_response_id).toBe(r1.id);
    expect(r2.output_text).toBe('echo: second question');
    // The model saw the first exchange as history.
    const msgs = sent('second question')[0]!.body.messages as Msg[];
    expect(msgs.some((m) => m.role === 'user' && String(m.content) === 'first question')).toBe(true);
    expect(msgs.some((m) => m.role === 'assistant' && String(m.content).includes('echo: first question'))).toBe(true);

    // Branching from an older response is refused.
    const stale = await client.responses.create({ model: 'default', input: 'branch', previous_response_id: r1.id }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(OpenAI.BadRequestError);
    expect((stale as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('previous_response_not_latest');
    expect(sent('branch')).toHaveLength(0);

    // Another key can neither read nor continue it: as unknown as a made-up id.
    await expect(other.responses.retrieve(r2.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const cross = await other.responses.create({ model: 'default', input: 'steal', previous_response_id: r2.id }).catch((e: unknown) => e);
    expect(cross).toBeInstanceOf(OpenAI.NotFoundError);
    expect((cross as InstanceType<typeof OpenAI.NotFoundError>).param).toBe('previous_response_id');
    await expect(other.responses.delete(r2.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(sent('steal')).toHaveLength(0);
    await expect(client.responses.retrieve('resp_madeup0000000000')).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    // The conversation is readable by its name.
    const conv = (r2 as unknown as { switchboard: { conversation: string } }).switchboard.conversation;
    const page = await fetch(`${gw.url}/v1/conversations/${conv}/messages`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(((await page.json()) as { data: unknown[] }).data.length).toBeGreaterThanOrEqual(4);

    // Deleted: gone for GET and for continuing.
    await client.responses.delete(r2.id);
    await expect(client.responses.retrieve(r2.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.create({ model: 'default', input: 'after delete', previous_response_id: r2.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
  });

  it('store: false keeps nothing retrievable and names no conversation', async () => {
    const r = await client.responses.create({ model: 'default', input: 'forget me', store: false });
    expect(r.output_text).toBe('echo: forget me');
    expect((r as unknown as { store: boolean }).store).toBe(false);
    expect((r as unknown as { switchboard: Record<string, unknown> }).switchboard.conversation).toBeUndefined();
    await expect(client.responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.create({ model: 'default', input: 'more', previous_response_id: r.id })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("shows the gateway's tool calls as mcp_call items, streamed and stored", async () => {
    const stream = await client.responses.create({ model: 'default', input: 'what time is it', stream: true });
    const events: Array<{ type: string; item?: { type: string; name?: string; status?: string; arguments?: string } }> = [];
    for await (const e of stream) events.push(e as never);
    const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item!.type);
    expect(added).toEqual(['mcp_call', 'message']);
    const types = events.map((e) => e.type);
    expect(types.indexOf('response.mcp_call.in_progress')).toBeLessThan(types.indexOf('response.mcp_call.completed'));
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item!.type === 'mcp_call')!;
    expect(done.item).toMatchObject({ name: 'current_time', status: 'completed', server_label: 'switchboard' });
    expect(JSON.parse(done.item!.arguments!)).toEqual({ timeZone: 'UTC' });
    const final = (events[events.length - 1] as unknown as { response: OpenAI.Responses.Response }).response;
    expect(final.output.map((o) => o.type)).toEqual(['mcp_call', 'message']);
    expect(final.output_text ?? (final.output[1] as OpenAI.Responses.ResponseOutputMessage).content[0]).toBeTruthy();
  });

  it('a call parked for approval is an incomplete mcp_call and an mcp_approval_request item; the next response is queued behind it', async () => {
    const r = await client.responses.create({ model: 'default', input: 'run it' });
    const types = r.output.map((o) => o.type);
    expect(types).toContain('mcp_call');
    expect(types).toContain('mcp_approval_request');
    const call = r.output.find((o) => o.type === 'mcp_call') as OpenAI.Responses.ResponseOutputItem.McpCall;
    const req = r.output.find((o) => o.type === 'mcp_approval_request') as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    expect(call).toMatchObject({ name: 'shell_exec', status: 'incomplete', approval_request_id: req.id });
    const code = (r as unknown as { switchboard: { approval: { code: string } } }).switchboard.approval.code;
    expect(req).toMatchObject({ id: `mcpr_${code}`, name: 'shell_exec', server_label: 'switchboard' });
    expect(JSON.parse(req.arguments)).toMatchObject({ command: 'echo hi >> out.txt' });
    // The text fallback is in the message too, for clients that read only output_text.
    expect(r.output_text).toContain(code);

    // The next response waits behind the approval: answered "queued" with the notice at once...
    const queued = await client.responses.create({ model: 'default', input: 'after parked', previous_response_id: r.id });
    expect(queued.status).toBe('queued');
    expect(queued.output_text).toContain(code);
    // ...and once an operator approves, GET has its answer.
    const ok = await fetch(`${gw.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(ok.status).toBe(200);
    const done = await eventually(
      async () => {
        const g = await client.responses.retrieve(queued.id);
        return g.status === 'completed' ? g : null;
      },
      60_000,
      250,
    );
    expect(done.output_text).toBe('echo: after parked');
  });

  it('a turn that fails on every provider: 502 in the error shape, streamed as response.failed', async () => {
    const plain = await post({ input: 'fail please' });
    expect(plain.status).toBe(502);
    expect(((await plain.json()) as { error: unknown }).error).toMatchObject({ type: 'api_error', code: 'provider_error' });
    const stream = await client.responses.create({ model: 'default', input: 'fail please', stream: true });
    const events: Array<{ type: string; response?: { status: string; error: { code: string; message: string } } }> = [];
    for await (const e of stream) events.push(e as never);
    const last = events[events.length - 1]!;
    expect(last.type).toBe('response.failed');
    expect(last.response!.status).toBe('failed');
    expect(last.response!.error.message).toMatch(/Every model provider failed/);
  });

  it('hostile ids and metadata are refused or unknown, never looked up as something else', async () => {
    for (const id of ['../../etc/passwd', '__proto__', `resp_${'a'.repeat(5000)}`, 'resp_%00', "resp_' or 1=1"]) {
      const r = await post({ input: 'hostile id', previous_response_id: id });
      expect([400, 404]).toContain(r.status);
      const g = await fetch(`${gw.url}/v1/responses/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${API_KEY}` } });
      expect([400, 404]).toContain(g.status);
    }
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    expect((await post({ metadata: many })).status).toBe(400);
    expect((await post({ metadata: { k: 1 } })).status).toBe(400);
    expect(sent('hostile id')).toHaveLength(0);
  });

  describe('request fields', () => {
    it('passes temperature and max_output_tokens to the model call, capped by the agent', async () => {
      await client.responses.create({ model: 'default', input: 'rf1', temperature: 1.5, max_output_tokens: 100 });
      expect(sent('rf1')[0]!.body).toMatchObject({ temperature: 1.5, max_tokens: 100 });
      const r = await client.responses.create({ model: 'default', input: 'rf2', max_output_tokens: 100_000 });
      expect(sent('rf2')[0]!.body.max_tokens).toBe(500);
      expect(r.max_output_tokens).toBe(100_000);
      await client.responses.create({ model: 'default', input: 'rf3' });
      expect(sent('rf3')[0]!.body).toMatchObject({ temperature: 0.3, max_tokens: 500 });
    });

    it('accepts the harmless and default values', async () => {
      const r = await client.responses.create({
        model: 'default',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'rf4' }] }],
        text: { format: { type: 'text' } },
        metadata: { ticket: '7' },
        top_p: 1,
        tools: [],
        truncation: 'auto',
        user: 'someone',
      });
      expect(r.output_text).toBe('echo: rf4');
      expect(r.metadata).toEqual({ ticket: '7' });
    });

    const cases: Array<[string, Record<string, unknown>, string, string, RegExp]> = [
      ['n: 2', { n: 2 }, 'n', 'unsupported_parameter', /one output/],
      ['temperature above 2', { temperature: 3 }, 'temperature', 'invalid_value', /<= 2/],
      ['max_output_tokens 0', { max_output_tokens: 0 }, 'max_output_tokens', 'invalid_value', />= 1/],
      ['text.format json_schema without a schema', { text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema', 'invalid_type', /schema/],
      ['text.format of no known type', { text: { format: { type: 'yaml' } } }, 'text.format.type', 'invalid_value', /text.format/],
      ['text.verbosity', { text: { verbosity: 'low' } }, 'text.verbosity', 'unsupported_parameter', /verbosity/],
      [
        'client tools',
        { tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }] },
        'tools',
        'unsupported_parameter',
        /configured on the gateway/,
      ],
      ['tool_choice', { tool_choice: 'required' }, 'tool_choice', 'unsupported_parameter', /configured on the gateway/],
      [
        'a function_call_output item',
        { input: [{ type: 'function_call_output', call_id: 'c1', output: '{}' }] },
        'input[0].type',
        'unsupported_input_item',
        /configured on the gateway/,
      ],
      ['top_p', { top_p: 0.2 }, 'top_p', 'unsupported_parameter', /only 1/],
      ['reasoning', { reasoning: { effort: 'high' } }, 'reasoning', 'unsupported_parameter', /reasoning/],
      ['background', { background: true }, 'background', 'unsupported_parameter', /background/],
      ['conversation', { conversation: 'conv_1' }, 'conversation', 'unsupported_parameter', /previous_response_id/],
      ['an unknown field', { temprature: 1 }, 'temprature', 'unknown_parameter', /Unrecognized request argument supplied: temprature/],
      ['no input', { input: undefined }, 'input', 'missing_required_parameter', /input/],
      ['last item not a user message', { input: [{ role: 'assistant', content: 'hi' }] }, 'input', 'invalid_value', /role "user"/],
      [
        'an input_file part',
        { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] },
        'input[0].content[0].type',
        'unsupported_content',
        /input_file/,
      ],
      ['an unknown model', { model: 'nope' }, 'model', 'model_not_found', /does not exist/],
    ];
    it.each(cases)('refuses %s with a 400 naming it', async (_name, body, param, code, message) => {
      const before = fake.requests.length;
      const r = await post(body);
      expect([400, 404]).toContain(r.status);
      const e = ((await r.json()) as { error: { type: string; param: string; code: string; message: string } }).error;
      expect(e).toMatchObject({ param, code });
      expect(e.message).toMatch(message);
      expect(fake.requests.length).toBe(before);
    });

    it('the openai client sees a refused field as a BadRequestError', async () => {
      const err = await client.responses.create({ model: 'default', input: 'x', n: 2 } as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');
    });

    it('passes text.format JSON schema and JSON mode to a chain whose slots take them, and echoes it', async () => {
      const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
      const r = await client.responses.create({
        model: 'default',
        input: 'rj1',
        text: { format: { type: 'json_schema', name: 'verdict', schema, strict: true } },
      });
      expect(sent('rj1')[0]!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'verdict', schema, strict: true } });
      expect(r.text?.format).toMatchObject({ type: 'json_schema', name: 'verdict' });
      await client.responses.create({ model: 'default', input: 'rj2', text: { format: { type: 'json_object' } } });
      expect(sent('rj2')[0]!.body.response_format).toEqual({ type: 'json_object' });
    });

    it('replays a retried Idempotency-Key and refuses it with another body (422)', async () => {
      const key = { 'Idempotency-Key': 'responses-idem-1' };
      const a = await post({ input: 'idem one' }, key);
      const b = await post({ input: 'idem one' }, key);
      const ra = (await a.json()) as { id: string; output: Array<{ content: Array<{ text: string }> }> };
      const rb = (await b.json()) as typeof ra;
      expect(rb.id).toBe(ra.id);
      expect(rb.output[0]!.content[0]!.text).toBe('echo: idem one');
      expect(sent('idem one')).toHaveLength(1);
      const c = await post({ input: 'idem two' }, key);
      expect(c.status).toBe(422);
      expect(((await c.json()) as { error: unknown }).error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
      const d = await post({ input: 'idem one', temperature: 1 }, key);
      expect(d.status).toBe(422);
      expect(sent('idem two')).toHaveLength(0);
    });
  });
});
