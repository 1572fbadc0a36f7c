/**
 * Fuzzing the gateway's HTTP server (issue #18): seeded random paths
 * (malformed percent-encoding, overlong, NUL, unicode), methods, headers (bad
 * and duplicate Content-Length, bad Authorization, huge), framing and bodies
 * (bad JSON, deep nesting, huge numbers, prototype-pollution keys) sent over
 * raw sockets to every mounted route: chat completions, conversations,
 * approvals, the operator API, the console, /mcp, webhooks, /metrics,
 * /healthz, /readyz and the Slack, SMS and webhook channels. Every answer must
 * be a well-formed HTTP response, below 500 (a 503 only for a backing service
 * or channel not ready), in the OpenAI error shape where it is an error of the
 * API; nothing may reach a process-level handler, Object.prototype must be
 * untouched and a normal request must work afterwards.
 *
 * Bounded: SB_FUZZ_COUNT requests (default 700, then 200 against the process)
 * within SB_FUZZ_SECONDS (default 60); SB_FUZZ_SEED replays a run. Only
 * 127.0.0.1. The first suite runs the gateway in this process (embedded store
 * and queue); the second spawns bin/switchboard.js from dist on Redis and
 * Postgres: `npm run build` first.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { sign } from '../kernel/hmac-signature.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { BOT_TOKEN, FakeSlack, SIGNING_SECRET } from './fakes/slack-api.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { API_KEY, eventually, GatewayProcess, openaiClient, startGateway, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { buildRequest, type RawResponse, rawExchange } from './support/raw-http.js';
import { TestRedis } from './support/redis.js';

const SEED = Number(process.env.SB_FUZZ_SEED ?? 0x5eed18);
const COUNT = Number(process.env.SB_FUZZ_COUNT ?? 700);
const SECONDS = Number(process.env.SB_FUZZ_SECONDS ?? 60);
const CONCURRENCY = 4;
const OP_KEY = 'sk-operator-fuzz-000001';
const HOOK_SECRET = 'fuzz-hook-secret-0123456789abcdef';
const SMS_PUBLIC = 'https://sms.fuzz.example.test';
const MAX_BODY = 64 * 1024;

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with SB_FUZZ_SEED. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
type Rng = ReturnType<typeof prng>;

const RESERVED = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

/** Path parameter values, as raw request-target text (latin1). */
const PARAMS = [
  'crm',
  'alice',
  'K7Q2P',
  'ABCDE',
  '1',
  '42',
  'oneoff-x',
  'conv_1',
  '%E0%A4%A',
  '%',
  '%%',
  '%zz',
  '%C0%AF',
  '%ED%A0%80',
  '%FF%FE',
  '%E2%98%83',
  '%F0%9F%98%80',
  '%00',
  'a%00b',
  '%0A',
  '%0D%0A',
  '%7F',
  '%20',
  '..',
  '.',
  '%2E%2E',
  '%2F..%2F',
  '..%2F..%2Fetc%2Fpasswd',
  'a'.repeat(2000),
  'b'.repeat(900),
  '%41'.repeat(400),
  ...RESERVED,
  '%5F%5Fproto%5F%5F',
  '1e400',
  '-1',
  '0x10',
  'NaN',
  'Infinity',
  '1.5',
  '99999999999999999999',
  '\u00e9',
  '\u00ff\u00fe',
  '\u00c3\u00a9', // raw bytes >= 0x80 (the parser refuses them)
];
const QUERIES = [
  'after=1e400',
  'after=-1',
  'after=abc',
  'after=1.5',
  'after=99999999999999999999',
  'key=%00',
  `key=${OP_KEY}`,
  'scope=%FF',
  'scope=global',
  'status=pending',
  'x=%E0%A4%A',
  'a=1&a=2&a=3',
  '__proto__[polluted]=yes',
  'constructor[prototype][polluted]=yes',
  'q=' + 'x'.repeat(3000),
  '%',
  '&&&',
  '=',
  'key',
];
const JUNK_PATHS = [
  '/',
  '//',
  '///v1//chat//completions',
  '/v1/chat/completions/',
  '/V1/CHAT/COMPLETIONS',
  '/v1/chat/completions%00',
  '/v1/chat/completions;x=1',
  '/v1/%2e%2e/healthz',
  '/v1/../healthz',
  '/./healthz',
  '/healthz/..',
  '/%',
  '/' + 'a'.repeat(8000),
  '/' + 'seg/'.repeat(500),
  '*',
  'http://127.0.0.1/healthz',
  'https://evil.example/v1/models',
  'healthz',
  '/\u00e9t\u00e9',
  '/%E2%98%83',
  '/v1/models?' + 'x=1&'.repeat(1500),
  '/.env',
  '/favicon.ico',
  '/v1/webhooks/',
  '/v1/approvals/',
  '/v1/memory/',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'CONNECT', 'get', 'FOO', 'G-ET', 'POST ', ''];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-16',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'garbage',
  ';;;',
  'application/json; charset="utf-8"',
  'application/json\u00ff',
];
const AUTHS = (): Array<Array<[string, string]>> => [
  [],
  [['authorization', `Bearer ${API_KEY}`]],
  [['authorization', `Bearer ${OP_KEY}`]],
  [['authorization', `Bearer ${OP_KEY}`]],
  [['authorization', 'Bearer']],
  [['authorization', 'Bearer    ']],
  [['authorization', 'Basic dXNlcjpwYXNz']],
  [['authorization', `bearer ${API_KEY}`]],
  [['authorization', `Bearer ${API_KEY} extra`]],
  [['authorization', 'Bearer ' + 'k'.repeat(12_000)]],
  [
    ['authorization', `Bearer ${API_KEY}`],
    ['authorization', `Bearer ${OP_KEY}`],
  ],
  [['authorization', 'Bearer \u00ff\u00fe\u00fd']],
  [['authorization', 'Bearer a\u0000b']],
  [['authorization', '\t']],
];
const KEYS = [
  'model',
  'messages',
  'stream',
  'user',
  'stream_options',
  'decision',
  'scope',
  'variable',
  'note',
  'key',
  'id',
  'url',
  'secretEnv',
  'events',
  'channel',
  'sender',
  'status',
  'text',
  'conversation',
  'callbackUrl',
  'idempotencyKey',
  'jsonrpc',
  'method',
  'params',
  'role',
  'content',
  'type',
  'challenge',
  'event',
  'payload',
  ...RESERVED,
  '',
  'x'.repeat(300),
  '\u2603',
  '\\u0000',
];
const STRINGS = [
  'default',
  'hello',
  '',
  ' ',
  'approve',
  'deny',
  'always',
  'constructor',
  '__proto__',
  'toString',
  'global',
  'conversation',
  'sender',
  'allowed',
  'denied',
  'user',
  'assistant',
  'system',
  'tool',
  '*',
  'turn.completed',
  'http://127.0.0.1:9/x',
  'http://127.0.0.1:9/hook',
  'SB_FUZZ_HOOK_SECRET',
  'PATH',
  '/new',
  '/status',
  '/stop',
  '/mode steer',
  'YES ABCDE',
  'always ABCDE constructor',
  'x'.repeat(5000),
  '\u2603\u{1f600}',
  'url_verification',
  'event_callback',
  'block_actions',
  'tools/list',
  'tools/call',
  'initialize',
];
const NUMBERS = [
  '0',
  '-0',
  '1',
  '-1',
  '1.5',
  '1e400',
  '-1e400',
  '1e-400',
  '123456789012345678901234567890',
  '9007199254740993',
  '0.0000001',
  '1E+308',
  '2e308',
];

