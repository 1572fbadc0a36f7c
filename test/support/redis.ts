import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Jobs BullMQ has ever been given on one queue (its id counter). */
export async function bullJobCount(url: string, prefix: string, queue: string): Promise<number> {
  const r = new Redis(url);
  try {
    return Number((await r.get(`${prefix}:${queue}:id`)) ?? 0);
  } finally {
    r.disconnect();
  }
}

/**
 * A private redis-server for one test file, on its own port, so a test can
 * restart it without disturbing others.
 */
export class TestRedis {
  private proc?: ChildProcess;
  readonly dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<TestRedis> {
    const r = new TestRedis(await freePort());
    await r.startProcess();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private async startProcess(): Promise<void> {
    const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
    this.proc = spawn(bin, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const c = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        await c.ping();
        c.disconnect();
        return;
      } catch {
        c.disconnect();
        if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${this.port}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return; // already gone (a kill leaves exitCode null)
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }

  /** Starts it again on the same port after stop(), empty. */
  async startAgain(): Promise<void> {
    await this.startProcess();
  }

  /** Kills Redis and starts it again on the same port, empty (nothing is persisted). */
  async restart(downMs = 300): Promise<void> {
    await this.stop();
    await new Promise((r) => setTimeout(r, downMs));
    await this.startProcess();
  }
}
