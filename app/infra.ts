import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { LocalFirstBus } from '../adapters/bus/local-first.js';
import { MemoryBus } from '../adapters/bus/memory.js';
import type { Bus } from '../adapters/bus/port.js';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import type { CooldownStore } from '../adapters/cooldowns/port.js';
import { acquireDataLock, DataFolderInUseError, type DataLock } from '../adapters/db/data-lock.js';
import type { Db } from '../adapters/db/port.js';
import { MemoryHeartbeats } from '../adapters/heartbeat/memory.js';
import type { HeartbeatStore } from '../adapters/heartbeat/port.js';
import { MemoryLocks } from '../adapters/lock/memory.js';
import type { LockService } from '../adapters/lock/port.js';
import { type Carrier, CoalescingQueue } from '../adapters/queue/coalescing.js';
import { LocalLaneQueue } from '../adapters/queue/local-lane.js';
import { MemoryQueue } from '../adapters/queue/memory.js';
import type { JobQueue } from '../adapters/queue/port.js';
import { MemoryRateLimiter } from '../adapters/ratelimit/memory.js';
import type { RateLimiter, TurnSlots } from '../adapters/ratelimit/port.js';
import { AccessStore } from '../adapters/store/access.js';
import { ApprovalStore } from '../adapters/store/approvals.js';
import { ChannelStateStore } from '../adapters/store/channel-state.js';
import { DeliveryStore } from '../adapters/store/deliveries.js';
import { type IngressOutcomeRepository, PgIngressOutcomes } from '../adapters/store/ingress-outcomes.js';
import { migrate } from '../adapters/store/migrate.js';
import { Store } from '../adapters/store/store.js';
import { WebhookStore } from '../adapters/store/webhooks.js';
import { SwitchboardError } from '../kernel/errors.js';
import type { DeliveryJob, DrainJob, EventJob, TimerJob } from '../kernel/jobs.js';
import { type Config, ConfigError } from '../src/config.js';
import { isConversationTopic } from '../src/event-publisher.js';
import { boundHeapGrowth } from './embedded-heap.js';
import { type InfraMode, infraMode, pgliteDir } from './infra-mode.js';

export { type InfraMode, infraMode, pgliteDir } from './infra-mode.js';

/**
 * A failure at run time that the CLI reports in one line, without a stack trace unless --debug,
 * and exits 1 for (a supervisor restarts it): Postgres unreachable at start.
 */
export class RuntimeFailure extends SwitchboardError {
  readonly code = 'runtime_failure';
  // A supervisor restarting the process may find the server back.
  override readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RuntimeFailure';
  }
}

/** The infrastructure behind the ports: Redis + Postgres, or the embedded pair. */
export interface Infra {
  mode: InfraMode;
  store: Store;
  approvals: ApprovalStore;
  access: AccessStore;
  deliveries: DeliveryStore;
  channelState: ChannelStateStore;
  webhooks: WebhookStore;
  /** What became of each inbound event, by (channel, external id): the ingress replays it for a redelivery. */
  ingressOutcomes: IngressOutcomeRepository;
  queue: JobQueue<DrainJob>;
  /** Outbound event webhooks: one job per event and subscriber, retried, then dead-lettered. */
  events: JobQueue<EventJob>;
  /** Deadlines (approval expiry): delayed jobs, durable on Redis. */
  timers: JobQueue<TimerJob>;
  /** Replies whose channel failed after their turn closed: replayed with their own retries, then dead-lettered. */
  deliveryJobs: JobQueue<DeliveryJob>;
  bus: Bus;
  locks: LockService;
  rateLimiter: RateLimiter;
  /** Opens a worker's own turn slots (limits.maxConcurrentTurnsPer*): in Redis when there is one, shared by every worker process. */
  openTurnSlots: () => TurnSlots;
  /** Provider slot cooldowns, shared by all workers on Redis. */
  cooldowns: CooldownStore;
  /** Worker heartbeats: the ingress knows whether any worker is alive. */
  heartbeats: HeartbeatStore;
  close(): Promise<void>;
}

/*
 * The Redis, BullMQ, pg and PGlite adapters are imported only by the mode that uses them: the
 * embedded default never loads BullMQ, ioredis or pg (~1.5 s of CPU and ~30 MB at start), nor a
 * Redis + Postgres process the PGlite module.
 */