function randomJson(r: Rng, depth = 0): string {
  const kind = r.int(depth > 3 ? 4 : 7);
  switch (kind) {
    case 0:
      return JSON.stringify(r.pick(STRINGS));
    case 1:
      return r.pick(NUMBERS);
    case 2:
      return r.pick(['true', 'false', 'null']);
    case 3:
      return r.pick(['"a\\u0000b"', '"\\ud800"', '"\\udc00x\\ud800"', '"\\u005f\\u005fproto\\u005f\\u005f"', '"\\/\\b\\f"']);
    case 4:
    case 5: {
      const n = r.int(6);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(`${JSON.stringify(r.pick(KEYS))}:${randomJson(r, depth + 1)}`);
      return `{${parts.join(',')}}`;
    }
    default: {
      const n = r.int(5);
      return `[${Array.from({ length: n }, () => randomJson(r, depth + 1)).join(',')}]`;
    }
  }
}

const chat = (model: string, text: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: text }], ...extra });

function randomBody(r: Rng, route: string): string | Buffer {
  const kind = r.int(17);
  switch (kind) {
    case 0:
    case 1:
      return chat('default', `fuzz ${r.int(1e6)}`, r.chance(0.3) ? { stream: true } : {});
    case 2:
      return chat(r.pick(RESERVED), 'reserved model');
    case 3:
      return randomJson(r);
    case 4:
      return r.pick([
        '{',
        '{"model": "default", "messages": [',
        "{'a': 1}",
        '{"a":1,}',
        '[1,2',
        'nul',
        'undefined',
        '{"a":"\u0000"}',
        '\ufeff{}',
        '{"a":1}{"b":2}',
        '{"a":"\\x41"}',
        '{"a": 01}',
        '"unterminated',
      ]);
    case 5:
      return r.pick(['null', '[]', '1', '"s"', 'true', '[{}]', '{}']);
    case 6: {
      const n = r.pick([63, 64, 65, 200, 5_000, 30_000]);
      return r.chance(0.5) ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    }
    case 7:
      return `{"model":"default","stream":${r.pick(NUMBERS)},"messages":[{"role":"user","content":"n"}],"max_tokens":${r.pick(NUMBERS)},"after":${r.pick(NUMBERS)},"decision":${r.pick(NUMBERS)},"id":${r.pick(NUMBERS)}}`;
    case 8:
      return r.pick([
        '{"__proto__":{"polluted":"yes","decision":"approve","operator":true},"model":"default","messages":[{"role":"user","content":"p"}]}',
        '{"constructor":{"prototype":{"polluted":"yes"}},"decision":"approve"}',
        '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":"yes"},"note":"n","scope":"global"}',
        '{"messages":[{"role":"user","content":"x","__proto__":{"polluted":"yes"}}],"model":"default"}',
        '{"a":{"b":{"__proto__":{"polluted":"yes"}}},"channel":"sms","sender":"x","status":"allowed"}',
        '[{"__proto__":{"polluted":"yes"}}]',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"__proto__":{"polluted":"yes"},"conversation":"x","text":"t"}}}',
      ]);
    case 9:
      return `{"note":"a\\u0000b","text":"\\u0000","model":"default\\u0000","messages":[{"role":"user","content":"\\u0000"}],"channel":"a\\u0000","sender":"s","status":"allowed","scope":"global"}`;
    case 10:
      return `{"model":"default","messages":[{"role":"user","content":"\\ud800 lone \\udfff"}],"text":"\\ud83d","note":"\\udc00","scope":"global"}`;
    case 11:
      return JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'x'.repeat(MAX_BODY + r.int(10_000)) }] });
    case 12:
      return r.pick([
        '__proto__=x&toString=y&constructor=z&MessageSid=SM1&From=%2B15550001&To=%2B15550002&Body=hi',
        'payload=null',
        'payload=%7B%22__proto__%22%3A%7B%22polluted%22%3A%22yes%22%7D%7D',
        'payload=%5B%5D',
        'payload=%7B',
        'Body=STOP&From=x',
        'a=%E0%A4%A&b=%00',
        'type=url_verification&challenge=c',
      ]);
    case 13:
      return r.pick([
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_transcript","arguments":{"conversation":"nope","after":1e300}}}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"answer_approval","arguments":{"code":"ABCDE","decision":"constructor"}}}',
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_conversations","arguments":{"limit":1e400}}}',
        '[{"jsonrpc":"2.0","id":6,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]',
        '{"jsonrpc":"1.0","id":{},"method":7}',
      ]);
    case 14:
      return route.includes('slack')
        ? JSON.stringify(
            r.pick([
              { type: 'url_verification', challenge: 'c' },
              {
                type: 'event_callback',
                event: { type: 'message', text: 'hi', user: 'U1', channel: 'D1', ts: '1.1' },
                event_id: `Ev${r.int(1e9)}`,
                team_id: 'T0TEAM',
              },
              { type: 'block_actions', actions: [{ action_id: 'constructor', value: '__proto__' }] },
              { ssl_check: 1 },
              { type: 'event_callback', event: null },
              { type: 'event_callback', event: { type: '__proto__' } },
            ]),
          )
        : JSON.stringify({
            text: r.pick(STRINGS),
            conversation: r.pick(STRINGS),
            sender: r.pick(STRINGS),
            ...(r.chance(0.3) ? { callbackUrl: 'http://127.0.0.1:9/cb' } : {}),
          });
    case 15:
      return Buffer.from(Array.from({ length: r.int(300) }, () => r.int(256)));
    default:
      return '';
  }
}

