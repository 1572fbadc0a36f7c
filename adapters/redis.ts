import { Redis, type RedisOptions } from 'ioredis';
import { QueueUnavailableError } from './errors/types.js';
import { hostPort, maskUrl } from './mask-url.js';

/** Where Redis connection trouble is reported: a pino logger fits. */
export interface RedisLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

/** At most one warning per Redis server in this window while it stays unreachable. */
export const REDIS_WARN_INTERVAL_MS = 30_000;

interface TargetState {
  down: boolean;
  errors: number;
  sinceLastWarn: number;
  lastWarnAt: number;
}

let sink: RedisLog | undefined;
const targets = new Map<string, TargetState>();

/**
 * Sets where every Redis connection of this process reports errors and reconnects
 * (the gateway's logger; app/infra.ts). Until one is set, errors are not logged.
 */
export function setRedisLog(log: RedisLog | undefined): void {
  sink = log;
}

/**
 * Watches one connection: the first error while a server is reachable is a warning naming it
 * (host:port and the masked URL); while it stays unreachable, one "still unreachable (N errors)"
 * warning per REDIS_WARN_INTERVAL_MS, for all of this process's connections to it together;
 * when a connection is ready again, one "reconnected" info.
 */
export function watchRedis(r: Redis, url: string, now: () => number = Date.now): void {
  const server = hostPort(url, 6379);
  const fields = { redis: server, url: maskUrl(url) };
  const state = () => {
    let s = targets.get(server);
    if (!s) targets.set(server, (s = { down: false, errors: 0, sinceLastWarn: 0, lastWarnAt: 0 }));
    return s;
  };
  r.on('error', (err: NodeJS.ErrnoException) => {
    const s = state();
    s.errors++;
    s.sinceLastWarn++;
    const reason = err?.code ?? err?.message ?? String(err);
    if (!s.down) {
      s.down = true;
      s.lastWarnAt = now();
      s.sinceLastWarn = 0;
      sink?.warn({ ...fields, error: reason }, `cannot reach Redis at ${server} (REDIS_URL ${fields.url}): ${reason}; retrying`);
    } else if (now() - s.lastWarnAt >= REDIS_WARN_INTERVAL_MS) {
      sink?.warn({ ...fields, error: reason, errors: s.errors }, `Redis at ${server} still unreachable (${s.errors} errors): ${reason}; retrying`);
      s.lastWarnAt = now();
      s.sinceLastWarn = 0;
    }
  });
  r.on('ready', () => {
    const s = state();
    if (!s.down) return;
    sink?.info({ ...fields, errors: s.errors }, `reconnected to Redis at ${server} (after ${s.errors} errors)`);
    s.down = false;
    s.errors = 0;
    s.sinceLastWarn = 0;
  });
}

/**
 * Redis connections. BullMQ needs maxRetriesPerRequest: null on every connection
 * a worker uses; we use it everywhere so that a Redis restart makes commands wait
 * for the reconnect instead of failing mid-turn.
 */
export function createRedis(url: string, extra: RedisOptions = {}, opts: { watch?: boolean } = {}): Redis {
  const r = new Redis(url, {
    maxRetriesPerRequest: null,
    enableAutoPipelining: true,
    // Reconnect quickly, then back off to one attempt a second.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    lazyConnect: false,
    ...extra,
  });
  // A lost connection must not crash: errors are reported (rate-limited) through setRedisLog's
  // logger, and surface through the commands that hit them. One-shot checks (doctor) opt out of the
  // warnings: their command reports the failure; the error is still logged at debug.
  if (opts.watch === false)
    r.on('error', (err: Error) => sink?.debug?.({ redis: hostPort(url, 6379), error: err?.message ?? String(err) }, 'redis connection error'));
  else watchRedis(r, url);
  return r;
}

/**
 * Disconnects `r` for good, whatever its state. A client parked in "reconnecting" has no socket to
 * close, so ioredis emits no 'end' and whoever awaits it (BullMQ's Worker.close, with its
 * lock-extender timer still running: taskforcesh/bullmq#4656) would wait forever: the event,
 * which means "no more reconnections", is sent for it.
 */
export function disconnectForGood(r: Redis): void {
  const socketless = r.status === 'reconnecting';
  r.disconnect();
  if (socketless) r.emit('end');
}

/**
 * A command on a request's path (a rate limit asked before anything is accepted): our clients
 * wait for a reconnect forever, so this one fails fast instead, as queue_unavailable (503 with
 * Retry-After): at once while the connection is not ready, and after `timeoutMs` when a command
 * sent on a connection that just died does not answer.
 */
export async function failFast<T>(r: Redis, command: () => Promise<T>, timeoutMs = 2_000): Promise<T> {
  if (!(await whenReady(r, READY_GRACE_MS))) throw new QueueUnavailableError(new Error(`the Redis connection is ${r.status}`));
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      command(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new QueueUnavailableError(new Error(`Redis did not answer within ${timeoutMs} ms`))), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long a request's path waits for a connection that is reconnecting (a dropped connection comes back within it). */
export const READY_GRACE_MS = 1_000;

/** True once the connection is ready, at once if it is; false if it is not within graceMs. */
export function whenReady(r: Redis, graceMs: number): Promise<boolean> {
  if (r.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      r.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), graceMs);
    r.on('ready', onReady);
  });
}
