/**
 * Soak: steady load for a while (default 30 minutes) against one ingress and
 * two workers (Redis + Postgres); prints each process's resident memory and the
 * latency every interval, to see that both stay flat. Asserts nothing.
 *
 *   npm run build && node dist/bench/soak.js [--minutes 30] [--rate 50] [--interval-s 60]
 */
import { parseArgs } from 'node:util';
import { GatewayProcess } from '../test/support/gateway.js';
import { pct } from '../test/support/load.js';
import { rssMb, startBenchStack } from './support.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '30' }, rate: { type: 'string', default: '50' }, 'interval-s': { type: 'string', default: '60' } },
});
const KEY = 'sk-soak-key-00001';

async function main(): Promise<void> {
  const stack = await startBenchStack(KEY, ` ${'word '.repeat(20)}`);
  const env = stack.env;
  const procs = [await GatewayProcess.spawn('ingress', env), await GatewayProcess.spawn('worker', env), await GatewayProcess.spawn('worker', env)];
  const names = ['ingress', 'worker-1', 'worker-2'];
  const url = procs[0]!.url!;
  const endAt = Date.now() + Number(values.minutes) * 60_000;
  const every = 1000 / Number(values.rate);
  let window: number[] = [];
  let errors = 0;
  let n = 0;
  console.log(`soak: ${values.rate} messages/s for ${values.minutes} min; every ${values['interval-s']} s: RSS (MB) of ${names.join(', ')} and latency`);
  const report = setInterval(() => {
    const lat = window;
    window = [];
    const m = ((Date.now() - (endAt - Number(values.minutes) * 60_000)) / 60_000).toFixed(1);
    console.log(
      `t=${m.padStart(5)} min  rss ${procs.map((p) => rssMb(p.proc.pid!)).join(' / ')}  latency p50 ${pct(lat, 50)} p99 ${pct(lat, 99)} ms  (${lat.length} turns, ${errors} errors)`,
    );
  }, Number(values['interval-s']) * 1000);
  const inflight = new Set<Promise<void>>();
  while (Date.now() < endAt) {
    const i = n++;
    const t0 = Date.now();
    const p = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': `soak-${i % 200}` },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: `message ${i}` }] }),
    })
      .then(async (r) => {
        await r.arrayBuffer();
        if (r.ok) window.push(Date.now() - t0);
        else errors++;
      })
      .catch(() => void errors++)
      .finally(() => inflight.delete(p));
    inflight.add(p);
    await new Promise((r) => setTimeout(r, every));
  }
  await Promise.all(inflight);
  clearInterval(report);
  console.log(`done: ${n} messages, ${errors} errors; final rss ${procs.map((p) => rssMb(p.proc.pid!)).join(' / ')} MB`);
  for (const p of procs) await p.kill('SIGKILL');
  await stack.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
