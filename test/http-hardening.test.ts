/**
 * HTTP hardening (issue #18): request parsing errors are 4xx answers in the
 * OpenAI error shape and never reach a process-level handler; user-supplied
 * names are looked up as own properties only; the process guard logs what
 * nothing caught. The first suite runs the gateway in this process (embedded
 * store and queue); the last two spawn `bin/switchboard.js` from dist (the
 * gateway on Redis and Postgres): run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { keywordOf } from '../channels/sms/keywords.js';
import { param, parseForm } from '../channels/sms/signature.js';
import { sign } from '../kernel/hmac-signature.js';
import { packageRoot } from '../kernel/paths.js';
import { queueModeFor } from '../kernel/queue-modes.js';
import { parseApprovalAnswer } from '../src/approvals/parse.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { HttpError, MAX_JSON_DEPTH, parseJson, parseJsonObject } from '../src/http/server.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { buildRequest, type RawResponse, rawExchange } from './support/raw-http.js';
import { TestRedis } from './support/redis.js';

const OP_KEY = 'sk-operator-hardening-01';
const HOOK_SECRET = 'hardening-hook-secret-0123456789';
const RESERVED = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

/** The OpenAI error shape: { error: { message, type, param, code } }. */
function openAiError(r: RawResponse): { message: string; type: string; param: unknown; code: unknown } {
  expect(r.headers['content-type']).toMatch(/application\/json/);
  const body = JSON.parse(r.body.toString('utf8')) as { error: { message: string; type: string; param: unknown; code: unknown } };
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.type).toBe('string');
  expect(body.error).toHaveProperty('param');
  expect(body.error).toHaveProperty('code');
  return body.error;
}

