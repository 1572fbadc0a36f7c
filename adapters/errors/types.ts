import { SwitchboardError } from '../../kernel/errors.js';

/**
 * The one place that tells "the store or queue is unavailable right now" (Postgres refusing or
 * restarting, Redis down) from a bug: such a failure becomes a retryable SwitchboardError with
 * code `store_unavailable` (Postgres) or `queue_unavailable` (Redis), which the HTTP layer
 * answers with 503 and Retry-After (src/http/errors.ts).
 */
export class StoreUnavailableError extends SwitchboardError {
  readonly code = 'store_unavailable';
  override readonly retryable = true;
  constructor(cause: unknown) {
    super(`the database is unavailable right now: ${reasonOf(cause)}`, { cause });
  }
}

export class QueueUnavailableError extends SwitchboardError {
  readonly code = 'queue_unavailable';
  override readonly retryable = true;
  constructor(cause: unknown) {
    super(`Redis (queue, bus) is unavailable right now: ${reasonOf(cause)}`, { cause });
  }
}

/**
 * SQLSTATEs of a Postgres that refuses or drops connections: 55000 object_not_in_prerequisite_state
 * (a database with ALLOW_CONNECTIONS false), 53300 too_many_connections, 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now, class 08 connection exceptions.
 */
const PG_UNAVAILABLE = new Set(['55000', '53300', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);
/** Socket errors: the server is not there (either service; Postgres unless the error says Redis). */
const SOCKET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const PG_MESSAGES =
  /Connection terminated|server closed the connection|the database system is (starting up|shutting down|in recovery mode)|timeout exceeded when trying to connect|Client has encountered a connection error|too many clients already|is not currently accepting connections/i;
const REDIS_MESSAGES =
  /Connection is closed|Stream isn't writeable|Reached the max retries per request limit|MaxRetriesPerRequest|Redis connection|ETIMEDOUT.*redis/i;

/**
 * The unavailable error that `err` (or something it wraps: `cause`, an AggregateError's errors)
 * stands for, or undefined when it is anything else. Already-classified errors are returned as they are.
 */
export function classifyUnavailable(err: unknown): StoreUnavailableError | QueueUnavailableError | undefined {
  const seen = new Set<unknown>();
  const walk = (e: unknown, depth: number): StoreUnavailableError | QueueUnavailableError | undefined => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 8) return undefined;
    seen.add(e);
    if (e instanceof StoreUnavailableError || e instanceof QueueUnavailableError) return e;
    const x = e as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown; stack?: unknown };
    const code = typeof x.code === 'string' ? x.code : '';
    const name = typeof x.name === 'string' ? x.name : '';
    const message = typeof x.message === 'string' ? x.message : '';
    if (name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message)) return new QueueUnavailableError(err);
    if (PG_UNAVAILABLE.has(code) || PG_MESSAGES.test(message)) return new StoreUnavailableError(err);
    if (SOCKET_UNAVAILABLE.has(code))
      return /ioredis/.test(typeof x.stack === 'string' ? x.stack : '') ? new QueueUnavailableError(err) : new StoreUnavailableError(err);
    if (Array.isArray(x.errors))
      for (const inner of x.errors) {
        const found = walk(inner, depth + 1);
        if (found) return found;
      }
    return walk(x.cause, depth + 1);
  };
  // A match deep inside is reported with the outermost error as its cause (it names the step that failed).
  return walk(err, 0);
}

function reasonOf(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const msg = typeof e?.message === 'string' ? e.message : String(err);
  return code && !msg.includes(code) ? `${code} ${msg}` : msg;
}
