/**
 * What the tool sandbox costs: one shell_exec call (`true`, `ls`) through the
 * bwrap sandbox against the same call unconfined (the floor), p50/p99 over N
 * calls, and the memory of the gateway process before and after.
 *
 *   npm run build && node dist/bench/sandbox.js [--calls 200] [--network none|egress]
 */
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pct } from '../test/support/load.js';
import { createSandbox, DEFAULT_LIMITS, type Sandbox, type SandboxNetwork } from '../tools/sandbox/index.js';
import { rssMb } from './support.js';

const TARGET_OVERHEAD_P50_MS = 20;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

async function time(sandbox: Sandbox, command: string, workspace: string, calls: number): Promise<number[]> {
  const signal = new AbortController().signal;
  for (let i = 0; i < 5; i++) await sandbox.exec({ command, workspace, timeoutMs: 10_000, signal, maxOutputBytes: 65536 }); // warm up
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const r = await sandbox.exec({ command, workspace, timeoutMs: 10_000, signal, maxOutputBytes: 65536 });
    ms.push(performance.now() - t0);
    if (r.code !== 0) throw new Error(`${command} failed in ${sandbox.mode}: ${r.output}`);
  }
  return ms;
}

const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms`;

async function main(): Promise<void> {
  const calls = Number(flag('calls', '200'));
  const network = flag('network', 'none') as SandboxNetwork;
  const workspace = mkdtempSync(join(tmpdir(), 'sb-bench-sandbox-'));
  for (let i = 0; i < 20; i++) writeFileSync(join(workspace, `file-${i}.txt`), 'x'.repeat(100));
  const rss0 = rssMb(process.pid);
  const none = await createSandbox({ mode: 'none', network: 'none', limits: DEFAULT_LIMITS, uid: 65534, gid: 65534 });
  const bwrap = await createSandbox({ mode: 'bwrap', network, limits: DEFAULT_LIMITS, uid: 65534, gid: 65534 });
  if (bwrap.owner) chownSync(workspace, bwrap.owner.uid, bwrap.owner.gid);
  console.log(
    `sandbox bench: ${calls} calls each, network ${network}, gateway ${process.getuid?.() === 0 ? 'as root (commands run as uid 65534)' : 'as an ordinary user'}`,
  );
  const rows: Array<[string, number[], number[]]> = [];
  for (const command of ['true', 'ls -la']) {
    const floor = await time(none, command, workspace, calls);
    const boxed = await time(bwrap, command, workspace, calls);
    rows.push([command, floor, boxed]);
  }
  for (const [command, floor, boxed] of rows) {
    const overhead = pct(boxed, 50) - pct(floor, 50);
    console.log(
      `  ${command.padEnd(7)} unconfined (floor): ${fmt(floor)} | bwrap: ${fmt(boxed)} | overhead p50 ${overhead.toFixed(1)} ms (target <= ${TARGET_OVERHEAD_P50_MS} ms: ${overhead <= TARGET_OVERHEAD_P50_MS ? 'met' : 'MISSED'})`,
    );
  }
  console.log(
    `  gateway process RSS: ${rss0} MB before, ${rssMb(process.pid)} MB after ${rows.length * calls * 2} calls (the sandbox keeps no process between calls)`,
  );
  await none.close();
  await bwrap.close();
  rmSync(workspace, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
