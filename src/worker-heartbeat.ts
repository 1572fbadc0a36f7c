import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { HeartbeatStore, WorkerBeat } from '../adapters/heartbeat/port.js';

export type { WorkerBeat } from '../adapters/heartbeat/port.js';

/** How often a worker beats. */
export const HEARTBEAT_INTERVAL_MS = 2_000;
/** A beat counts this long: three missed beats and the worker is taken for dead. */
export const HEARTBEAT_TTL_MS = 3 * HEARTBEAT_INTERVAL_MS;

/**
 * A worker process's heartbeat: id, pid, host, start time, running turns, every
 * HEARTBEAT_INTERVAL_MS with a TTL. start() resolves after the first beat (so an
 * ingress sees the worker once it says it started); stop() removes it.
 */
export class HeartbeatWriter {
  private timer?: NodeJS.Timeout;
  private readonly startedAt = Date.now();
  private failing = false;

  constructor(
    private readonly store: HeartbeatStore,
    private readonly worker: { id: string; runningTurns: number },
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    const beat: WorkerBeat = {
      id: this.worker.id,
      pid: process.pid,
      host: hostname(),
      startedAt: this.startedAt,
      lastBeatAt: Date.now(),
      runningTurns: this.worker.runningTurns,
    };
    try {
      await this.store.beat(beat, HEARTBEAT_TTL_MS);
      if (this.failing) this.log.info({ worker: beat.id }, 'worker heartbeat written again');
      this.failing = false;
    } catch (err) {
      // Once per outage: the store's own log says what is unreachable.
      if (!this.failing) this.log.warn({ err, worker: beat.id }, 'could not write the worker heartbeat; ingresses will take this worker for dead');
      this.failing = true;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.store.remove(this.worker.id).catch((err: unknown) => this.log.warn({ err }, 'could not remove the worker heartbeat'));
  }
}

/** How long a read of the heartbeats is reused: a chat request costs no round trip. */
const READ_CACHE_MS = 1_000;
/** Longest wait for the heartbeat store; past it the answer is "unknown" (the queue check says why). */
const READ_TIMEOUT_MS = 1_000;
/**
 * A worker seen alive this recently still counts when the store shows none: a Redis restarted
 * empty has lost every beat until the next one (a beat interval later).
 */
const GRACE_MS = HEARTBEAT_INTERVAL_MS + 1_000;

export type WorkersSeen = { known: true; alive: WorkerBeat[] } | { known: false; message: string };

/** The ingress side: which workers are alive, read at most once a second. */
export class WorkerMonitor {
  private cached?: { at: number; seen: WorkersSeen };
  private inFlight?: Promise<WorkersSeen>;
  private lastAlive?: { at: number; alive: WorkerBeat[] };

  constructor(private readonly store: HeartbeatStore) {}

  async seen(): Promise<WorkersSeen> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < READ_CACHE_MS) return this.cached.seen;
    this.inFlight ??= this.read().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /** False only when the store answered and no worker has beaten within the TTL; a store that does not answer is not a reason to refuse. */
  async anyAlive(): Promise<boolean> {
    const s = await this.seen();
    return !s.known || s.alive.length > 0;
  }

  private async read(): Promise<WorkersSeen> {
    let seen: WorkersSeen;
    try {
      let alive = await withTimeout(this.store.alive(), READ_TIMEOUT_MS);
      const now = Date.now();
      if (alive.length) this.lastAlive = { at: now, alive };
      else if (this.lastAlive && now - this.lastAlive.at < GRACE_MS) alive = this.lastAlive.alive;
      seen = { known: true, alive };
    } catch (err) {
      seen = { known: false, message: `could not read the worker heartbeats: ${(err as Error).message}` };
    }
    this.cached = { at: Date.now(), seen };
    return seen;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