interface Target {
  method: string;
  path: string;
}

const PLAUSIBLE_PARAMS = ['crm', 'fuzz-conv', 'ABCDE', 'K7Q2P', '1', '2', 'c_missing', 'oneoff-abc', 'rules'];
const ROLES = ['user', 'user', 'user', 'system', 'assistant', 'developer', 'tool', 'function', 'bogus', ''];

/** A value that is sometimes right and sometimes not, for one field of a plausible body. */
const maybe = (r: Rng, good: unknown[]): unknown => (r.chance(0.75) ? r.pick(good) : JSON.parse(randomJson(r, 2)));

/** A body the route could accept, with wrong values here and there (so its validation and handler run). */
function plausibleBody(r: Rng, method: string, route: string, sms: { accountSid: string }): string {
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH') return '';
  const obj = (o: Record<string, unknown>) => {
    const ctor: string = 'constructor';
    if (r.chance(0.1)) o[ctor] = { prototype: { polluted: 'yes' } };
    if (r.chance(0.1)) o[r.pick(KEYS)] = JSON.parse(randomJson(r, 1));
    const text = JSON.stringify(o);
    // JSON.stringify has no own __proto__ to write (assignment sets the prototype): spell one out.
    return r.chance(0.2) ? text.replace(/^\{/, '{"__proto__":{"polluted":"yes","decision":"approve","operator":true},').replace(',}', '}') : text;
  };
  if (route === '/v1/chat/completions') {
    const messages = Array.from({ length: 1 + r.int(3) }, () => ({
      role: maybe(r, ROLES),
      content: maybe(r, [`fuzz ${r.int(1e6)}`, '', [{ type: 'text', text: 'part' }], null, '/status', '/new', 'YES ABCDE', 'always ABCDE constructor']),
    }));
    if (r.chance(0.8)) messages.push({ role: 'user', content: `fuzz last ${r.int(1e6)}` });
    return obj({
      model: maybe(r, ['default', 'default', 'default', ...RESERVED, 'nope']),
      messages,
      ...(r.chance(0.3) ? { stream: maybe(r, [true, false]) } : {}),
      ...(r.chance(0.2) ? { user: maybe(r, ['fuzz-user', '__proto__', 'a b']) } : {}),
      ...(r.chance(0.1) ? { stream_options: { include_usage: true } } : {}),
    });
  }
  if (route.startsWith('/v1/approvals/'))
    return obj({
      decision: maybe(r, ['approve', 'deny', 'always', 'YES', 'constructor', 'toString']),
      ...(r.chance(0.3) ? { scope: maybe(r, ['conversation', 'sender', 'global', '__proto__']) } : {}),
      ...(r.chance(0.2) ? { variable: maybe(r, [[2], [], [1e300]]) } : {}),
    });
  if (route === '/v1/memory')
    return obj({
      scope: maybe(r, ['global', 'conversation', 'sender', 'constructor']),
      key: maybe(r, ['k', '__proto__', '']),
      note: maybe(r, ['a note', '', 'x'.repeat(2001)]),
    });
  if (route === '/v1/events/subscribers')
    return obj({
      id: maybe(r, ['hook1', '__proto__', 'a b']),
      url: maybe(r, ['http://127.0.0.1:9/h', 'ftp://x', 'javascript:alert(1)']),
      secretEnv: maybe(r, ['SB_FUZZ_HOOK_SECRET', '1bad']),
      events: maybe(r, [['*'], ['turn.completed'], ['nope'], 'x']),
    });
  if (route === '/v1/access')
    return obj({
      channel: maybe(r, ['sms', 'slack', '__proto__', 'constructor']),
      sender: maybe(r, ['+15550001', 'U1', '__proto__']),
      status: maybe(r, ['allowed', 'denied', 'pending']),
    });
  if (route.startsWith('/v1/access/pairing')) return '';
  if (route === '/mcp') {
    if (r.chance(0.2)) return String(randomBody(r, route));
    return JSON.stringify({
      jsonrpc: '2.0',
      id: r.int(100),
      method: maybe(r, ['initialize', 'tools/list', 'tools/call', 'ping']),
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'fuzz', version: '1' },
        name: maybe(r, ['list_conversations', 'read_transcript', 'send_message', 'list_approvals', 'answer_approval', 'constructor']),
        arguments: {
          conversation: maybe(r, ['c_missing', '__proto__']),
          text: 'hi',
          code: 'ABCDE',
          decision: maybe(r, ['approve', 'constructor']),
          limit: maybe(r, [1, 1e300, -1]),
          after: maybe(r, [0, 1e300]),
          timeoutSeconds: 1,
        },
      },
    });
  }
  if (route.startsWith('/v1/webhooks/'))
    return obj({
      text: maybe(r, ['hello hook', '', '/status']),
      conversation: maybe(r, ['c1', '__proto__']),
      sender: maybe(r, ['s1', 'constructor']),
      ...(r.chance(0.2) ? { callbackUrl: 'http://127.0.0.1:9/cb' } : {}),
      ...(r.chance(0.3) ? { idempotencyKey: `k${r.int(20)}` } : {}),
    });
  if (route.includes('slack')) return String(randomBody(r, '/slack/events'));
  if (route.includes('/sms/')) {
    const p: Record<string, string> = {
      MessageSid: `SM${r.int(1e9)}`,
      From: r.pick(['+15550001', '__proto__']),
      To: '+15550002',
      Body: r.pick(['hello', 'STOP', 'START', 'HELP', 'YES ABCDE', 'constructor']),
      AccountSid: r.chance(0.8) ? sms.accountSid : 'ACnope',
      MessageStatus: r.pick(['delivered', 'failed', 'constructor', '__proto__']),
    };
    let form = new URLSearchParams(p).toString();
    if (r.chance(0.2)) form += `&${r.pick(['__proto__', 'toString', 'constructor'])}=x`;
    return form;
  }
  return randomJson(r);
}

