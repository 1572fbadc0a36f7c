import pg from 'pg';
import type { GatewayProcess } from '../../test/support/gateway.js';
import type { TestRedis } from '../../test/support/redis.js';

export interface FaultCounts {
  killed: number;
  frozen: number;
  redisRestarts: number;
  pgTerminations: number;
}

export interface FaultPlan {
  killEveryMs: number;
  freezeEveryMs: number;
  /** How long a frozen worker stays stopped: longer than the lock, so another worker takes its turns. */
  freezeMs: number;
  redisEveryMs: number;
  pgEveryMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const jitter = (ms: number) => ms * (0.5 + Math.random());

/**
 * The faults of the chaos run, each on its own clock (0 turns one off): workers SIGKILLed and
 * restarted, workers frozen (SIGSTOP) past their lease and thawed (SIGCONT), Redis restarted, and
 * every Postgres connection of the gateway terminated.
 */
export function runFaults(o: {
  plan: FaultPlan;
  workers: GatewayProcess[];
  respawn: () => Promise<GatewayProcess>;
  redis: TestRedis;
  databaseUrl: string;
  stop: () => boolean;
}): { done: Promise<void>; counts: FaultCounts } {
  const counts: FaultCounts = { killed: 0, frozen: 0, redisRestarts: 0, pgTerminations: 0 };
  const every = async (ms: number, fault: () => Promise<void>) => {
    if (!ms) return;
    while (!o.stop()) {
      await sleep(jitter(ms));
      if (o.stop()) return;
      await fault();
    }
  };
  // One worker at a time is killed or frozen, so that some worker is always there.
  let busy = false;
  const pick = () => Math.floor(Math.random() * o.workers.length);
  const done = Promise.all([
    every(o.plan.killEveryMs, async () => {
      if (busy) return;
      busy = true;
      const i = pick();
      await o.workers[i]!.kill('SIGKILL');
      counts.killed++;
      o.workers[i] = await o.respawn();
      busy = false;
    }),
    every(o.plan.freezeEveryMs, async () => {
      if (busy) return;
      busy = true;
      const w = o.workers[pick()]!;
      if (w.proc.exitCode === null) {
        w.proc.kill('SIGSTOP');
        counts.frozen++;
        await sleep(o.plan.freezeMs);
        w.proc.kill('SIGCONT');
      }
      busy = false;
    }),
    every(o.plan.redisEveryMs, async () => {
      await o.redis.restart(500);
      counts.redisRestarts++;
    }),
    every(o.plan.pgEveryMs, async () => {
      const c = new pg.Client({ connectionString: o.databaseUrl });
      try {
        await c.connect();
        const r = await c.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = $1 and application_name <> $2',
          ['client backend', 'chaos-bench'],
        );
        counts.pgTerminations += r.rowCount ?? 0;
      } catch {
        /* the next round tries again */
      } finally {
        await c.end().catch(() => undefined);
      }
    }),
  ]).then(() => undefined);
  return { done, counts };
}
