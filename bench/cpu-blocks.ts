/**
 * Where a process's CPU goes, by block (issue #24): reads a V8 CPU profile (`--cpu-prof`) and puts
 * each sample in the block of the frame nearest its leaf that belongs to one (a socket write under
 * the Postgres client is the Postgres client's; under the SSE writer, the HTTP block's), node's own
 * frames belonging to none. Prints each block's share of the busy time (idle excluded).
 *
 *   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node dist/bench/gateway.js --topology all --levels 64 --requests 3000
 *   node dist/bench/cpu-blocks.js /tmp/prof/<file>.cpuprofile [--last-ms 4000]
 *
 * `--last-ms` keeps only the profile's last N ms (the measured level, after the warm-up).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** First match wins, so the narrower rules come before the wider ones (the log sink before the turn). */
const BLOCKS: Array<[string, RegExp]> = [
  ['logging', /\/(pino|sonic-boom|@pinojs)\/|\/src\/log[.-]|\/turn\/sinks\/log-sink/],
  ['Postgres client and the store', /\/(pg|pg-protocol|pg-pool|pg-types)\/|\/adapters\/(store|db)\//],
  ['queue (BullMQ, the local lane)', /\/bullmq\/|\/adapters\/queue\//],
  ['Redis client', /\/ioredis\/|\/adapters\/(redis|cooldowns|ratelimit|heartbeat|lock)/],
  ['bus (publisher, in-process copies)', /\/adapters\/bus\/|\/src\/event-publisher/],
  ['moat (guards, planner, redaction)', /\/moat\/|\/src\/provider-request|\/src\/honesty/],
  ['model call (provider code, the HTTP client to the model)', /\/providers\/|\/@mariozechner\/pi-ai\//],
  ['HTTP in, SSE out', /\/channels\/http\/|\/src\/http\//],
  ['turn, agent loop, worker, ingress steps', /\/src\/(turn|agent-loop|worker|ingress|turn-opening|channel)|\/@mariozechner\/pi-agent-core\//],
  ['metrics, traces', /\/prom-client\/|\/@opentelemetry\/|\/src\/(metrics|telemetry)/],
];

const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'last-ms': { type: 'string', default: '0' } } });
if (!positionals[0]) {
  console.error('usage: node dist/bench/cpu-blocks.js <file.cpuprofile> [--last-ms N]');
  process.exit(2);
}
const p = JSON.parse(readFileSync(positionals[0], 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const blockOf = new Map<number, string>();
function block(id: number): string {
  const known = blockOf.get(id);
  if (known) return known;
  const f = byId.get(id)!.callFrame;
  let b: string | undefined;
  if (f.functionName === '(garbage collector)') b = 'garbage collector';
  else if (f.url) b = BLOCKS.find(([, re]) => re.test(f.url))?.[0];
  const up = parent.get(id);
  const found = b ?? (up === undefined ? 'other (node internals, timers, microtasks)' : block(up));
  blockOf.set(id, found);
  return found;
}

const from = Number(values['last-ms']) > 0 ? p.endTime - Number(values['last-ms']) * 1000 : p.startTime;
const shares = new Map<string, number>();
let busy = 0;
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  const dt = p.timeDeltas[i] ?? 0;
  t += dt;
  if (t < from) continue;
  const node = byId.get(p.samples[i]!)!;
  if (node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(program)') continue;
  busy += dt;
  const b = block(node.id);
  shares.set(b, (shares.get(b) ?? 0) + dt);
}
console.log(`busy ${(busy / 1000).toFixed(0)} ms of ${((p.endTime - from) / 1000).toFixed(0)} ms profiled`);
for (const [name, us] of [...shares].sort((a, b) => b[1] - a[1])) console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}%  ${name}`);
