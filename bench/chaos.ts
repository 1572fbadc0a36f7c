/**
 * Chaos: many messages across many conversations through two ingress and two
 * worker processes (Redis + Postgres) while workers are SIGKILLed at random and
 * restarted. Prints messages lost, replies duplicated, order violations (all
 * must be 0), throughput and latency. Asserts nothing.
 *
 *   npm run build && node dist/bench/chaos.js [--conversations 1000] [--messages 10] [--concurrency 64] [--kill-every-ms 5000]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GatewayProcess } from '../test/support/gateway.js';
import { checkInvariants, pct, runLoad } from '../test/support/load.js';
import { startBenchStack } from './support.js';

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '1000' },
    messages: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '64' },
    'kill-every-ms': { type: 'string', default: '5000' },
  },
});
const KEY = 'sk-chaos-key-0001';

async function main(): Promise<void> {
  const stack = await startBenchStack(KEY);
  const dir = mkdtempSync(join(tmpdir(), 'sb-chaos-'));
  writeFileSync(
    join(dir, 'c.json'),
    JSON.stringify({
      queue: { lockDurationMs: 3000, stalledIntervalMs: 1500, recoverAfterMs: 5000, recoverIntervalMs: 2000, concurrency: 64 },
      tools: { planner: false },
    }),
  );
  const env = { ...stack.env, SWITCHBOARD_CONFIG: join(dir, 'c.json'), SWITCHBOARD_DATA: dir };
  const ingresses = await Promise.all([GatewayProcess.spawn('ingress', env), GatewayProcess.spawn('ingress', env)]);
  const workers = await Promise.all([GatewayProcess.spawn('worker', env), GatewayProcess.spawn('worker', env)]);
  const conversations = Number(values.conversations);
  const perConv = Number(values.messages);
  console.log(
    `chaos: ${conversations * perConv} messages across ${conversations} conversations, 2 ingress + 2 workers, a worker SIGKILLed every ~${values['kill-every-ms']} ms`,
  );

  let kills = 0;
  let stop = false;
  const chaos = (async () => {
    while (!stop) {
      await new Promise((r) => setTimeout(r, Number(values['kill-every-ms']) * (0.5 + Math.random())));
      if (stop) break;
      const i = Math.floor(Math.random() * workers.length);
      await workers[i]!.kill('SIGKILL');
      kills++;
      workers[i] = await GatewayProcess.spawn('worker', env);
    }
  })();

  const result = await runLoad({
    urls: ingresses.map((g) => g.url!),
    apiKey: KEY,
    conversations,
    messagesPerConversation: perConv,
    concurrency: Number(values.concurrency),
    prefix: 'chaos',
    requestTimeoutMs: 120_000,
  });
  stop = true;
  await chaos;
  const inv = await checkInvariants(stack.db.url, 'chaos');
  console.log(`workers killed:        ${kills}`);
  console.log(`messages sent:         ${result.sent} (answered correctly: ${result.answeredOk}, failed requests: ${result.failedRequests})`);
  console.log(`messages lost:         ${inv.lost}`);
  console.log(`replies duplicated:    ${inv.duplicated}`);
  console.log(`order violations:      ${inv.orderViolations}`);
  console.log(`throughput:            ${((result.sent / result.wallMs) * 1000).toFixed(1)} messages/s over ${(result.wallMs / 1000).toFixed(1)} s`);
  console.log(
    `latency (ms):          p50 ${pct(result.latenciesMs, 50)}  p90 ${pct(result.latenciesMs, 90)}  p99 ${pct(result.latenciesMs, 99)}  max ${Math.max(...result.latenciesMs)}`,
  );
  for (const p of [...ingresses, ...workers]) await p.kill('SIGKILL');
  await stack.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
