/**
 * How long each CLI verb takes, start to exit, as a user runs it: `node bin/switchboard.js <verb>`
 * spawned --runs times per verb (one at a time): p50 and p95 of the wall time, and p50 of the CPU time the
 * process itself reports at exit (user + system: what the verb costs, apart from waiting for a busy
 * machine's cores), in milliseconds, beside the floor (`node -e 0`: Node itself; `--version`: Node
 * plus the CLI's entry).
 *
 *   npm run build && node dist/bench/cli.js [--runs 10] [--verb "moat classify ls"]...
 *
 * `approvals list` and `status` ask a port where nothing listens (they load, try, and exit 1):
 * what is measured is what the verb loads, not a gateway's answer. doctor runs on an empty
 * configuration in a fresh data folder (no Redis, no Postgres: PGlite, the sandbox probe).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../kernel/paths.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' }, verb: { type: 'string', multiple: true } } });
const runs = Number(values.runs);
const bin = join(packageRoot, 'bin', 'switchboard.js');
const data = mkdtempSync(join(tmpdir(), 'sb-bench-cli-'));
const env = {
  PATH: process.env.PATH ?? '',
  SWITCHBOARD_DATA: data,
  SWITCHBOARD_URL: 'http://127.0.0.1:9',
  SWITCHBOARD_OPERATOR_KEY: 'bench-operator-key',
};

const FLOOR: Array<[string, string[]]> = [
  ['node -e 0', ['-e', '0']],
  ['--version', [bin, '--version']],
];
const VERBS = values.verb ?? ['--help', 'init --help', 'moat classify ls', 'doctor --json', 'approvals list', 'status'];

/** A verb line split as a shell would for these simple cases: words, and "quoted words". */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

// Each measured process writes its own CPU time to fd 3 as it exits.
const CPU_REPORT = `data:text/javascript,${encodeURIComponent(
  "import{writeSync}from'node:fs';process.on('exit',()=>{const u=process.cpuUsage();try{writeSync(3,String((u.user+u.system)/1000))}catch{}})",
)}`;

function measure(args: string[]): { p50: number; p95: number; cpu50: number; codes: Set<number | null> } {
  const ms: number[] = [];
  const cpu: number[] = [];
  const codes = new Set<number | null>();
  const run = () => spawnSync(process.execPath, ['--import', CPU_REPORT, ...args], { env, stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
  // One warm-up run: the first spawn pays for the disk cache.
  run();
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const r = run();
    ms.push(performance.now() - t0);
    cpu.push(Number(r.output[3]?.toString() || Number.NaN));
    codes.add(r.status);
  }
  const at = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;
  return { p50: at(ms, 0.5), p95: at(ms, 0.95), cpu50: at(cpu, 0.5), codes };
}

const rows: string[][] = [];
let floorCpu = Number.NaN;
// CPU against `node -e 0`'s, in the same run (the target for verbs that do not start the gateway: at most 5×).
const ratio = (cpu: number) => `${(cpu / floorCpu).toFixed(1)}×`;
for (const [name, args] of FLOOR) {
  const r = measure(args);
  if (Number.isNaN(floorCpu)) floorCpu = r.cpu50;
  rows.push([`${name} (floor)`, r.p50.toFixed(0), r.p95.toFixed(0), r.cpu50.toFixed(0), ratio(r.cpu50), [...r.codes].join(',')]);
}
for (const verb of VERBS) {
  const r = measure([bin, ...words(verb)]);
  rows.push([verb, r.p50.toFixed(0), r.p95.toFixed(0), r.cpu50.toFixed(0), ratio(r.cpu50), [...r.codes].join(',')]);
}
rmSync(data, { recursive: true, force: true });

const head = ['verb', 'wall p50 ms', 'wall p95 ms', 'cpu p50 ms', 'cpu / node -e 0', 'exit'];
const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
process.stdout.write(
  `${runs} runs per verb, one at a time; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores\n${line(head)}\n${rows.map(line).join('\n')}\n`,
);