describe('HTTP hardening (embedded gateway)', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let port: number;
  const processEvents: string[] = [];
  const onRejection = (r: unknown) => processEvents.push(`unhandledRejection: ${String((r as Error)?.stack ?? r)}`);
  const onException = (e: Error) => processEvents.push(`uncaughtException: ${e.stack}`);

  const send = (method: string, path: string, headers: Array<[string, string]> = [], body?: string | Buffer) => {
    const len = body === undefined ? [] : ([['content-length', String(Buffer.byteLength(body))]] as Array<[string, string]>);
    return rawExchange(port, buildRequest(method, path, [['host', '127.0.0.1'], ['connection', 'close'], ...len, ...headers], body));
  };
  const json = (key = API_KEY): Array<[string, string]> => [
    ['authorization', `Bearer ${key}`],
    ['content-type', 'application/json'],
  ];
  const chatBody = (model: string, text = 'hello') => JSON.stringify({ model, messages: [{ role: 'user', content: text }] });

  beforeAll(async () => {
    process.on('unhandledRejection', onRejection);
    process.on('uncaughtException', onException);
    process.env.SB_HARDEN_HOOK_SECRET = HOOK_SECRET;
    fake = new FakeLlm();
    await fake.start();
    // "loop forever" asks for a tool call on every model call: only the per-turn cap ends the turn.
    fake.respond((req) =>
      lastUserText(req.body).includes('loop forever') || JSON.stringify(req.body.messages).includes('loop forever')
        ? toolCall('no_such_tool', {})
        : reply(`echo: ${lastUserText(req.body)}`),
    );
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          http: { operatorKeys: [OP_KEY], maxBodyBytes: 64 * 1024 },
          agents: { default: { maxIterations: 3 } },
          channels: { webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_HARDEN_HOOK_SECRET' }] } },
        },
      ),
    );
    port = Number(new URL(gw.url!).port);
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  });

  it('answers malformed percent-encoding in any route parameter with a 400, without a key, and keeps serving', async () => {
    const bad = ['%E0%A4%A', '%', '%zz', '%ED%A0%80', '%C0'];
    const routes: Array<[string, (s: string) => string]> = [
      ['GET', (s) => `/v1/conversations/${s}/messages`],
      ['POST', (s) => `/v1/approvals/${s}`],
      ['DELETE', (s) => `/v1/memory/${s}`],
      ['GET', (s) => `/v1/console/conversations/${s}/events`],
      ['GET', (s) => `/v1/console/chat/${s}/events`],
      ['POST', (s) => `/v1/access/pairing/${s}`],
      ['POST', (s) => `/v1/webhooks/${s}`],
    ];
    for (const [method, path] of routes) {
      for (const s of bad) {
        const r = await send(method, path(s));
        expect(r.status, `${method} ${path(s)}`).toBe(400);
        expect(openAiError(r)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_path' });
      }
    }
    // NUL and other control characters in a parameter, and NUL in the query string, are refused too.
    expect((await send('GET', '/v1/conversations/a%00b/messages', json())).status).toBe(400);
    expect((await send('GET', '/v1/conversations/a%0Ab/messages', json())).status).toBe(400);
    expect((await send('GET', '/v1/memory?scope=%00', json(OP_KEY))).status).toBe(400);
    expect((await send('GET', '/healthz')).status).toBe(200);
    expect(processEvents).toEqual([]);
  });

  it('answers requests the HTTP parser refuses in the same error shape (400, 431)', async () => {
    const cases: Array<[Buffer, number]> = [
      [
        buildRequest('GET', '/healthz', [
          ['host', 'x'],
          ['content-length', 'abc'],
        ]),
        400,
      ],
      [
        buildRequest(
          'GET',
          '/healthz',
          [
            ['host', 'x'],
            ['content-length', '1'],
            ['content-length', '2'],
          ],
          'ab',
        ),
        400,
      ],
      [
        buildRequest('GET', '/healthz', [
          ['host', 'x'],
          ['x-bad', 'a\u0000b'],
        ]),
        400,
      ],
      [buildRequest('GET', Buffer.from('/he\u0000llo', 'latin1'), [['host', 'x']]), 400],
      [
        buildRequest('GET', '/healthz', [
          ['host', 'x'],
          ['x-big', 'a'.repeat(20_000)],
        ]),
        431,
      ],
      [
        buildRequest(
          'POST',
          '/v1/chat/completions',
          [
            ['host', 'x'],
            ['authorization', `Bearer ${API_KEY}`],
            ['transfer-encoding', 'chunked'],
          ],
          'zz\r\nabc\r\n0\r\n\r\n',
        ),
        400,
      ],
      [Buffer.from('NOT AN HTTP REQUEST\r\n\r\n'), 400],
      [buildRequest('GET', '/healthz', [['connection', 'close']]), 400], // HTTP/1.1 without Host
    ];
    for (const [bytes, status] of cases) {
      const r = await rawExchange(port, bytes);
      expect(r.status, bytes.subarray(0, 60).toString('latin1')).toBe(status);
      openAiError(r);
    }
    const r = await send('GET', '/healthz', [['expect', 'something-else']]);
    expect(r.status).toBe(417);
    openAiError(r);
  });

  it('refuses __proto__, constructor, toString and the other Object.prototype names as models (404 model_not_found)', async () => {
    const before = fake.requests.length;
    for (const model of RESERVED) {
      const r = await send('POST', '/v1/chat/completions', json(), chatBody(model));
      expect(r.status, model).toBe(404);
      expect(openAiError(r)).toMatchObject({ param: 'model', code: 'model_not_found' });
    }
    // The openai client sees the same as for any unknown model.
    await expect(openaiClient(gw.url!).chat.completions.create({ model: '__proto__', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    expect(fake.requests.length).toBe(before);
    expect((await gw.infra.store.db.query<{ n: number }>(`select count(*)::int as n from conversations where agent = any($1)`, [RESERVED])).rows[0]!.n).toBe(0);
  });

  it('a conversation whose stored agent is "__proto__" runs as the default agent, under its per-turn model-call cap', async () => {
    // Written below the HTTP API, as a conversation recorded before the fix would be.
    const before = fake.requests.length;
    const acc = await gw.infra.store.accept(
      {
        channel: 'http',
        externalId: 'proto-agent-1',
        conversationKey: 'http/proto/agent/-',
        sender: { id: 'proto' },
        text: 'loop forever please',
        attachments: [],
        receivedAt: new Date(),
      },
      '__proto__',
    );
    await gw.infra.queue.add({ conversationId: acc.conversationId }, { dedupKey: acc.conversationId });
    const turn = await eventually(
      async () => (await gw.infra.store.turns(acc.conversationId)).find((t) => t.status === 'done' || t.status === 'failed'),
      30_000,
    );
    expect(turn.status).toBe('done');
    // maxIterations of the default agent is 3 here; without an agent the cap would be undefined and the loop unbounded.
    expect(fake.requests.length - before).toBe(3);
  });

  it('answers bad, non-object, too deep and NUL-holding JSON on every JSON route with a 400', async () => {
    const routes: Array<[string, string, string]> = [
      ['POST', '/v1/chat/completions', API_KEY],
      ['POST', '/v1/approvals/ABCDE', OP_KEY],
      ['POST', '/v1/memory', OP_KEY],
      ['POST', '/v1/events/subscribers', OP_KEY],
      ['POST', '/v1/access', OP_KEY],
    ];
    const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const bodies = [
      '{',
      '{"model": "default", "messages": [',
      'null',
      '[]',
      '1',
      '"text"',
      'true',
      '\u0000',
      deep(MAX_JSON_DEPTH + 1),
      '['.repeat(20_000) + ']'.repeat(20_000),
      '{"note":"a\\u0000b","model":"a\\u0000"}',
    ];
    for (const [method, path, key] of routes) {
      for (const b of bodies) {
        const r = await send(method, path, json(key), b);
        expect(r.status, `${path} ${b.slice(0, 30)}`).toBe(400);
        expect(openAiError(r).type).toBe('invalid_request_error');
      }
    }
    // The signed webhook channel: a signed body of null is a 400, not a crash in the handler.
    const ts = Math.floor(Date.now() / 1000);
    const r = await send(
      'POST',
      '/v1/webhooks/crm',
      [
        ['content-type', 'application/json'],
        ['x-switchboard-timestamp', String(ts)],
        ['x-switchboard-signature', sign(HOOK_SECRET, ts, 'null')],
      ],
      'null',
    );
    expect(r.status).toBe(400);
    expect(openAiError(r).code).toBe('invalid_json');
  });

  it('answers a content type that is not JSON with 415 and an oversized body with 413 (and closes that connection)', async () => {
    for (const ct of ['text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'garbage']) {
      for (const [path, key] of [
        ['/v1/chat/completions', API_KEY],
        ['/v1/memory', OP_KEY],
        ['/v1/access', OP_KEY],
        ['/v1/events/subscribers', OP_KEY],
        ['/v1/approvals/ABCDE', OP_KEY],
        ['/mcp', OP_KEY],
      ] as const) {
        const r = await send(
          'POST',
          path,
          [
            ['authorization', `Bearer ${key}`],
            ['content-type', ct],
          ],
          chatBody('default'),
        );
        expect(r.status, `${path} ${ct}`).toBe(415);
        expect(openAiError(r).code).toBe('unsupported_media_type');
      }
    }
    // What `curl -d` sends without -H: the body is read as JSON; form data is then invalid JSON.
    expect(
      (
        await send(
          'POST',
          '/v1/chat/completions',
          [
            ['authorization', `Bearer ${API_KEY}`],
            ['content-type', 'application/x-www-form-urlencoded'],
          ],
          chatBody('nope'),
        )
      ).status,
    ).toBe(404);
    const form = await send(
      'POST',
      '/v1/chat/completions',
      [
        ['authorization', `Bearer ${API_KEY}`],
        ['content-type', 'application/x-www-form-urlencoded'],
      ],
      'model=default&stream=true',
    );
    expect(form.status).toBe(400);
    expect(openAiError(form).code).toBe('invalid_json');
    // JSON types with parameters or a +json suffix are fine.
    expect(
      (
        await send(
          'POST',
          '/v1/chat/completions',
          [
            ['authorization', `Bearer ${API_KEY}`],
            ['content-type', 'application/json; charset=UTF-8'],
          ],
          chatBody('nope'),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await send(
          'POST',
          '/v1/chat/completions',
          [
            ['authorization', `Bearer ${API_KEY}`],
            ['content-type', 'application/vnd.api+json'],
          ],
          chatBody('nope'),
        )
      ).status,
    ).toBe(404);
    const big = chatBody('default', 'x'.repeat(70_000));
    for (const [path, key] of [
      ['/v1/chat/completions', API_KEY],
      ['/v1/memory', OP_KEY],
      ['/v1/access', OP_KEY],
      ['/mcp', OP_KEY],
    ] as const) {
      const r = await send('POST', path, json(key), big);
      expect(r.status, path).toBe(413);
      expect(openAiError(r).code).toBe('request_too_large');
    }
    // A declared length beyond the limit is refused before any body is read.
    const r = await rawExchange(
      port,
      buildRequest(
        'POST',
        '/v1/chat/completions',
        [
          ['host', 'x'],
          ['authorization', `Bearer ${API_KEY}`],
          ['content-length', '99999999999'],
        ],
        '{}',
      ),
    );
    expect(r.status).toBe(413);
    expect(r.headers.connection).toBe('close');
  });

  it('refuses numbers no id can be (1e400, 1e300, fractions) with a 4xx', async () => {
    await send('POST', '/v1/chat/completions', [...json(), ['x-switchboard-conversation', 'numbers']], chatBody('default', 'hi'));
    for (const q of ['1e400', '-1', '1.5', '1e300', 'Infinity']) {
      const r = await send('GET', `/v1/conversations/numbers/messages?after=${q}`, json());
      expect(r.status, q).toBe(400);
      expect(openAiError(r).param).toBe('after');
    }
    for (const id of ['1e300', '1e400', '0', '-5', '1.5', '99999999999999999999']) {
      const r = await send('DELETE', `/v1/memory/${id}`, json(OP_KEY));
      expect(r.status, id).toBe(404);
    }
    const r = await send('POST', '/v1/chat/completions', json(), '{"model":"default","stream":1e400,"messages":[{"role":"user","content":"x"}]}');
    expect(r.status).toBe(400);
  });

  it('prototype-pollution JSON does not pollute Object.prototype: later requests behave as before', async () => {
    const pollution = [
      '{"__proto__":{"polluted":"yes","decision":"approve","operator":true,"default":{"maxIterations":1}},"model":"default","messages":[{"role":"user","content":"p1"}]}',
      '{"constructor":{"prototype":{"polluted":"yes","decision":"approve"}},"model":"default","messages":[{"role":"user","content":"p2"}]}',
      '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":"yes","decision":"approve"},"model":"default","messages":[{"role":"user","content":"p3","__proto__":{"role":"user"}}]}',
      '{"messages":[{"__proto__":{"polluted":"yes"}}],"model":{"__proto__":{"polluted":"yes"}}}',
    ];
    const targets: Array<[string, string]> = [
      ['/v1/chat/completions', API_KEY],
      ['/v1/approvals/ABCDE', OP_KEY],
      ['/v1/memory', OP_KEY],
      ['/v1/access', OP_KEY],
      ['/v1/events/subscribers', OP_KEY],
      ['/mcp', OP_KEY],
    ];
    for (const body of pollution) {
      for (const [path, key] of targets) {
        const r = await send('POST', path, [...json(key), ['accept', 'application/json, text/event-stream']], body);
        expect(r.status ?? 999, `${path} ${body.slice(0, 40)}: ${r.outcome} ${r.error ?? ''} ${r.head}`).toBeLessThan(500);
      }
    }
    // The gateway runs in this process: its Object.prototype is this one.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).decision).toBeUndefined();
    // A later request that relies on absent properties: no "decision" in the body is still refused as such.
    const r = await send('POST', '/v1/approvals/ABCDE', json(OP_KEY), '{}');
    expect(r.status).toBe(400);
    expect(openAiError(r).param).toBe('decision');
    // "decision": "constructor" is no decision either.
    const c = await send('POST', '/v1/approvals/ABCDE', json(OP_KEY), '{"decision":"constructor"}');
    expect(c.status).toBe(400);
    expect(openAiError(c).param).toBe('decision');
    // And a normal chat still works.
    const ok = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'after pollution' }] });
    expect(ok.choices[0]!.message.content).toBe('echo: after pollution');
    expect(processEvents).toEqual([]);
  });
});

