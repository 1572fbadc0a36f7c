import type { Redis } from 'ioredis';
import { createRedis } from '../redis.js';
import type { Bus, Subscription } from './port.js';

const SUBSCRIBE_LOOKBACK_MS = 10_000;

interface Topic {
  key: string;
  lastId: string;
  handlers: Set<(e: unknown) => void>;
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
  private blocked = false;
  private closed = false;
  private wake?: () => void;
  private readonly loopDone: Promise<void>;

  constructor(
    url: string,
    private readonly opts: { prefix: string; maxLen?: number; ttlSeconds?: number } = { prefix: 'sb' },
  ) {
    this.cmd = createRedis(url);
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

  async publish(topic: string, ...events: unknown[]): Promise<void> {
    if (events.length === 0) return;
    const key = this.key(topic);
    const p = this.cmd.pipeline();
    for (const event of events) p.xadd(key, 'MAXLEN', '~', String(this.opts.maxLen ?? 1000), '*', 'e', JSON.stringify(event));
    p.expire(key, this.opts.ttlSeconds ?? 3600);
    const res = await p.exec();
    const err = res?.find(([e]) => e)?.[0];
    if (err) throw err;
  }

  async subscribe(topic: string, handler: (e: unknown) => void): Promise<Subscription> {
    let t = this.topics.get(topic);
    if (!t) {
      // Start a little in the past rather than asking Redis for the stream's last
      // id (one round trip per request saved): subscribers match events by
      // turn and inbox ids, so older events of the topic are ignored by them,
      // and the margin absorbs clock skew between this host and Redis.
      t = { key: this.key(topic), lastId: `${Math.max(0, Date.now() - SUBSCRIBE_LOOKBACK_MS)}-0`, handlers: new Set() };
      this.topics.set(topic, t);
      await this.wakeReader();
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

  /** Makes the reader pick up a new topic now rather than at its next timeout. */
  private async wakeReader(): Promise<void> {
    if (this.wake) {
      const w = this.wake;
      this.wake = undefined;
      w();
      return;
    }
    for (let i = 0; i < 50 && this.blocked && !this.closed; i++) {
      if (this.readerId === undefined) return; // the loop will rebuild its key list anyway
      const n = (await this.cmd.call('CLIENT', 'UNBLOCK', String(this.readerId))) as number;
      if (n === 1) return;
      // The XREAD may still be on its way to Redis: try again shortly.
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      const topics = [...this.topics.values()];
      if (topics.length === 0) {
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      try {
        if (this.readerId === undefined) this.readerId = (await this.reader.call('CLIENT', 'ID')) as number;
        const args: string[] = ['COUNT', '500', 'BLOCK', '2000', 'STREAMS', ...topics.map((t) => t.key), ...topics.map((t) => t.lastId)];
        this.blocked = true;
        const res = (await this.reader.call('XREAD', ...args)) as [string, [string, string[]][]][] | null;
        this.blocked = false;
        if (!res) continue;
        for (const [key, entries] of res) {
          const t = topics.find((x) => x.key === key);
          if (!t) continue;
          for (const [id, fields] of entries) {
            t.lastId = id;
            const raw = fields[1];
            if (raw === undefined) continue;
            let event: unknown;
            try {
              event = JSON.parse(raw);
            } catch {
              continue;
            }
            for (const h of [...t.handlers]) h(event);
          }
        }
      } catch {
        this.blocked = false;
        if (this.closed) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async ping(): Promise<void> {
    await this.cmd.ping();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    this.reader.disconnect();
    await this.loopDone.catch(() => {});
    this.cmd.disconnect();
  }
}