/** One random request: the bytes and what the answer should be judged against. */
function randomRequest(
  r: Rng,
  routes: Target[],
  port: number,
  sms: { accountSid: string; authToken: string },
): { bytes: Buffer; label: string; halfClose: boolean; head: boolean; route: string } {
  const route = r.pick(routes);
  // Half the requests are plausible (the route's method, key, content type and framing, a body close
  // to what it takes with some fields wrong), so handlers run past their first checks; half are chaotic.
  const plausible = r.chance(0.5);
  let path = route.path.replace(/:([a-zA-Z]+)/g, () => r.pick(plausible && r.chance(0.7) ? PLAUSIBLE_PARAMS : PARAMS));
  if (r.chance(plausible ? 0.05 : 0.15)) path += '?' + Array.from({ length: 1 + r.int(3) }, () => r.pick(QUERIES)).join('&');
  if (!plausible && r.chance(0.06)) path = r.pick(JUNK_PATHS);
  if (!plausible && r.chance(0.03)) path = path.replace('/', '//');
  const method = plausible || r.chance(0.78) ? route.method : r.pick(METHODS);
  const withBody = ['POST', 'PUT', 'PATCH'].includes(method) || (!plausible && r.chance(0.1));
  const body = !withBody ? '' : plausible ? plausibleBody(r, method, route.path, sms) : randomBody(r, route.path);
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');

  const headers: Array<[string, string]> = [];
  if (plausible) {
    const operatorRoute = !/chat\/completions|\/v1\/conversations|\/v1\/models/.test(route.path);
    headers.push(['host', `127.0.0.1:${port}`]);
    headers.push(
      ...(r.chance(0.85) ? ([['authorization', `Bearer ${operatorRoute ? OP_KEY : r.pick([API_KEY, OP_KEY])}`]] as Array<[string, string]>) : r.pick(AUTHS())),
    );
    if (withBody)
      headers.push([
        'content-type',
        route.path.includes('/sms/') ? 'application/x-www-form-urlencoded' : r.chance(0.9) ? 'application/json' : r.pick(CONTENT_TYPES),
      ]);
    if (route.path === '/mcp') headers.push(['accept', 'application/json, text/event-stream']);
    if (r.chance(0.2)) headers.push(['x-switchboard-conversation', r.pick(['fuzz-conv', 'fuzz-conv-2', '__proto__', 'a b'])]);
    if (r.chance(0.1)) headers.push(['idempotency-key', `idem-${r.int(10)}`]);
    if (r.chance(0.8)) signFor(headers, route.path, path, raw, sms.authToken);
    headers.push(['content-length', String(raw.length)]);
    if (r.chance(0.5)) headers.push(['connection', 'close']);
    const label = `plausible ${method} ${JSON.stringify(path.slice(0, 120))} [${headers
      .map(([k, v]) => `${k}: ${v.slice(0, 40)}`)
      .join(' | ')
      .slice(0, 400)}] body(${raw.length}): ${JSON.stringify(raw.subarray(0, 200).toString('latin1'))}`;
    return { bytes: buildRequest(method, Buffer.from(path, 'latin1'), headers, raw), label, halfClose: false, head: method === 'HEAD', route: route.path };
  }
  const host = r.next();
  if (host < 0.94) headers.push(['host', `127.0.0.1:${port}`]);
  else if (host < 0.96) headers.push(['host', 'a'], ['host', 'b']);
  else if (host < 0.98) headers.push(['host', '\u00ff\u00fe']);
  headers.push(...r.pick(AUTHS()));
  if (withBody || r.chance(0.1)) {
    const ct = r.chance(0.75)
      ? route.path.includes('sms') || (route.path.includes('slack') && r.chance(0.4))
        ? 'application/x-www-form-urlencoded'
        : 'application/json'
      : r.pick(CONTENT_TYPES);
    if (r.chance(0.95)) headers.push(['content-type', ct]);
  }
  // Channel signatures over the final body, so that the body parsers are reached too.
  if (r.chance(0.35)) signFor(headers, route.path, path, raw, sms.authToken);
  // Headers from the awkward end of the protocol.
  for (let i = r.int(4); i > 0; i--) {
    const pickHeader = r.pick<Array<[string, string]>>([
      [['x-switchboard-conversation', r.pick(['fuzz-conv', '__proto__', 'constructor', 'a b', '', 'x'.repeat(200), '%E0%A4%A', 'ok.name:1@x'])]],
      [
        ['x-switchboard-conversation', 'a'],
        ['x-switchboard-conversation', 'b'],
      ],
      [['idempotency-key', r.pick(['k1', 'x'.repeat(500), '\u00ff', ''])]],
      [['accept', r.pick(['application/json, text/event-stream', 'text/event-stream', '*/*', 'image/png', ''])]],
      [['connection', r.pick(['close', 'keep-alive', 'Upgrade', 'foo, bar', 'close, close'])]],
      [
        ['connection', 'Upgrade'],
        ['upgrade', 'websocket'],
      ],
      [['expect', r.pick(['100-continue', 'foo', '100-continue, bar'])]],
      [['content-encoding', r.pick(['gzip', 'br', 'identity', 'x'])]],
      [[r.pick(['x-junk', 'x-\u00e9', 'x-junk ', ' x-lead', 'x:colon', 'x@', '']), r.pick(['v', '', '\t', 'a\u0000b', '\u00ff'.repeat(50)])]],
      [['x-huge', 'h'.repeat(r.chance(0.3) ? r.pick([17_000, 70_000]) : 8_000)]],
      Array.from({ length: 120 }, (_, j): [string, string] => [`x-many-${j}`, 'v']),
      [
        ['x-slack-retry-num', r.pick(['1', 'NaN', '1e400', '-1'])],
        ['x-slack-retry-reason', 'http_timeout'],
      ],
      [
        ['x-forwarded-for', '1.2.3.4, ::1'],
        ['forwarded', 'for=evil'],
      ],
      [['cookie', '__proto__=x; constructor=y']],
    ]);
    headers.push(...pickHeader);
  }

  // Framing: mostly right, sometimes wrong on purpose.
  let framedBody: Buffer = raw;
  let halfClose = false;
  const framing = r.next();
  if (!withBody && framing < 0.9) {
    /* no body, no framing headers */
  } else if (framing < 0.76) headers.push(['content-length', String(raw.length)]);
  else if (framing < 0.84) {
    headers.push(['transfer-encoding', 'chunked']);
    const cut = r.int(raw.length + 1);
    const parts = [raw.subarray(0, cut), raw.subarray(cut)].filter((p) => p.length);
    framedBody = Buffer.concat([
      ...parts.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')])),
      Buffer.from('0\r\n\r\n'),
    ]);
  } else if (framing < 0.87) {
    headers.push(['transfer-encoding', 'chunked']);
    framedBody = Buffer.concat([Buffer.from(r.pick(['zz\r\n', '-1\r\n', 'ffffffffffffffffff\r\n', '5\r\nab\r\n', '1;ext=\u0000\r\nx\r\n'])), raw]);
    halfClose = true;
  } else if (framing < 0.92) {
    headers.push(
      ...r.pick<Array<[string, string]>>([
        [['content-length', 'abc']],
        [['content-length', '-1']],
        [['content-length', '1e3']],
        [['content-length', '0x10']],
        [['content-length', ` ${raw.length}`]],
        [
          ['content-length', String(raw.length)],
          ['content-length', String(raw.length + 1)],
        ],
        [
          ['content-length', String(raw.length)],
          ['content-length', String(raw.length)],
        ],
        [['content-length', '99999999999999999999']],
        [['content-length', `${raw.length}, ${raw.length}`]],
      ]),
    );
    halfClose = true;
  } else if (framing < 0.95) {
    headers.push(['content-length', String(raw.length + 1 + r.int(1000))]); // longer than sent: EOF ends it
    halfClose = true;
  } else if (framing < 0.98) {
    headers.push(['content-length', String(Math.max(0, raw.length - 1 - r.int(raw.length + 1)))]); // shorter: the rest is a garbage request
    halfClose = true;
  } else {
    headers.push(['content-length', String(raw.length)], ['transfer-encoding', r.pick(['chunked', 'gzip, chunked', 'identity'])]);
    halfClose = true;
  }
  if (r.chance(0.5) && !headers.some(([k]) => k === 'connection')) headers.push(['connection', 'close']);
  const target = Buffer.from(path, 'latin1');
  const label = `${JSON.stringify(method)} ${JSON.stringify(path.slice(0, 120))} [${headers
    .map(([k, v]) => `${k}: ${v.slice(0, 40)}`)
    .join(' | ')
    .slice(0, 400)}] body(${raw.length}): ${JSON.stringify(raw.subarray(0, 160).toString('latin1'))}`;
  return { bytes: buildRequest(method, target, headers, framedBody), label, halfClose, head: method === 'HEAD', route: route.path };
}

