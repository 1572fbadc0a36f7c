import type { Health, Service } from '../kernel/lifecycle.js';
import type { LogSink } from '../kernel/log.js';

interface Started {
  name: string;
  part: Service;
}

/**
 * Runs the long-lived parts of one process (kernel/lifecycle.ts Service): each starts when it is
 * added, in order; close() closes them in reverse, once (memoised), runs every close even when
 * one fails, and logs each failure. A part whose start throws is not registered: boot() then
 * closes what had started (in reverse) and rethrows the start's error, not a close's.
 */
export class Lifecycle {
  private readonly started: Started[] = [];
  private closing?: Promise<void>;

  constructor(private readonly log: Pick<LogSink, 'warn' | 'debug'>) {}

  /** Starts `part` now and registers it for close(). Refused once close() was called. */
  async start<T extends Service>(name: string, part: T): Promise<T> {
    if (this.closing) throw new Error(`cannot start ${name}: the process is closing`);
    await part.start();
    this.started.push({ name, part });
    return part;
  }

  /**
   * Runs a start sequence (calls of start() and whatever is built between them). When it throws,
   * everything started so far is closed in reverse, and its error is rethrown.
   */
  async boot<T>(sequence: (life: this) => Promise<T>): Promise<T> {
    try {
      return await sequence(this);
    } catch (err) {
      this.log.debug({ err, started: this.names() }, 'start failed: closing what was started');
      await this.close();
      throw err;
    }
  }

  /** Closes every started part in reverse order; the same promise on every call. Never rejects: failures are logged. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const { name, part } of [...this.started].reverse()) {
        try {
          this.log.debug({ part: name }, `closing ${name}`);
          await part.close();
        } catch (err) {
          this.log.warn({ err, part: name }, `closing ${name} failed; closing the rest`);
        }
      }
    })();
    return this.closing;
  }

  /** The started parts' names, in start order. */
  names(): string[] {
    return this.started.map((s) => s.name);
  }

  /** Health of each started part that reports one (a part's health() throwing reads as not ok). */
  health(): Record<string, Health> {
    const out: Record<string, Health> = {};
    for (const { name, part } of this.started) {
      if (!part.health) continue;
      try {
        out[name] = part.health();
      } catch (err) {
        out[name] = { ok: false, message: (err as Error).message };
      }
    }
    return out;
  }
}

/** A Service from a pair of functions (either may be omitted: nothing to do). */
export function service(start?: () => Promise<void> | void, close?: () => Promise<void> | void, health?: () => Health): Service {
  return {
    start: async () => void (await start?.()),
    close: async () => void (await close?.()),
    ...(health ? { health } : {}),
  };
}

/**
 * A start that runs `close` when it throws, then rethrows the start's error: for parts whose own
 * start may leave something running when it fails (a channel listener that opened a client), so
 * that the Service contract (a failed start leaves nothing running) holds. A failing close is logged.
 */
export function closingOnFailure(
  name: string,
  log: Pick<LogSink, 'warn'>,
  start: () => Promise<void> | void,
  close: () => Promise<void> | void,
): () => Promise<void> {
  return async () => {
    try {
      await start();
    } catch (err) {
      await Promise.resolve()
        .then(close)
        .catch((e: unknown) => log.warn({ err: e, part: name }, `closing ${name} after its failed start failed`));
      throw err;
    }
  };
}

/** Memoises a close: the first call runs it, later calls get the same promise (a part closed early, then again in reverse order). */
export function once(fn: () => Promise<void> | void): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= Promise.resolve().then(fn));
}
