/**
 * Resume after a SIGKILL: a turn whose worker is killed while its tool runs is finished by the
 * other worker from the step journal. Prints, per run, the time from the kill to the answer, and
 * what the replay cost (model requests, tool runs), beside the same turn without a crash. The time
 * is mostly the lease and the job lock running out (queue.lockDurationMs, 3 s here); the replay
 * itself asks no provider again for what was journaled. Asserts nothing.
 *
 *   npm run build && node dist/bench/resume.js [--runs 5] [--lock-ms 3000]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { lastUserText } from '../test/fakes/fake-llm.js';
import { GatewayProcess } from '../test/support/gateway.js';
import { pct } from '../test/support/load.js';
import { startBenchStack } from './support.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, 'lock-ms': { type: 'string', default: '3000' } } });
const KEY = 'sk-resume-key-0001';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const stack = await startBenchStack(KEY);
  const requests = new Map<string, number>();
  // The first request of a message asks for a tool that takes a while; after its result, the answer.
  stack.fake.respond((req) => {
    const body = req.body as { messages: Array<{ role: string }> };
    const text = lastUserText(body);
    requests.set(text, (requests.get(text) ?? 0) + 1);
    if (body.messages[body.messages.length - 1]?.role === 'tool') return [{ kind: 'text', text: `done: ${text}` }];
    return [{ kind: 'toolCall', name: 'shell_exec', args: { command: `sleep 2 && echo ${text} >> runs.log` } }];
  });
  const dir = mkdtempSync(join(tmpdir(), 'sb-resume-'));
  const lockMs = Number(values['lock-ms']);
  writeFileSync(
    join(dir, 'c.json'),
    JSON.stringify({
      queue: { lockDurationMs: lockMs, stalledIntervalMs: Math.max(500, lockMs / 2) },
      tools: { planner: false },
      approvals: { autonomy: 'trusted' },
    }),
  );
  const env = { ...stack.env, SWITCHBOARD_CONFIG: join(dir, 'c.json'), SWITCHBOARD_DATA: dir };
  const ingress = await GatewayProcess.spawn('ingress', env);
  // One worker at a time: the one killed is the one running the turn; its replacement resumes it.
  let worker = await GatewayProcess.spawn('worker', env);
  const ask = async (text: string): Promise<string> => {
    const r = await fetch(`${ingress.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'x-switchboard-conversation': text, 'idempotency-key': text },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: text }] }),
      signal: AbortSignal.timeout(120_000),
    });
    return ((await r.json()) as { choices?: Array<{ message: { content: string } }> }).choices?.[0]?.message.content ?? `HTTP ${r.status}`;
  };

  const plain: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    await ask(`plain-${i}`);
    plain.push(Date.now() - t0);
  }
  const resumed: number[] = [];
  const costs: string[] = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const text = `crash-${i}`;
    const answer = ask(text);
    await sleep(1_000); // the model has answered and the tool is running (it takes 2 s)
    const killedAt = Date.now();
    await worker.kill('SIGKILL');
    worker = await GatewayProcess.spawn('worker', env);
    const out = await answer;
    resumed.push(Date.now() - killedAt);
    costs.push(`${text}: ${requests.get(text)} model requests, answer "${out.slice(0, 60)}"`);
  }
  console.log(`turn with one 2 s tool, no crash (ms):   ${plain.join(', ')}  (p50 ${pct(plain, 50)})`);
  console.log(`kill to answer after a SIGKILL (ms):     ${resumed.join(', ')}  (p50 ${pct(resumed, 50)}; lock ${lockMs} ms)`);
  for (const c of costs) console.log(`  ${c}`);
  console.log('(the replacement worker is started right after the kill; its start-up is part of the time)');
  await ingress.kill('SIGKILL');
  await worker.kill('SIGKILL');
  await stack.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