export async function openDb(cfg: Config, log?: Logger): Promise<Db> {
  if (cfg.databaseUrl) {
    const { openPostgres, PostgresOpenError } = await import('../adapters/db/pg.js');
    try {
      return await openPostgres(cfg.databaseUrl, { max: cfg.databasePoolSize, ...(log ? { log: log.child({ component: 'postgres' }) } : {}) });
    } catch (err) {
      // One line for the CLI: a server that is not there is a runtime failure (exit 1), one that refuses this URL is configuration (exit 2).
      if (err instanceof PostgresOpenError) throw err.kind === 'unreachable' ? new RuntimeFailure(err.message, { cause: err }) : new ConfigError(err.message);
      throw err;
    }
  }
  const dir = pgliteDir(cfg);
  mkdirSync(dir, { recursive: true });
  if (!cfg.pgliteThread) {
    const { openPglite } = await import('../adapters/db/pglite.js');
    return openPglite(dir);
  }
  // On its own thread: the store's SQL off the event loop that serves HTTP and runs turns (pglite-thread.ts).
  const { openPgliteThread } = await import('../adapters/db/pglite-thread.js');
  return openPgliteThread(dir);
}

/** `switchboard migrate --create`: creates the database DATABASE_URL names when the server says it does not exist. */
export async function createDatabaseIfMissing(cfg: Config): Promise<void> {
  if (!cfg.databaseUrl) return;
  const { createPostgresDatabase, openPostgres, PostgresOpenError } = await import('../adapters/db/pg.js');
  try {
    const db = await openPostgres(cfg.databaseUrl, { max: 1 });
    await db.close();
  } catch (err) {
    if (!(err instanceof PostgresOpenError && err.kind === 'missing-database')) return; // openDb reports it
    try {
      await createPostgresDatabase(cfg.databaseUrl);
    } catch (e) {
      if (e instanceof PostgresOpenError) throw e.kind === 'unreachable' ? new RuntimeFailure(e.message, { cause: e }) : new ConfigError(e.message);
      throw new ConfigError(`could not create database "${err.database}": ${(e as Error).message}`);
    }
  }
}

export interface InfraOptions {
  /**
   * The process runs both roles (`start`): a turn's events reach a subscriber in this process
   * in process, not through Redis (adapters/bus/local-first.ts), and the drains of messages
   * accepted here run here while the worker has room (adapters/queue/local-lane.ts, `queue.localLane`).
   */
  localEvents?: boolean;
}

