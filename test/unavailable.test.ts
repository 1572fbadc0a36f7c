/**
 * "The store or queue is unavailable" is recognized in one place (adapters/errors/types.ts) and
 * answered 503 with Retry-After (src/http/errors.ts), wrapped or not.
 */
import { describe, expect, it } from 'vitest';
import { classifyUnavailable, QueueUnavailableError, StoreUnavailableError } from '../adapters/errors/types.js';
import { HTTP_STATUS_OF_CODE, RETRY_AFTER_SECONDS_OF_CODE } from '../src/http/errors.js';
import { StepError } from '../src/ingress/compose.js';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const sys = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -111, syscall: 'connect' });

describe('classifyUnavailable', () => {
  it.each([
    ['55000', 'database "sb" is not currently accepting connections'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P03', 'the database system is starting up'],
    ['53300', 'sorry, too many clients already'],
    ['08006', 'connection failure'],
  ])('Postgres SQLSTATE %s is store_unavailable', (code, message) => {
    const c = classifyUnavailable(pgError(code, message));
    expect(c).toBeInstanceOf(StoreUnavailableError);
    expect(c?.code).toBe('store_unavailable');
    expect(c?.retryable).toBe(true);
  });

  it('connection refused, inside an ingress step error and an AggregateError (happy eyeballs), is store_unavailable', () => {
    const refused = new AggregateError([sys('ECONNREFUSED'), sys('ECONNREFUSED')], '');
    expect(classifyUnavailable(new StepError('accept', {}, refused))?.code).toBe('store_unavailable');
    expect(classifyUnavailable(new Error('Connection terminated unexpectedly'))?.code).toBe('store_unavailable');
  });

  it('Redis down (ioredis) is queue_unavailable', () => {
    expect(classifyUnavailable(new Error('Connection is closed.'))).toBeInstanceOf(QueueUnavailableError);
    const maxRetries = Object.assign(new Error('Reached the max retries per request limit (which is 20).'), { name: 'MaxRetriesPerRequestError' });
    expect(classifyUnavailable(new StepError('rate limit', {}, maxRetries))?.code).toBe('queue_unavailable');
  });

  it('anything else is not unavailable', () => {
    expect(classifyUnavailable(new Error('syntax error at or near "SELEC"'))).toBeUndefined();
    expect(classifyUnavailable(pgError('23505', 'duplicate key value violates unique constraint'))).toBeUndefined();
    expect(classifyUnavailable(undefined)).toBeUndefined();
  });

  it('both codes are 503 with a Retry-After', () => {
    for (const code of ['store_unavailable', 'queue_unavailable']) {
      expect(HTTP_STATUS_OF_CODE[code]).toBe(503);
      expect(RETRY_AFTER_SECONDS_OF_CODE[code]).toBeGreaterThan(0);
    }
  });
});
