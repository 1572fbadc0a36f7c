/**
 * Leak check: serves requests in phases against one ingress and one worker
 * (Redis + Postgres) and, after each phase, has every process write a heap
 * snapshot (which first runs a full garbage collection). Prints the live heap
 * of each process after each phase and, per process, the kinds of object that
 * grew most between the first and the last snapshot. A heap that keeps growing
 * with the request count is a leak; one that levels off is a cache. Asserts nothing.
 *
 *   npm run build && node dist/bench/heap.js [--phases 3000,6000,6000] [--concurrency 32] [--topology split|all]
 *
 * Half the requests continue one of 200 conversations, half are one-off; a
 * third are non-streamed. Snapshots go to a temporary folder, removed at the end.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GatewayProcess } from '../test/support/gateway.js';
import { rssMb, startBenchStack } from './support.js';

const { values } = parseArgs({
  options: {
    phases: { type: 'string', default: '3000,6000,6000' },
    concurrency: { type: 'string', default: '32' },
    topology: { type: 'string', default: 'split' },
  },
});
const KEY = 'sk-heap-key-00001';

/** Live objects in a V8 heap snapshot, by kind: count and bytes. */
function heapByKind(file: string): { total: number; kinds: Map<string, { count: number; bytes: number }> } {
  const s = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [width, type, name, size] = [fields.length, fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')];
  const kinds = new Map<string, { count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < s.nodes.length; i += width) {
    const t = types[s.nodes[i + type]!]!;
    const kind = t === 'object' || t === 'closure' ? `${t} ${s.strings[s.nodes[i + name]!]!.slice(0, 60)}` : `(${t})`;
    const k = kinds.get(kind) ?? { count: 0, bytes: 0 };
    k.count++;
    k.bytes += s.nodes[i + size]!;
    kinds.set(kind, k);
    total += s.nodes[i + size]!;
  }
  return { total, kinds };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-heap-'));
  const stack = await startBenchStack(KEY, ` ${'word '.repeat(20)}`);
  const env = { ...stack.env, NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`, SWITCHBOARD_WORKER_CONCURRENCY: '64' };
  const roles = values.topology === 'all' ? (['start'] as const) : (['ingress', 'worker'] as const);
  const procs = [];
  for (const role of roles) procs.push(await GatewayProcess.spawn(role, env));
  const url = procs[0]!.url!;
  const snapshots: string[][] = procs.map(() => []);
  let sent = 0;
  try {
    for (const phase of values.phases!.split(',').map(Number)) {
      let left = phase;
      let errors = 0;
      await Promise.all(
        Array.from({ length: Number(values.concurrency) }, async () => {
          while (left-- > 0) {
            const i = sent++;
            const r = await fetch(`${url}/v1/chat/completions`, {
              method: 'POST',
              headers: {
                authorization: `Bearer ${KEY}`,
                'content-type': 'application/json',
                ...(i % 2 ? {} : { 'x-switchboard-conversation': `heap-${i % 200}` }),
              },
              body: JSON.stringify({ model: 'default', stream: i % 3 !== 0, messages: [{ role: 'user', content: `hello ${i}` }] }),
            });
            await r.arrayBuffer();
            if (!r.ok) errors++;
          }
        }),
      );
      await new Promise((r) => setTimeout(r, 2000)); // let the last turns close
      // One snapshot at a time: each process writes its own (named with its pid).
      const heaps = [];
      for (const [i, p] of procs.entries()) {
        const before = new Set(readdirSync(dir));
        p.proc.kill('SIGUSR2');
        let file: string | undefined;
        for (let t = 0; t < 600 && !file; t++) {
          await new Promise((r) => setTimeout(r, 250));
          file = readdirSync(dir).find((f) => !before.has(f) && f.includes(`.${p.proc.pid}.`));
        }
        if (!file) throw new Error(`${roles[i]} wrote no heap snapshot`);
        // The file appears before it is complete: read it once it parses.
        let heap: ReturnType<typeof heapByKind> | undefined;
        for (let t = 0; !heap; t++) {
          await new Promise((r) => setTimeout(r, 500));
          try {
            heap = heapByKind(join(dir, file));
          } catch (err) {
            if (!(err instanceof SyntaxError) || t > 240) throw err;
          }
        }
        snapshots[i]!.push(join(dir, file));
        heaps.push(`${roles[i]} ${(heap.total / 1e6).toFixed(1)} MB live heap, ${rssMb(p.proc.pid!)} MB RSS`);
      }
      console.log(`after ${String(sent).padStart(6)} requests (${errors} errors): ${heaps.join('; ')}`);
    }
    for (const [i, files] of snapshots.entries()) {
      if (files.length < 2) break;
      const a = heapByKind(files[0]!);
      const b = heapByKind(files[files.length - 1]!);
      const grew = [...b.kinds]
        .map(([kind, k]) => ({ kind, count: k.count - (a.kinds.get(kind)?.count ?? 0), bytes: k.bytes - (a.kinds.get(kind)?.bytes ?? 0) }))
        .filter((g) => g.bytes > 0)
        .sort((x, y) => y.bytes - x.bytes)
        .slice(0, 8);
      console.log(`\n${roles[i]}: grew most between the first and last snapshot`);
      for (const g of grew) console.log(`  ${(g.bytes / 1e3).toFixed(0).padStart(7)} kB  ${String(g.count).padStart(7)} objects  ${g.kind}`);
    }
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    await stack.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