export async function openInfra(cfg: Config, log?: Logger, opts: InfraOptions = {}): Promise<Infra> {
  const mode = infraMode(cfg);
  if (mode === 'embedded') boundHeapGrowth();
  // Redis connections report errors (rate-limited) and reconnects to the gateway's log (adapters/redis.ts).
  if (cfg.redisUrl && log) (await import('../adapters/redis.js')).setRedisLog(log.child({ component: 'redis' }));
  const db = await openDb(cfg, log);
  await migrate(db);
  const store = new Store(db);
  const q = cfg.queue;
  let queue: JobQueue<DrainJob>;
  let timers: JobQueue<TimerJob>;
  let events: JobQueue<EventJob>;
  let deliveryJobs: JobQueue<DeliveryJob>;
  const deliveryRetry = { attempts: q.deliveryAttempts, backoffMs: q.deliveryBackoffMs };
  const eventRetry = { attempts: cfg.webhooks.maxAttempts, backoffMs: cfg.webhooks.backoffMs };
  let bus: Bus;
  let locks: LockService;
  let cooldowns: CooldownStore;
  let rateLimiter: RateLimiter;
  let heartbeats: HeartbeatStore;
  let openTurnSlots: () => TurnSlots;
  if (cfg.redisUrl) {
    const [{ BullQueue }, { RedisStreamsBus }, { RedisLocks }, { RedisCooldowns }, { RedisRateLimiter }, { RedisHeartbeats }] = await Promise.all([
      import('../adapters/queue/bullmq.js'),
      import('../adapters/bus/redis-streams.js'),
      import('../adapters/lock/redis.js'),
      import('../adapters/cooldowns/redis.js'),
      import('../adapters/ratelimit/redis.js'),
      import('../adapters/heartbeat/redis.js'),
    ]);
    const bull = { prefix: q.prefix, attempts: q.attempts, backoffMs: q.backoffMs, lockDurationMs: q.lockDurationMs, stalledIntervalMs: q.stalledIntervalMs };
    const qlog = log?.child({ component: 'queue' });
    const bullDrains = new BullQueue<Carrier<DrainJob>>('drain', cfg.redisUrl, { ...bull, globalConcurrency: cfg.limits.globalConcurrentTurns }, qlog);
    // Coalesces this process's adds, except under a global cap on turns (BullMQ's counts jobs, and a carrier is
    // one job running several turns: such a process splits a carrier another one sent).
    const sharedDrains = new CoalescingQueue(bullDrains, { max: cfg.limits.globalConcurrentTurns ? 1 : q.coalesceMax, retryDelayMs: q.backoffMs }, qlog);
    // A cap across every process is BullMQ's to keep: with one, every drain goes through it.
    queue =
      opts.localEvents && q.localLane && !cfg.limits.globalConcurrentTurns
        ? new LocalLaneQueue(sharedDrains, new MemoryQueue<DrainJob>({ attempts: q.attempts, backoffMs: q.backoffMs }, qlog, 'drain-local'))
        : sharedDrains;
    timers = new BullQueue<TimerJob>('timers', cfg.redisUrl, bull, qlog);
    events = new BullQueue<EventJob>('events', cfg.redisUrl, { ...bull, ...eventRetry }, qlog);
    deliveryJobs = new BullQueue<DeliveryJob>('delivery', cfg.redisUrl, { ...bull, ...deliveryRetry }, qlog);
    // Where turn events are delivered in process, a request's subscription through Redis is only for
    // a turn another process runs: added to the reader's XREAD 25 ms later, a fast turn's never is.
    const redisBus = new RedisStreamsBus(cfg.redisUrl, { prefix: q.prefix, ...(opts.localEvents ? { wakeAfterMs: 25 } : {}) });
    bus = opts.localEvents ? new LocalFirstBus(redisBus, isConversationTopic) : redisBus;
    locks = new RedisLocks(cfg.redisUrl, q.prefix);
    cooldowns = new RedisCooldowns(cfg.redisUrl, q.prefix);
    rateLimiter = new RedisRateLimiter(cfg.redisUrl, q.prefix);
    const redisUrl = cfg.redisUrl;
    openTurnSlots = () => new RedisRateLimiter(redisUrl, q.prefix);
    heartbeats = new RedisHeartbeats(cfg.redisUrl, q.prefix);
  } else {
    const qlog = log?.child({ component: 'queue' });
    queue = new MemoryQueue<DrainJob>({ attempts: q.attempts, backoffMs: q.backoffMs, globalConcurrency: cfg.limits.globalConcurrentTurns }, qlog, 'drain');
    timers = new MemoryQueue<TimerJob>({ attempts: q.attempts, backoffMs: q.backoffMs }, qlog, 'timers');
    events = new MemoryQueue<EventJob>(eventRetry, qlog, 'events');
    deliveryJobs = new MemoryQueue<DeliveryJob>(deliveryRetry, qlog, 'delivery');
    bus = new MemoryBus();
    locks = new MemoryLocks();
    cooldowns = new MemoryCooldowns();
    rateLimiter = new MemoryRateLimiter();
    openTurnSlots = () => new MemoryRateLimiter();
    heartbeats = new MemoryHeartbeats();
  }
  return {
    mode,
    store,
    approvals: new ApprovalStore(db),
    access: new AccessStore(db),
    deliveries: new DeliveryStore(db),
    channelState: new ChannelStateStore(db),
    webhooks: new WebhookStore(db),
    ingressOutcomes: new PgIngressOutcomes(db),
    queue,
    timers,
    events,
    deliveryJobs,
    bus,
    locks,
    cooldowns,
    rateLimiter,
    openTurnSlots,
    heartbeats,
    async close() {
      await queue.close();
      await timers.close();
      await events.close();
      await deliveryJobs.close();
      await bus.close();
      await locks.close();
      await cooldowns.close();
      await rateLimiter.close();
      await heartbeats.close();
      await db.close();
    },
  };
}

/**
 * The embedded data folder (PGlite mode, no DATABASE_URL) is one process's: this takes its lock
 * (<dataDir>/switchboard.lock) or refuses with a configuration error naming the holder (pid, where it
 * listens). A lock left by a process that is gone is taken over, logged.
 */
export function lockDataDir(cfg: Config, command: string, log?: Logger): DataLock {
  try {
    return acquireDataLock(cfg.dataDir, { command, ...(command === 'start' ? { url: `${cfg.http.host}:${cfg.http.port}` } : {}) }, (stale) =>
      log?.warn(
        { stalePid: stale.pid, since: stale.startedAt, dataDir: resolve(cfg.dataDir) },
        'took over the lock on the data folder from a process that is no longer running',
      ),
    );
  } catch (err) {
    if (err instanceof DataFolderInUseError) throw new ConfigError(err.message);
    throw err;
  }
}
