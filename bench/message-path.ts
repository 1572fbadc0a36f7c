/**
 * Which of our files one message runs through, from the HTTP request to the model and back.
 * V8's precise coverage (node:inspector, in this process) is reset after a warm-up turn and
 * taken after exactly one more; every file with a function that ran is on the path. The
 * fake LLM and this script are left out; node_modules too.
 *
 *   npm run build && node dist/bench/message-path.js [--embedded]
 */
import { Session } from 'node:inspector/promises';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FakeLlm, lastUserText } from '../test/fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from '../test/support/gateway.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { TestRedis } from '../test/support/redis.js';

const { values } = parseArgs({ options: { embedded: { type: 'boolean', default: false } } });
const root = fileURLToPath(new URL('../..', import.meta.url));

const fake = new FakeLlm({ recordRequests: false });
await fake.start();
fake.respond((req) => [{ kind: 'text', text: `echo: ${lastUserText(req.body)}` }]);
const redis = values.embedded ? undefined : await TestRedis.start();
const db = values.embedded ? undefined : await createTestDatabase();
const gw = await startGateway(testConfig(fake, values.embedded ? {} : { redisUrl: redis!.url, databaseUrl: db!.url }, { tools: { planner: false } }));
const client = openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'path' });
const turn = (text: string) => client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: text }] });

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
await turn('warm up');
await session.post('Profiler.takePreciseCoverage'); // resets the counts
await turn('hi');
const { result } = await session.post('Profiler.takePreciseCoverage');
await session.post('Profiler.stopPreciseCoverage');

const files = new Map<string, number>();
for (const script of result) {
  if (!script.url.startsWith('file://')) continue;
  const file = relative(root, fileURLToPath(script.url)).replace(/^dist\//, '');
  if (file.startsWith('node_modules') || file.startsWith('test/') || file.startsWith('bench/') || file.startsWith('..')) continue;
  const ran = script.functions.filter((f) => f.ranges[0]!.count > 0).length;
  if (ran) files.set(file, ran);
}
const byLayer = new Map<string, string[]>();
for (const file of [...files.keys()].sort()) {
  const layer = file
    .split('/')
    .slice(0, file.startsWith('src/') && file.split('/').length > 2 ? 2 : 1)
    .join('/');
  byLayer.set(layer, [...(byLayer.get(layer) ?? []), file]);
}
console.log(`files one message ran through (${values.embedded ? 'embedded' : 'Redis + Postgres'}, HTTP chat completion): ${files.size}`);
for (const [layer, list] of byLayer)
  console.log(`  ${layer.padEnd(16)} ${String(list.length).padStart(3)}  ${list.map((f) => f.slice(layer.length + 1) || f).join(' ')}`);

await gw.close();
await fake.close();
await redis?.stop();
await db?.drop();