/** The channel's signature headers over the body (webhook HMAC, Slack v0, Twilio), so its parsers are reached. */
function signFor(headers: Array<[string, string]>, route: string, path: string, raw: Buffer, twilioToken: string): void {
  const ts = Math.floor(Date.now() / 1000);
  if (route.startsWith('/v1/webhooks')) headers.push(['x-switchboard-timestamp', String(ts)], ['x-switchboard-signature', sign(HOOK_SECRET, ts, raw)]);
  if (route.includes('slack'))
    headers.push(
      ['x-slack-request-timestamp', String(ts)],
      ['x-slack-signature', `v0=${createHmac('sha256', SIGNING_SECRET).update(`v0:${ts}:`).update(raw).digest('hex')}`],
    );
  if (route.includes('/sms/')) {
    const params = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
    headers.push(['x-twilio-signature', twilio.getExpectedTwilioSignature(twilioToken, SMS_PUBLIC + path, params)]);
  }
}

/**
 * Why an answer is not acceptable, or null. `clientHungUp`: the request's
 * framing is broken on purpose (a body shorter than its Content-Length, a bad
 * chunk, conflicting lengths) and the client sent FIN after it. Node's parser
 * answers those with a 400, except after an Upgrade header (Connection:
 * Upgrade), where it reports no body error and aborts the request when the
 * client hangs up: nothing is reset or hangs, the client left. Only then is
 * no answer accepted.
 */
