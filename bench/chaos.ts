/**
 * Chaos: many conversations through two ingress and two worker processes (Redis + Postgres) while
 * faults hit them: workers SIGKILLed and restarted, workers frozen (SIGSTOP) past their lease and
 * thawed, Redis restarted mid-stream, every Postgres connection terminated, and approval answers
 * whose connection drops right after they are sent. Some conversations call a tool that `trusted`
 * autonomy runs at once, some one an operator must approve (a loop approves them over the HTTP
 * API); each tool appends its message to the conversation's effects.log, so an effect that
 * happened twice shows. Prints lost, duplicated, reordered, duplicate effects, wedged conversations
 * and streams that were not exactly the answer (all must be 0), then throughput and latency.
 * Asserts nothing.
 *
 *   npm run build && node dist/bench/chaos.js [--conversations 1000] [--messages 10] [--concurrency 64]
 *     [--approval-share 0.2] [--tool-share 0.2] [--stream-share 0.3] [--drop-after-commit 0.3]
 *     [--kill-every-ms 5000] [--freeze-every-ms 0] [--redis-every-ms 0] [--pg-every-ms 0] [--token-delay-ms 0]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GatewayProcess } from '../test/support/gateway.js';
import { pct } from '../test/support/load.js';
import { checkChaos } from './chaos/checks.js';
import { drive, type Kind } from './chaos/driver.js';
import { runFaults } from './chaos/faults.js';
import { chaosModel } from './chaos/model.js';
import { runOperator } from './chaos/operator.js';
import { startBenchStack } from './support.js';

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '1000' },
    messages: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '64' },
    'approval-share': { type: 'string', default: '0.2' },
    'tool-share': { type: 'string', default: '0.2' },
    'stream-share': { type: 'string', default: '0.3' },
    'drop-after-commit': { type: 'string', default: '0.3' },
    'kill-every-ms': { type: 'string', default: '5000' },
    'freeze-every-ms': { type: 'string', default: '0' },
    'redis-every-ms': { type: 'string', default: '0' },
    'pg-every-ms': { type: 'string', default: '0' },
    'token-delay-ms': { type: 'string', default: '0' },
  },
});
const KEY = 'sk-chaos-key-0001';
const OPERATOR_KEY = 'op-chaos-key-0001';
const PREFIX = 'chaos';
const LOCK_MS = 3_000;
const num = (k: keyof typeof values) => Number(values[k]);

async function main(): Promise<void> {
  const stack = await startBenchStack(KEY);
  chaosModel(stack.fake, PREFIX, num('token-delay-ms'));
  const dir = mkdtempSync(join(tmpdir(), 'sb-chaos-'));
  writeFileSync(
    join(dir, 'c.json'),
    JSON.stringify({
      queue: { lockDurationMs: LOCK_MS, stalledIntervalMs: 1500, recoverAfterMs: 5000, recoverIntervalMs: 2000, concurrency: 64 },
      tools: { planner: false },
      // Caution-tier commands run at once (their effect must still happen once); dangerous ones wait for the operator.
      approvals: { autonomy: 'trusted' },
    }),
  );
  const env = { ...stack.env, SWITCHBOARD_CONFIG: join(dir, 'c.json'), SWITCHBOARD_DATA: dir, SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY };
  const ingresses = await Promise.all([GatewayProcess.spawn('ingress', env), GatewayProcess.spawn('ingress', env)]);
  const workers = await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)]);
  const urls = ingresses.map((g) => g.url!);
  const conversations = num('conversations');
  const perConv = num('messages');
  const approvalShare = num('approval-share');
  const toolShare = num('tool-share');
  const kindOf = (c: number): Kind => {
    const x = ((c * 2654435761) % 1000) / 1000;
    return x < approvalShare ? 'approval' : x < approvalShare + toolShare ? 'tool' : 'plain';
  };
  const plan = {
    killEveryMs: num('kill-every-ms'),
    freezeEveryMs: num('freeze-every-ms'),
    freezeMs: LOCK_MS * 2,
    redisEveryMs: num('redis-every-ms'),
    pgEveryMs: num('pg-every-ms'),
  };
  console.log(
    `chaos: ${conversations * perConv} messages across ${conversations} conversations (approval ${approvalShare}, tool ${toolShare}, streamed ${values['stream-share']}), 2 ingress + 2 workers`,
  );
  console.log(
    `faults: kill every ~${plan.killEveryMs || '-'} ms, freeze every ~${plan.freezeEveryMs || '-'} ms for ${plan.freezeMs} ms, Redis restart every ~${plan.redisEveryMs || '-'} ms, Postgres connections terminated every ~${plan.pgEveryMs || '-'} ms, approval answers dropped after sending: ${values['drop-after-commit']}`,
  );

  let stop = false;
  const faults = runFaults({
    plan,
    workers,
    respawn: () => GatewayProcess.spawn('worker', env),
    redis: stack.redis,
    databaseUrl: stack.db.url,
    stop: () => stop,
  });
  const operator = runOperator({ urls, key: OPERATOR_KEY, dropShare: num('drop-after-commit'), stop: () => stop });
  const result = await drive({
    urls,
    apiKey: KEY,
    databaseUrl: stack.db.url,
    prefix: PREFIX,
    conversations,
    messages: perConv,
    concurrency: num('concurrency'),
    streamShare: num('stream-share'),
    kindOf,
    answerTimeoutMs: 120_000,
  });
  stop = true;
  await Promise.all([faults.done, operator.done]);
  const r = await checkChaos({ databaseUrl: stack.db.url, dataDir: dir, prefix: PREFIX, unanswered: result.unanswered, streams: result.streams });
  const f = faults.counts;
  const o = operator.stats;
  console.log(
    `faults:                ${f.killed} workers killed, ${f.frozen} frozen, ${f.redisRestarts} Redis restarts, ${f.pgTerminations} Postgres connections terminated`,
  );
  console.log(`approvals:             ${o.answered} answered, ${o.dropped} dropped after sending (the answer again got: ${JSON.stringify(o.retryStatuses)})`);
  console.log(`messages sent:         ${result.sent} (inbox rows ${r.inboxRows}, client retries ${result.retries})`);
  console.log(`lost:                  ${r.lost}`);
  console.log(`duplicated:            ${r.duplicated}`);
  console.log(`reordered:             ${r.reordered}`);
  console.log(`duplicate effects:     ${r.duplicateEffects}   (effects missing: ${r.missingEffects})`);
  console.log(`wedged conversations:  ${r.wedged}`);
  console.log(`interleaved streams:   ${r.interleaved}   (streams not exactly the answer: ${r.streamsNotTheAnswer} of ${result.streams.length})`);
  console.log(
    `throughput:            ${((result.latenciesMs.length / result.wallMs) * 1000).toFixed(1)} messages/s over ${(result.wallMs / 1000).toFixed(1)} s`,
  );
  console.log(
    `latency (ms):          p50 ${pct(result.latenciesMs, 50)}  p90 ${pct(result.latenciesMs, 90)}  p99 ${pct(result.latenciesMs, 99)}  max ${Math.max(0, ...result.latenciesMs)}`,
  );
  for (const p of [...ingresses, ...workers]) {
    p.proc.kill('SIGCONT');
    await p.kill('SIGKILL');
  }
  await stack.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