describe('own-property lookups and the config schema', () => {
  it('parseJson drops __proto__ keys, keeps constructor as a plain key, and refuses what cannot be stored', () => {
    const v = parseJsonObject('{"__proto__":{"x":1},"a":{"__proto__":[1]},"constructor":{"prototype":{"y":2}}}');
    expect(Object.keys(v)).toEqual(['a', 'constructor']);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v.a as object)).toEqual([]);
    expect(({} as Record<string, unknown>).y).toBeUndefined();
    expect(parseJson('"\\ud800x"')).toBe('\ufffdx');
    expect(() => parseJson('"a\\u0000"')).toThrow(HttpError);
    expect(() => parseJson('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toThrow(/nested deeper/);
    expect(parseJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeTruthy();
    expect(() => parseJsonObject('null')).toThrow(HttpError);
  });

  it('channel, mode, operator and keyword tables answer only for their own names', async () => {
    for (const w of ['constructor', '__proto__', 'tostring', 'hasownproperty', 'valueof']) expect(parseApprovalAnswer(`${w} K7Q2P`), w).toBeNull();
    for (const w of ['constructor', '__proto__', 'toString', 'CONSTRUCTOR']) expect(keywordOf(w)).toBeNull();
    const cfg = testConfig(null, {});
    for (const ch of RESERVED) expect(queueModeFor(cfg.conversations, ch)).toBe(cfg.conversations.queueMode);
    const form = parseForm(Buffer.from('__proto__=a&toString=b&constructor=c&Body=hi&Body=again'));
    expect(Object.getPrototypeOf(form)).toBe(Object.prototype);
    expect(param(form, '__proto__')).toBe('a');
    expect(param(form, 'toString')).toBe('b');
    expect(param(form, 'Body')).toBe('again');
    expect(param(form, 'hasOwnProperty')).toBeUndefined();
    const { AccessControl } = await import('../src/access.js');
    const ac = new AccessControl({} as never, cfg);
    for (const ch of RESERVED) expect(ac.policy(ch)).toEqual({ policy: 'allowlist', allow: [] });
    const { configureChannels } = await import('../app/register-builtin-channels.js');
    await expect(configureChannels({ ...cfg, channels: { constructor: {} } } as never, {})).rejects.toThrow(/unknown channel/);
  });

  it('the config schema refuses Object.prototype names as agent, channel, operator, access and queue-mode keys', () => {
    const cases: Array<Record<string, unknown>> = [
      { agents: { default: {}, constructor: {} } },
      { agents: { default: {}, toString: {} } },
      { agents: JSON.parse('{"default":{},"__proto__":{}}') },
      { channels: { constructor: {} } },
      { channels: JSON.parse('{"__proto__":{}}') },
      { access: { hasOwnProperty: { policy: 'open' } } },
      { approvals: { operators: { valueOf: ['x'] } } },
      { conversations: { queueModeByChannel: { toString: 'steer' } } },
    ];
    for (const c of cases) expect(() => loadConfig({}, c), JSON.stringify(c)).toThrow(ConfigError);
    expect(() => loadConfig({}, { agents: { default: {}, 'my-agent.v2': {} } })).not.toThrow();
  });
});

describe('the gateway process (bin/switchboard.js from dist, Redis and Postgres)', () => {
  let fake: FakeLlm;
  let gp: GatewayProcess | undefined;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
  });
  afterAll(async () => {
    await gp?.kill('SIGKILL');
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('survives the URI crash of issue #18 and __proto__ models, and answers normally afterwards', async () => {
    gp = await GatewayProcess.spawn('start', {
      SWITCHBOARD_DATA: mkdtempSync(join(tmpdir(), 'sb-harden-')),
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_OPERATOR_KEYS: OP_KEY,
      SWITCHBOARD_SANDBOX: 'none',
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_QUEUE_PREFIX: `sbh${process.pid}`,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake-key',
      SWITCHBOARD_MODEL: 'fake-model',
    });
    const port = Number(new URL(gp.url!).port);
    const r = await rawExchange(
      port,
      buildRequest('GET', '/v1/conversations/%E0%A4%A/messages', [
        ['host', '127.0.0.1'],
        ['connection', 'close'],
      ]),
    );
    expect(r.status).toBe(400);
    openAiError(r);
    for (const model of RESERVED) {
      const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] });
      const m = await rawExchange(
        port,
        buildRequest(
          'POST',
          '/v1/chat/completions',
          [
            ['host', '127.0.0.1'],
            ['authorization', `Bearer ${API_KEY}`],
            ['content-type', 'application/json'],
            ['content-length', String(body.length)],
          ],
          body,
        ),
      );
      expect(m.status, model).toBe(404);
    }
    // Prototype-pollution bodies, then requests whose answer would change if Object.prototype had been touched.
    const post = (path: string, key: string, body: string) =>
      rawExchange(
        port,
        buildRequest(
          'POST',
          path,
          [
            ['host', '127.0.0.1'],
            ['authorization', `Bearer ${key}`],
            ['content-type', 'application/json'],
            ['content-length', String(Buffer.byteLength(body))],
          ],
          body,
        ),
      );
    for (const body of [
      '{"__proto__":{"decision":"approve","model":"default","messages":[{"role":"user","content":"x"}]}}',
      '{"constructor":{"prototype":{"decision":"approve","model":"default"}}}',
    ]) {
      for (const [path, key] of [
        ['/v1/chat/completions', API_KEY],
        ['/v1/approvals/ABCDE', OP_KEY],
        ['/v1/memory', OP_KEY],
      ] as const)
        expect((await post(path, key, body)).status, path).toBe(400);
    }
    const noDecision = await post('/v1/approvals/ABCDE', OP_KEY, '{}');
    expect(noDecision.status).toBe(400);
    expect(openAiError(noDecision).param).toBe('decision');
    const noModel = await post('/v1/chat/completions', API_KEY, '{"messages":[{"role":"user","content":"x"}]}');
    expect(noModel.status).toBe(400);
    expect(openAiError(noModel).param).toBe('model');
    await new Promise((res) => setTimeout(res, 200));
    expect(gp.proc.exitCode).toBeNull();
    const ok = await openaiClient(gp.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'still here' }] });
    expect(ok.choices[0]!.message.content).toBe('echo: still here');
    expect(gp.logs.join('\n')).not.toMatch(/uncaught exception|unhandled promise rejection/);
  });
});

