/**
 * The floor under a turn: the CPU each building block the gateway uses costs
 * on its own, driven at the same concurrency as the gateway bench, with
 * nothing of ours around it. Their sum is what a turn cannot cost less than on
 * this stack and this machine, whatever the gateway code does. Asserts nothing.
 *
 *   npm run build && node dist/bench/components.js [--turns 4000] [--concurrency 64] [--only queue,store,bus,model]
 *
 * - queue: a BullMQ job added with a deduplication id and processed (our adapter).
 * - store: the statements of a one-off turn on Postgres with a pool of 4, both ways in the
 *   same run: three (accept, startTurn, finishTurn) and two (acceptOpening, finishTurn: the turn
 *   opened by the accept statement); the sum takes the cheaper.
 * - bus: a subscription, three publishes (turn start, text, done) and their
 *   delivery, over Redis Streams between two bus instances.
 * - model: one streamed completion (20 tokens) through the provider chain from
 *   the fake LLM (whose own CPU is the HTTP floor), once per transport in the
 *   same run: `sdk` (pi-ai and the openai SDK) and `lean` (providers/lean/);
 *   the sum takes the cheaper.
 * Each prints CPU per turn of this process and of the service it uses.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { Api, Model } from '@mariozechner/pi-ai';
import { Redis } from 'ioredis';
import { RedisStreamsBus } from '../adapters/bus/redis-streams.js';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import { openPostgres } from '../adapters/db/pg.js';
import { BullQueue } from '../adapters/queue/bullmq.js';
import { migrate } from '../adapters/store/migrate.js';
import { Store } from '../adapters/store/store.js';
import { packageRoot } from '../kernel/paths.js';
import { FallbackChain } from '../providers/chain.js';
import { configSchema } from '../src/config.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';
import { cpuMs, PgCpuSampler, redisCpuMs } from './support.js';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '4000' }, concurrency: { type: 'string', default: '64' }, only: { type: 'string' } },
});
/** --only model (or queue,store...) runs just those parts, e.g. under --cpu-prof. */
const runs = (part: string) => !values.only || values.only.split(',').includes(part);
const TURNS = Number(values.turns);
const C = Number(values.concurrency);

/** Runs `n` operations, `c` at a time. */
async function drive(n: number, c: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = next++; i < n; i = next++) await op(i);
    }),
  );
}

/** CPU ms per turn of this process and of the named services over `run`. */
async function measure(label: string, n: number, services: Record<string, () => Promise<number> | number>, run: () => Promise<void>): Promise<number> {
  const before = await Promise.all(Object.values(services).map((f) => f()));
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const seconds = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  await new Promise((r) => setTimeout(r, 300)); // let the samplers catch up
  const after = await Promise.all(Object.values(services).map((f) => f()));
  const selfMs = (self.user + self.system) / 1000 / n;
  const per = Object.keys(services).map((name, i) => [name, (after[i]! - before[i]!) / n] as const);
  const total = selfMs + per.reduce((a, [, v]) => a + v, 0);
  console.log(
    `${label.padEnd(12)} ${total.toFixed(2).padStart(5)} ms/turn: this process ${selfMs.toFixed(2)} ms, ${per.map(([k, v]) => `${k} ${v.toFixed(2)} ms`).join(', ')} (${(n / seconds).toFixed(0)} turns/s alone)`,
  );
  return total;
}

