import type { Redis } from 'ioredis';
import { settlesWithin } from '../../kernel/settles-within.js';
import { createRedis, disconnectForGood } from '../redis.js';
import { type Bus, HISTORY_LIMIT, type Subscription } from './port.js';

const SUBSCRIBE_LOOKBACK_MS = 10_000;

/** How long close() waits for the read loop once its client is disconnected (an answered XREAD ends it at once). */
const READ_LOOP_END_MS = 1_000;

/** How often a topic's idle expiry is pushed back; far below any sensible ttlSeconds. */
const EXPIRE_REFRESH_MS = 60_000;

interface Topic {
  key: string;
  lastId: string;
  handlers: Set<(e: unknown) => void>;
  /** When it was subscribed (performance.now()). */
  since: number;
}

/**
 * Redis Streams bus. Each topic is a capped stream that expires when idle.
 * One reader connection per process multiplexes every subscribed topic through
 * a single blocking XREAD; adding a topic wakes the reader with CLIENT UNBLOCK.
 * A subscriber may also see events from shortly before it subscribed (see
 * subscribe()); consumers filter by the ids they wait for.
 * Streams (not pub/sub) so that a reader that reconnects after a blip resumes
 * from its last id instead of silently missing events.
 */
export class RedisStreamsBus implements Bus {
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readerId?: number;
  private readonly topics = new Map<string, Topic>();
  /** When this process last refreshed each topic's expiry. */
  private readonly expiredAt = new Map<string, number>();
  private blocked = false;
  /** Bumped when a topic is added; the reader notes which version its XREAD covers. */
  private topicsVersion = 0;
  private readingVersion = 0;
  private waking?: Promise<void>;
  private closed = false;
  private wake?: () => void;
  private readonly loopDone: Promise<void>;

  constructor(
    url: string,
    private readonly opts: {
      prefix: string;
      maxLen?: number;
      ttlSeconds?: number;
      /**
       * How long a new topic may wait before the reader is woken to add it to its XREAD (0: at once).
       * A topic closed within that time costs Redis nothing (no CLIENT UNBLOCK, no new XREAD);
       * its events published meanwhile are not lost, only delivered that much later (the reader
       * starts from the topic's subscribe time). For a process whose subscribers are nearly
       * always served in process (LocalFirstBus).
       */
      wakeAfterMs?: number;
    } = { prefix: 'sb' },
  ) {
    // No auto-pipelining on the publishing connection: ioredis defers an
    // auto-pipelined command to setImmediate, so a turn's first token would
    // wait until the worker had processed everything else the model sent in
    // the same read (measured: 1.4 ms instead of 0.4 ms from publish to the
    // subscriber, at concurrency 1). The publisher already batches a turn's
    // events while a write is in flight.
    this.cmd = createRedis(url, { enableAutoPipelining: false });
    this.reader = createRedis(url, { enableAutoPipelining: false });
    // The reader's client id changes on every reconnect.
    this.reader.on('ready', () => {
      this.readerId = undefined;
    });
    this.loopDone = this.loop();
  }

  private key(topic: string): string {
    return `${this.opts.prefix}:bus:${topic}`;
  }

  /**
   * One XADD per publish, whatever the number of events: one event is an entry's `e` field, several
   * are one entry's `b` field (a JSON array, read back in order), and the cap is XADD's own
   * `MAXLEN ~`. The idle expiry, when it is due (a topic new to this process, then once a
   * minute), rides in the same round trip (a pipeline of the XADD and an EXPIRE).
   */
  async publish(topic: string, ...events: unknown[]): Promise<void> {
    if (events.length === 0) return;
    const key = this.key(topic);
    const maxLen = String(this.opts.maxLen ?? 1000);
    const field = events.length === 1 ? 'e' : 'b';
    const body = JSON.stringify(events.length === 1 ? events[0] : events);
    // The idle expiry only needs refreshing now and then, not on every write.
    const now = Date.now();
    if ((this.expiredAt.get(key) ?? 0) >= now - EXPIRE_REFRESH_MS) {
      await this.cmd.xadd(key, 'MAXLEN', '~', maxLen, '*', field, body);
      return;
    }
    if (this.expiredAt.size >= 10_000) this.expiredAt.clear();
    this.expiredAt.set(key, now);
    const results = await this.cmd
      .pipeline()
      .xadd(key, 'MAXLEN', '~', maxLen, '*', field, body)
      .expire(key, this.opts.ttlSeconds ?? 3600)
      .exec();
    const failed = results?.find(([err]) => err)?.[0];
    if (failed) {
      // Refreshed again at the next publish.
      this.expiredAt.delete(key);
      throw failed;
    }
  }