describe('the process guard', () => {
  /** Runs a script that installs the guard from dist, with a logger on stdout. */
  const run = (body: string) =>
    new Promise<{ code: number | null; lines: Array<Record<string, unknown>>; stdout: string }>((resolve) => {
      const guard = pathToFileURL(join(packageRoot, 'dist', 'app', 'process-guard.js')).href;
      const log = pathToFileURL(join(packageRoot, 'dist', 'src', 'log.js')).href;
      const script = `import { installProcessGuard } from ${JSON.stringify(guard)}; import { createLogger } from ${JSON.stringify(log)};
        const log = createLogger('info'); ${body}`;
      const p = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (out += d));
      const t = setTimeout(() => p.kill('SIGKILL'), 15_000);
      p.on('exit', (code) => {
        clearTimeout(t);
        const lines = out.split('\n').flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
        resolve({ code, lines, stdout: out });
      });
    });

  it('logs an unhandled rejection and keeps serving', async () => {
    const r = await run(`installProcessGuard(log);
      Promise.reject(new Error('lost promise'));
      setTimeout(() => { log.info('still serving'); process.exit(0); }, 200);`);
    expect(r.code).toBe(0);
    expect(r.lines.find((l) => l.level === 50 && /unhandled promise rejection/.test(String(l.msg)))).toMatchObject({ err: { message: 'lost promise' } });
    expect(r.lines.some((l) => l.msg === 'still serving')).toBe(true);
  });

  it('logs an uncaught exception, runs the shutdown, and exits non-zero', async () => {
    const r = await run(`installProcessGuard(log, { shutdown: async () => { log.info('gateway closed'); }, shutdownTimeoutMs: 5000 });
      setInterval(() => {}, 1000);
      setTimeout(() => { throw new Error('bug in a timer'); }, 10);`);
    expect(r.code).toBe(1);
    expect(r.lines.find((l) => l.level === 60)).toMatchObject({ err: { message: 'bug in a timer' } });
    expect(r.lines.some((l) => l.msg === 'gateway closed')).toBe(true);
  });

  it('exits at the deadline when the shutdown hangs', async () => {
    const r = await run(`installProcessGuard(log, { shutdown: () => new Promise(() => {}), shutdownTimeoutMs: 300 });
      setInterval(() => {}, 1000);
      setTimeout(() => { throw new Error('stuck'); }, 10);`);
    expect(r.code).toBe(1);
    expect(r.lines.some((l) => /took too long/.test(String(l.msg)))).toBe(true);
  });
});