async function main(): Promise<void> {
  const redis = await TestRedis.start();
  const db = await createTestDatabase();
  const probe = new Redis(redis.url);
  const redisCpu = () => redisCpuMs(probe);
  const pgCpu = new PgCpuSampler();
  const fake = spawn(process.execPath, [join(packageRoot, 'dist/test/fakes/fake-llm.js'), '--port', '0', '--tokens', '20'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const fakeUrl = await new Promise<string>((resolve) =>
    createInterface({ input: fake.stdout! }).on('line', (l) => /"url"/.test(l) && resolve((JSON.parse(l) as { url: string }).url)),
  );
  const sums: number[] = [];
  console.log(`${TURNS} turns at concurrency ${C}; CPU per turn (ms)\n`);
  try {
    if (runs('queue')) {
      const queue = new BullQueue<{ id: number }>('floor', redis.url, {
        attempts: 3,
        backoffMs: 50,
        prefix: 'fl',
        lockDurationMs: 30_000,
        stalledIntervalMs: 30_000,
      });
      const waiting = new Map<number, () => void>();
      queue.process(async (job) => waiting.get(job.data.id)?.(), { concurrency: C });
      await new Promise((r) => setTimeout(r, 500));
      const job = (i: number) =>
        new Promise<void>((resolve) => {
          waiting.set(i, resolve);
          void queue.add({ id: i }, { dedupKey: `c${i}` });
        }).then(() => void waiting.delete(i));
      await drive(500, C, job); // warm-up
      sums.push(await measure('queue', TURNS, { redis: redisCpu }, () => drive(TURNS, C, (i) => job(i + 1_000_000))));
      await queue.close();
    }

    if (runs('store')) {
      const pool = await openPostgres(db.url, { max: 4 });
      await migrate(pool);
      const store = new Store(pool);
      const message = (i: number) => ({
        channel: 'http',
        externalId: `m${i}`,
        conversationKey: `http/k/oneoff-${i}/-`,
        sender: { id: 'u' },
        text: `hello ${i}`,
        attachments: [],
        receivedAt: new Date(),
      });
      const finish = (turnId: string, i: number, lease: string) => {
        const messages = [
          { role: 'user', content: `hello ${i}`, timestamp: 1 },
          { role: 'assistant', content: [{ type: 'text', text: 'word '.repeat(20) }], timestamp: 2 },
        ];
        return store.finishTurn({
          turnId,
          status: 'done',
          messages,
          finishReason: 'stop',
          usage: { input: 10, output: 20 },
          provider: { slot: 'a' },
          lease,
        });
      };
      // Accept, then the drain's startTurn, then finishTurn (split, or no slot free where it was accepted).
      const turn = async (i: number) => {
        const a = await store.accept(message(i));
        const lease = `l${i}`;
        const s = await store.startTurn({
          conversationId: a.conversationId,
          worker: 'w',
          lease,
          leaseMs: 30_000,
          claim: 'auto',
          modes: { default: 'followup', byChannel: {} },
          historyLimits: { default: 50 },
          memoryLimit: 20,
        });
        await finish(s.turn!.id, i, lease);
      };
      // The turn opened by the accept statement (src/turn-opening.ts), then finishTurn: the one-off turn of a process that runs both roles.
      const opened = async (i: number) => {
        const lease = `l${i}`;
        const o = await store.acceptOpening!(message(i), 'default', {}, { turnId: `t_${i}`, worker: 'w', lease, leaseMs: 30_000, memoryLimit: 20 });
        await finish(o.started!.turn!.id, i, lease);
      };
      await drive(500, C, turn);
      await drive(500, C, (i) => opened(i + 500_000));
      await pool.query('vacuum analyze');
      const three = await measure('store (3)', TURNS, { postgres: () => pgCpu.total() }, () => drive(TURNS, C, (i) => turn(i + 1_000_000)));
      const two = await measure('store (2)', TURNS, { postgres: () => pgCpu.total() }, () => drive(TURNS, C, (i) => opened(i + 2_000_000)));
      console.log(`             opened at accept / three statements: ${(two / three).toFixed(2)}`);
      sums.push(Math.min(two, three));
      await pool.close();
    }

    if (runs('bus')) {
      const [sub, pub] = [new RedisStreamsBus(redis.url, { prefix: 'fl' }), new RedisStreamsBus(redis.url, { prefix: 'fl' })];
      const exchange = async (i: number) => {
        const topic = `conv:bench-${i}`;
        let done!: () => void;
        const finished = new Promise<void>((r) => (done = r));
        const s = await sub.subscribe(topic, (e) => (e as { type: string }).type === 'done' && done());
        await pub.publish(topic, { type: 'turn_start', turnId: `t${i}` });
        await pub.publish(topic, { type: 'text_delta', turnId: `t${i}`, delta: 'word '.repeat(20) });
        await pub.publish(topic, { type: 'done', turnId: `t${i}`, text: 'word '.repeat(20) });
        await finished;
        s.close();
      };
      await drive(500, C, exchange);
      sums.push(await measure('bus', TURNS, { redis: redisCpu }, () => drive(TURNS, C, (i) => exchange(i + 1_000_000))));
      await Promise.all([sub.close(), pub.close()]);
    }

    if (runs('model')) {
      const model = {
        id: 'fake-model',
        name: 'fake',
        api: 'openai-completions',
        provider: 'local',
        baseUrl: `${fakeUrl}/v1`,
        reasoning: false,
        input: ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 128_000,
        maxTokens: 1000,
        compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
      } as Model<Api>;
      // Both transports in the same run, the SDK path first: pi-ai + the openai SDK, then the lean transport.
      const perTransport: Record<string, number> = {};
      for (const transport of ['sdk', 'lean'] as const) {
        const chain = new FallbackChain([{ id: 'a', model, apiKey: 'fake' }], new MemoryCooldowns(), { ...configSchema.parse({}).fallback, transport });
        const call = async (i: number) => {
          const s = chain.stream({ systemPrompt: 'You are helpful.', messages: [{ role: 'user', content: `hello ${i}`, timestamp: Date.now() }] }, {}, {});
          for await (const ev of s) void ev;
        };
        await drive(500, C, call);
        perTransport[transport] = await measure(`model (${transport})`, TURNS, { 'fake LLM (HTTP floor)': () => cpuMs(fake.pid!) }, () =>
          drive(TURNS, C, call),
        );
      }
      console.log(`       lean / sdk: ${(perTransport.lean! / perTransport.sdk!).toFixed(2)} of the SDK path's CPU per call`);
      sums.push(Math.min(perTransport.lean!, perTransport.sdk!));
    }

    const total = sums.reduce((a, b) => a + b, 0);
    console.log(`\nsum ${total.toFixed(2)} ms of CPU per turn: at most ${((2 * 1000) / total).toFixed(0)} turns/s on 2 cores, before any gateway code runs`);
  } finally {
    probe.disconnect();
    fake.kill('SIGTERM');
    await redis.stop();
    await db.drop().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
