/**
 * Errors (kernel/errors.ts): each carries a stable code and says whether retrying may help; they
 * are SwitchboardErrors and still Errors; the HTTP layer alone turns a code into a status, from
 * one table (src/http/errors.ts), and the router answers a core error thrown under a handler with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataFolderInUseError } from '../adapters/db/data-lock.js';
import { PostgresOpenError } from '../adapters/db/pg.js';
import { QueueUnavailableError, StoreUnavailableError } from '../adapters/errors/types.js';
import { RuntimeFailure } from '../app/infra.js';
import { PermanentSmtpError } from '../channels/email/smtp.js';
import { TransientSendError } from '../channels/sms/send.js';
import { errorCode, ignoreError, isRetryable, SwitchboardError } from '../kernel/errors.js';
import { SsrfBlockedError } from '../moat/ssrf.js';
import type { ApprovalRefusal } from '../src/approvals/service.js';
import { ReplyToError } from '../src/channel/index.js';
import { ConfigError } from '../src/config.js';
import { ConversationBusyError, StaleInboxError } from '../src/drain-errors.js';
import { BodyTooLargeError, ClientGoneError, HTTP_STATUS_OF_CODE, HttpError, httpStatusOf, RequestError } from '../src/http/errors.js';
import { HttpServer } from '../src/http/server.js';
import { StepError } from '../src/ingress/compose.js';
import { ConversationFullError } from '../src/ingress.js';
import { createLogger } from '../src/log.js';
import { EventDeliveryError } from '../src/webhooks/events.js';
import { ToolError } from '../tools/contract.js';
import { SandboxUnavailableError } from '../tools/sandbox/types.js';

describe('SwitchboardError', () => {
  it('each error has its stable code, its retryable flag, its name, and is a SwitchboardError and an Error', () => {
    const cases: Array<[SwitchboardError, string, boolean, string]> = [
      [new ConfigError('invalid configuration at "x": no'), 'config_invalid', false, 'ConfigError'],
      [new ConversationFullError('Too many messages are waiting'), 'conversation_full', true, 'ConversationFullError'],
      [new RuntimeFailure('cannot reach Postgres'), 'runtime_failure', true, 'RuntimeFailure'],
      [new PostgresOpenError('cannot reach Postgres', 'unreachable'), 'postgres_unreachable', true, 'PostgresOpenError'],
      [new PostgresOpenError('database "x" does not exist', 'missing-database', 'x'), 'postgres_missing_database', false, 'PostgresOpenError'],
      [new PostgresOpenError('refused the login', 'refused'), 'postgres_refused', false, 'PostgresOpenError'],
      [new DataFolderInUseError('/data', null, '/data/switchboard.lock'), 'data_folder_in_use', false, 'DataFolderInUseError'],
      [new SandboxUnavailableError('bwrap is not installed'), 'sandbox_unavailable', false, 'SandboxUnavailableError'],
      [new ToolError('shell_exec timed out'), 'tool_failed', false, 'ToolError'],
      [new SsrfBlockedError({ ok: false, url: 'http://10.0.0.1/', reason: 'private address' } as never), 'ssrf_blocked', false, 'SsrfBlockedError'],
      [new TransientSendError({ message: 'socket hang up' }), 'sms_send_failed', true, 'TransientSendError'],
      [new PermanentSmtpError('550 no such user'), 'smtp_rejected', false, 'PermanentSmtpError'],
      [new ClientGoneError(), 'client_gone', false, 'ClientGoneError'],
      [new StoreUnavailableError(new Error('connect ECONNREFUSED')), 'store_unavailable', true, 'StoreUnavailableError'],
      [new QueueUnavailableError(new Error('Connection is closed.')), 'queue_unavailable', true, 'QueueUnavailableError'],
      [new BodyTooLargeError(10), 'request_too_large', false, 'BodyTooLargeError'],
      [new HttpError(503, 'The gateway is starting; retry shortly.', null, 'starting'), 'starting', true, 'HttpError'],
      [new RequestError(400, 'you must provide a model parameter', 'model', 'missing_required_parameter'), 'missing_required_parameter', false, 'RequestError'],
      [new ReplyToError('slack', '"ts" is not a Slack message timestamp'), 'reply_to_invalid', false, 'ReplyToError'],
      [new ConversationBusyError('c1'), 'conversation_busy', true, 'ConversationBusyError'],
      [new StaleInboxError('t1'), 'inbox_stale', true, 'StaleInboxError'],
      [new EventDeliveryError('audit', 'HTTP 410', false), 'event_delivery_failed', false, 'EventDeliveryError'],
      [new EventDeliveryError('audit', 'HTTP 503', true), 'event_delivery_failed', true, 'EventDeliveryError'],
    ];
    for (const [err, code, retryable, name] of cases) {
      expect({ name: err.name, code: err.code, retryable: err.retryable }).toEqual({ name, code, retryable });
      expect(err).toBeInstanceOf(SwitchboardError);
      expect(err).toBeInstanceOf(Error);
      expect(errorCode(err)).toBe(code);
      expect(isRetryable(err)).toBe(retryable);
      expect(String(err)).toBe(`${name}: ${err.message}`);
    }
    expect(new BodyTooLargeError(10)).toBeInstanceOf(HttpError);
    expect(new RequestError(400, 'x', null, 'invalid_value')).toBeInstanceOf(HttpError);
  });

  it('keeps the cause it wraps, and says nothing of errors that are not its own', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const err = new PostgresOpenError('cannot reach Postgres at postgres://x (DATABASE_URL): ECONNREFUSED', 'unreachable', 'x', { cause });
    expect(err.cause).toBe(cause);
    expect(new ConfigError('bad', { cause }).cause).toBe(cause);
    expect(isRetryable(cause)).toBe(false);
    expect(errorCode(cause)).toBeUndefined();
    expect(isRetryable('a string')).toBe(false);
  });

  it('ignoreError names why a failure is ignored and swallows it', async () => {
    await expect(Promise.reject(new Error('gone')).catch(ignoreError('best-effort cleanup'))).resolves.toBeUndefined();
  });
});

describe('code → HTTP status (src/http/errors.ts)', () => {
  it('maps every approval refusal and the waiting cap to the status the API answers', () => {
    // A Record over the union: a refusal code added to the service without a status fails to compile.
    const refusals: Record<ApprovalRefusal, number> = {
      invalid_value: 400,
      not_operator: 403,
      unknown_code: 404,
      always_not_permitted: 409,
      already_decided: 409,
      expired: 410,
      too_many_attempts: 429,
    };
    for (const [code, status] of Object.entries(refusals)) expect([code, httpStatusOf(code)]).toEqual([code, status]);
    expect(httpStatusOf('conversation_full')).toBe(429);
    expect(httpStatusOf('store_unavailable')).toBe(503);
    expect(httpStatusOf('queue_unavailable')).toBe(503);
    expect(httpStatusOf('no_such_code')).toBe(500);
    // Human takeover's refusals (src/handoffs/service.ts HandoffError).
    expect([httpStatusOf('conversation_not_found'), httpStatusOf('already_taken'), httpStatusOf('not_taken_over')]).toEqual([404, 409, 409]);
    expect(Object.keys(HTTP_STATUS_OF_CODE).sort()).toEqual(
      [
        ...Object.keys(refusals),
        'conversation_full',
        'store_unavailable',
        'queue_unavailable',
        'conversation_not_found',
        'already_taken',
        'not_taken_over',
      ].sort(),
    );
  });

  describe('the router answers a core error thrown under a handler', () => {
    const server = new HttpServer({ host: '127.0.0.1', port: 0, maxBodyBytes: 1024, log: createLogger('silent') });
    class Unmapped extends SwitchboardError {
      readonly code = 'unmapped_here';
    }
    beforeAll(async () => {
      server.route('GET', '/full', async () => {
        throw new ConversationFullError('Too many messages are already waiting in this conversation (1).');
      });
      server.route('GET', '/unmapped', async () => {
        throw new Unmapped('a bug, as far as HTTP knows');
      });
      // What the ingress throws while Postgres refuses new connections: the driver's error inside a step's.
      server.route('GET', '/pg-refusing', async () => {
        const refused = Object.assign(new Error('database "sb" is not currently accepting connections'), { code: '55000' });
        throw new StepError('redelivery', {}, refused);
      });
      server.route('GET', '/redis-down', async () => {
        throw Object.assign(new Error('Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest" option for details.'), {
          name: 'MaxRetriesPerRequestError',
        });
      });
      await server.start();
    });
    afterAll(() => server.close());

    it('with the status of its code, its message and code', async () => {
      const res = await fetch(`${server.url}/full`);
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({
        error: {
          message: 'Too many messages are already waiting in this conversation (1).',
          type: 'invalid_request_error',
          param: null,
          code: 'conversation_full',
        },
      });
    });

    it('the store or queue unavailable, however wrapped, is a 503 with Retry-After naming the service, not the driver text', async () => {
      for (const [path, code] of [
        ['/pg-refusing', 'store_unavailable'],
        ['/redis-down', 'queue_unavailable'],
      ] as const) {
        const res = await fetch(`${server.url}${path}`);
        expect(res.status).toBe(503);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        const body = (await res.json()) as { error: { code: string; type: string; message: string } };
        expect(body.error).toMatchObject({ code, type: 'server_error' });
        expect(body.error.message).not.toMatch(/sb|maxRetriesPerRequest/);
      }
    });

    it('a code the table does not know is an internal error, as before', async () => {
      const res = await fetch(`${server.url}/unmapped`);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: { message: 'internal error', type: 'server_error', param: null, code: null } });
    });
  });
});