  async subscribe(topic: string, handler: (e: unknown) => void): Promise<Subscription> {
    let t = this.topics.get(topic);
    if (!t) {
      // Start a little in the past rather than asking Redis for the stream's last
      // id (one round trip per request saved): subscribers match events by
      // turn and inbox ids, so older events of the topic are ignored by them,
      // and the margin absorbs clock skew between this host and Redis. Because
      // the reader starts from that id whenever it picks the topic up, nothing
      // published after this call is missed, and there is no need to wait for
      // the reader here: waking it only makes delivery prompt.
      t = { key: this.key(topic), lastId: `${Math.max(0, Date.now() - SUBSCRIBE_LOOKBACK_MS)}-0`, handlers: new Set(), since: performance.now() };
      this.topics.set(topic, t);
      this.topicsVersion++;
      if (this.opts.wakeAfterMs) this.wakeLater(this.opts.wakeAfterMs);
      else this.wakeReader();
    }
    t.handlers.add(handler);
    const topicRef = t;
    return {
      close: () => {
        topicRef.handlers.delete(handler);
        if (topicRef.handlers.size === 0 && this.topics.get(topic) === topicRef) this.topics.delete(topic);
      },
    };
  }

  private wakeTimer?: NodeJS.Timeout;
  /** The topics the reader's XREAD (on its way or blocked) was built from. */
  private reading = new Set<Topic>();

  /**
   * Wakes the reader once a topic it does not read yet has been open `ms`; none for topics closed
   * before that. One timer, for the oldest such topic.
   */
  private wakeLater(ms: number): void {
    if (this.wakeTimer) return;
    let oldest = Number.POSITIVE_INFINITY;
    for (const t of this.topics.values()) if (!this.reading.has(t) && t.since < oldest) oldest = t.since;
    if (oldest === Number.POSITIVE_INFINITY) return;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        if (this.closed) return;
        const now = performance.now();
        for (const t of this.topics.values())
          if (!this.reading.has(t) && now - t.since >= ms - 1) {
            this.wakeReader();
            return;
          }
        this.wakeLater(ms);
      },
      Math.max(1, oldest + ms - performance.now()),
    );
    this.wakeTimer.unref();
  }

  /**
   * Makes the reader pick up new topics now rather than at its next timeout.
   * One waker at a time, however many topics arrive together: under load that
   * is one CLIENT UNBLOCK per XREAD cycle instead of one (or several) per
   * subscriber.
   */
  private wakeReader(): void {
    if (this.wake) {
      const w = this.wake;
      this.wake = undefined;
      w();
      return;
    }
    if (this.waking) return;
    this.waking = (async () => {
      // The reader is behind while its XREAD was built from an older topic list.
      for (let i = 0; i < 50 && !this.closed && this.readingVersion < this.topicsVersion; i++) {
        if (this.blocked && this.readerId !== undefined) {
          const n = (await this.cmd.call('CLIENT', 'UNBLOCK', String(this.readerId)).catch(() => 0)) as number;
          if (n === 1) return;
        }
        // The XREAD is on its way to Redis, or the reader is busy with a batch
        // (it rebuilds its list before blocking again): look again shortly.
        await new Promise((r) => setTimeout(r, 1));
      }
    })().finally(() => {
      this.waking = undefined;
    });
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      const version = this.topicsVersion;
      const topics = [...this.topics.values()];
      if (topics.length === 0) {
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      try {
        if (this.readerId === undefined) this.readerId = (await this.reader.call('CLIENT', 'ID')) as number;
        const args: string[] = ['COUNT', '500', 'BLOCK', '2000', 'STREAMS', ...topics.map((t) => t.key), ...topics.map((t) => t.lastId)];
        this.blocked = true;
        this.readingVersion = version;
        this.reading = new Set(topics);
        const res = (await this.reader.call('XREAD', ...args)) as [string, [string, string[]][]][] | null;
        this.blocked = false;
        if (!res) continue;
        for (const [key, entries] of res) {
          const t = topics.find((x) => x.key === key);
          if (!t) continue;
          for (const [id, fields] of entries) {
            t.lastId = id;
            for (const event of entryEvents(fields)) for (const h of [...t.handlers]) h(event);
          }
        }
      } catch {
        this.blocked = false;
        if (this.closed) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The stream's entries, newest `limit` of them, oldest first (XREVRANGE: one round trip). */
  async history(topic: string, limit = HISTORY_LIMIT): Promise<never[]> {
    // An entry holds one event or more: `limit` entries hold at least `limit` events.
    const entries = (await this.cmd.xrevrange(this.key(topic), '+', '-', 'COUNT', limit)) as [string, string[]][];
    const out: never[] = [];
    for (let i = entries.length - 1; i >= 0; i--) out.push(...(entryEvents(entries[i]![1]) as never[]));
    return out.length > limit ? out.slice(-limit) : out;
  }

  async ping(): Promise<void> {
    await this.cmd.ping();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.wakeTimer);
    this.wake?.();
    disconnectForGood(this.reader);
    // The read loop reports its own failures while running; closing only waits for it to end. An
    // XREAD queued on a client that was reconnecting is never answered: the loop is left behind then.
    await settlesWithin(this.loopDone, READ_LOOP_END_MS);
    disconnectForGood(this.cmd);
  }
}

/** The events of one stream entry: its `e` field (one event) or its `b` field (several, in order); an entry that is not ours has none. */
function entryEvents(fields: string[]): unknown[] {
  const [name, raw] = fields;
  if (raw === undefined) return [];
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (name === 'b') return Array.isArray(parsed) ? parsed : [];
    return [parsed];
  } catch {
    return []; // not one of ours
  }
}