function judge(res: RawResponse, route: string, clientHungUp = false): string | null {
  if (res.outcome === 'timeout') return `no complete answer in time (a hang): ${res.head}`;
  if (clientHungUp && res.outcome === 'closed' && res.status === undefined) return null; // (an interim 100 Continue at most)
  if (res.status === undefined) return `no HTTP answer (${res.outcome}${res.error ? ` ${res.error}` : ''}): ${JSON.stringify(res.head)}`;
  if (res.status < 200 && res.status !== 101) return `interim status ${res.status} as the answer`;
  if (res.status >= 500) {
    if (res.status !== 503) return `server error ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`;
    const text = res.body.toString('utf8');
    if (!/service_unavailable|store_unavailable|queue_unavailable|not_ready/.test(text))
      return `503 that is not a backing service or channel being unavailable: ${text.slice(0, 300)}`;
  }
  if (res.status >= 400 && res.outcome !== 'complete') return `error answer cut short (${res.outcome}): ${JSON.stringify(res.head)}`;
  const channel = route.includes('/sms/') || route.includes('slack');
  if (res.status >= 400 && !channel && res.body.length) {
    let body: { error?: { message?: unknown; type?: unknown; param?: unknown; code?: unknown }; jsonrpc?: unknown };
    try {
      body = JSON.parse(res.body.toString('utf8')) as typeof body;
    } catch {
      return `error answer ${res.status} is not JSON: ${JSON.stringify(res.body.subarray(0, 200).toString('latin1'))}`;
    }
    // The MCP SDK answers protocol errors in JSON-RPC's shape, which is what MCP clients read.
    if (route === '/mcp' && body.jsonrpc === '2.0') return null;
    const e = body.error;
    if (!e || typeof e.message !== 'string' || typeof e.type !== 'string' || !('param' in e) || !('code' in e))
      return `error answer ${res.status} not in the OpenAI shape: ${res.body.toString('utf8').slice(0, 300)}`;
  }
  return null;
}

async function fuzz(
  port: number,
  routes: Target[],
  count: number,
  seconds: number,
  seed: number,
  sms: { accountSid: string; authToken: string },
): Promise<{ failures: string[]; statuses: Record<string, number>; sent: number }> {
  const r = prng(seed);
  const deadline = Date.now() + seconds * 1000;
  const failures: string[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  // Requests are generated in order from the one PRNG, so a seed replays the same sequence.
  const requests = Array.from({ length: count }, () => randomRequest(r, routes, port, sms));
  // SB_FUZZ_ONLY=<index>: replay one request of the seed's sequence alone.
  const only = process.env.SB_FUZZ_ONLY;
  if (only !== undefined) {
    const q = requests[Number(only)]!;
    requests.length = 0;
    requests.push(q);
    console.log(JSON.stringify(q.bytes.subarray(0, 2000).toString('latin1')));
  }
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= requests.length || Date.now() > deadline || failures.length >= 10) return;
      const q = requests[i]!;
      const res = await rawExchange(port, q.bytes, { timeoutMs: 20_000, head: q.head, halfClose: q.halfClose, streamIdleMs: 2_000 });
      const key = String(res.status ?? res.outcome);
      statuses[key] = (statuses[key] ?? 0) + 1;
      const why = judge(
        res,
        q.route,
        q.halfClose && /\r\nconnection: [^\r]*upgrade/i.test(q.bytes.subarray(0, q.bytes.indexOf('\r\n\r\n')).toString('latin1')),
      );
      if (why) failures.push(`#${i} (seed ${seed}) ${q.label}\n  -> ${why}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { failures, statuses, sent: Math.min(next, count) };
}

describe('HTTP fuzz: the gateway in this process (embedded store and queue, every channel with HTTP routes)', () => {
  let fake: FakeLlm;
  let slack: FakeSlack;
  let tw: FakeTwilio;
  let gw: Gateway;
  const processEvents: string[] = [];
  const onRejection = (e: unknown) => processEvents.push(`unhandledRejection: ${String((e as Error)?.stack ?? e)}`);
  const onException = (e: Error) => processEvents.push(`uncaughtException: ${e.stack}`);
  const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  beforeAll(async () => {
    process.on('unhandledRejection', onRejection);
    process.on('uncaughtException', onException);
    fake = new FakeLlm();
    slack = new FakeSlack();
    tw = new FakeTwilio(SMS_PUBLIC);
    await Promise.all([fake.start(), slack.start(), tw.start()]);
    fake.respond((req) => reply(`echo: ${lastUserText(req.body).slice(0, 100)}`));
    process.env.SB_FUZZ_HOOK_SECRET = HOOK_SECRET;
    process.env.SB_FUZZ_SLACK_BOT = BOT_TOKEN;
    process.env.SB_FUZZ_SLACK_SECRET = SIGNING_SECRET;
    process.env.SB_FUZZ_TWILIO_TOKEN = tw.authToken;
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          http: { operatorKeys: [OP_KEY], maxBodyBytes: MAX_BODY },
          channels: {
            webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_FUZZ_HOOK_SECRET', callbackUrl: 'http://127.0.0.1:9/cb' }], callbackAttempts: 1 },
            slack: { mode: 'http', apiUrl: slack.apiUrl, botTokenEnv: 'SB_FUZZ_SLACK_BOT', signingSecretEnv: 'SB_FUZZ_SLACK_SECRET', ackTimeoutMs: 500 },
            sms: {
              accountSid: tw.accountSid,
              authTokenEnv: 'SB_FUZZ_TWILIO_TOKEN',
              publicUrl: SMS_PUBLIC,
              apiBaseUrl: tw.url,
              sendAttempts: 1,
              retryBaseMs: 10,
              retryMaxMs: 20,
            },
          },
        },
      ),
    );
    // Slack answers 503 not_ready until its connection is up: fuzz a gateway that is ready.
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([fake?.close(), slack?.close(), tw?.close()]);
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  });

  it('answers every random request with a well-formed answer below 500, and still works afterwards', async () => {
    const routes = gw.http!.routeTable();
    // Every route the issue names is mounted, so the fuzz reaches each of them.
    const paths = routes.map((x) => `${x.method} ${x.path}`);
    for (const p of [
      'POST /v1/chat/completions',
      'GET /v1/conversations/:conversation/messages',
      'POST /v1/approvals/:code',
      'GET /v1/approvals',
      'POST /v1/memory',
      'GET /console',
      'GET /v1/console/state',
      'POST /mcp',
      'POST /v1/webhooks/:name',
      'GET /metrics',
      'GET /healthz',
      'GET /readyz',
      'POST /slack/events',
      'POST /v1/channels/sms/inbound',
      'POST /v1/channels/sms/status',
      'POST /v1/events/subscribers',
      'POST /v1/access',
    ]) {
      expect(paths).toContain(p);
    }
    const port = Number(new URL(gw.url!).port);
    const { failures, statuses, sent } = await fuzz(port, routes, COUNT, SECONDS, SEED, tw);
    console.log(`http fuzz (seed ${SEED}): ${sent} requests over ${routes.length} routes; answers by status: ${JSON.stringify(statuses)}`);
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(Math.min(COUNT, 100));
    expect(processEvents).toEqual([]);
    // Prototype-pollution bodies changed nothing in this process (the gateway's).
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Later requests behave normally.
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    const ok = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'after the fuzz' }] });
    expect(ok.choices[0]!.message.content).toBe('echo: after the fuzz');
    const r = await fetch(`${gw.url}/v1/approvals/ABCDE`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OP_KEY}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('decision');
  });
});

describe('HTTP fuzz: the gateway as its own process (bin/switchboard.js start, from dist, on Redis and Postgres)', () => {
  let fake: FakeLlm;
  let gp: GatewayProcess | undefined;
  let redis: TestRedis;
  let pgdb: TestDatabase;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    redis = await TestRedis.start();
    pgdb = await createTestDatabase();
    fake.respond((req) => reply(`echo: ${lastUserText(req.body).slice(0, 100)}`));
  });
  afterAll(async () => {
    await gp?.kill('SIGKILL');
    await fake?.close();
    await redis?.stop();
    await pgdb?.drop();
  });

  it('stays up through random requests and answers normally afterwards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-fuzz-'));
    const config = join(dir, 'switchboard.json');
    writeFileSync(
      config,
      JSON.stringify({
        http: { operatorKeys: [OP_KEY], maxBodyBytes: MAX_BODY },
        channels: { webhook: { hooks: [{ name: 'crm', secretEnv: 'SB_FUZZ_HOOK_SECRET' }] } },
      }),
    );
    gp = await GatewayProcess.spawn('start', {
      SWITCHBOARD_CONFIG: config,
      SWITCHBOARD_DATA: join(dir, 'data'),
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_API_KEYS: API_KEY,
      SWITCHBOARD_LOG_LEVEL: 'info',
      SWITCHBOARD_SANDBOX: 'none',
      REDIS_URL: redis.url,
      DATABASE_URL: pgdb.url,
      SWITCHBOARD_QUEUE_PREFIX: `sbf${process.pid}`,
      SB_FUZZ_HOOK_SECRET: HOOK_SECRET,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake-key',
      SWITCHBOARD_MODEL: 'fake-model',
    });
    const port = Number(new URL(gp.url!).port);
    const routes: Target[] = [
      ['POST', '/v1/chat/completions'],
      ['GET', '/v1/models'],
      ['GET', '/v1/conversations/:conversation/messages'],
      ['GET', '/v1/approvals'],
      ['POST', '/v1/approvals/:code'],
      ['GET', '/v1/memory'],
      ['POST', '/v1/memory'],
      ['DELETE', '/v1/memory/:id'],
      ['POST', '/mcp'],
      ['GET', '/mcp'],
      ['GET', '/v1/events/subscribers'],
      ['POST', '/v1/events/subscribers'],
      ['GET', '/console'],
      ['GET', '/v1/console/state'],
      ['GET', '/v1/console/conversations/:id/events'],
      ['GET', '/v1/access'],
      ['POST', '/v1/access/pairing/:code'],
      ['POST', '/v1/access'],
      ['POST', '/v1/webhooks/:name'],
      ['GET', '/healthz'],
      ['GET', '/readyz'],
      ['GET', '/metrics'],
    ].map(([method, path]) => ({ method: method!, path: path! }));
    const count = Math.max(50, Math.round(COUNT / 3.5));
    const { failures, statuses, sent } = await fuzz(port, routes, count, SECONDS / 2, SEED + 1, { accountSid: 'ACnone', authToken: 'none' });
    console.log(`http fuzz against the process (seed ${SEED + 1}): ${sent} requests; answers by status: ${JSON.stringify(statuses)}`);
    expect(failures).toEqual([]);
    expect(gp.proc.exitCode).toBeNull();
    expect((await fetch(`${gp.url}/healthz`)).status).toBe(200);
    const ok = await openaiClient(gp.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'after the fuzz' }] });
    expect(ok.choices[0]!.message.content).toBe('echo: after the fuzz');
    // Nothing reached the process guard.
    expect(gp.logs.filter((l) => /uncaught exception|unhandled promise rejection|"level":(50|60)/.test(l))).toEqual([]);
  });
});
